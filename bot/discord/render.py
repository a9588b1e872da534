"""A question as a Discord message with its controls, and what that message becomes once it ends. Pure: no I/O.

Agent text is escaped so that it shows literally (no markdown, no mention markup), and every body carries
`allowed_mentions: {"parse": []}`, so nothing the bot sends pings anyone. A message holds at most 2,000 characters:
each piece has a budget, and a long plan or detail goes before the question in messages of its own (or, when that
would take more than a few, in an attached file). Several questions in one request are asked one by one in the same
message, the answers so far above the current one.

Controls, by question: up to 5 options are buttons (label = the option's text, cut at 80); more are a string select;
multi-select is a select with `max_values` ≥ 2 and a Submit button; "Other…" (or "Answer…", or "Request changes…"
for a plan review) opens a modal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.channels.reject import words_label as reject_words_label
from bot.channels.words import current_question
from bot.discord.errors import DiscordErrorCode
from bot.errors import HandraiseError
from bot.questions.approvals import progress
from bot.store.records import QuestionRecord
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

MAX_TEXT = 2000
PART_TEXT = 1900
MAX_PARTS = 4
"""Messages a long detail may take before the question; a longer one is attached as a file instead."""
DETAIL_INLINE = 600
"""A detail up to this many characters (escaped and quoted) shows in the question message; a longer one goes before."""
MAX_BUTTONS = 5
MAX_OPTIONS = 25
MAX_QUESTIONS = 10
BUTTON_LABEL = 80
SELECT_TEXT = 100
MODAL_TITLE = 45
MAX_WORDS = 4000
ELLIPSIS = "…"
NO_PINGS: dict[str, Any] = {"parse": []}
EPHEMERAL = 64
PRIMARY, SECONDARY, SUCCESS = 1, 2, 3


class RenderError(HandraiseError, ValueError):
    """The request cannot be shown in Discord: too many questions, or a question with too many options."""

    code = DiscordErrorCode.RENDER


@dataclass(frozen=True)
class DiscordMessage:
    """A message body (`content`, `components`) and what goes before it: `parts` (texts) or an attached `file`."""

    content: str
    components: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    parts: tuple[str, ...] = ()
    file: tuple[str, bytes] | None = None

    def body(self) -> dict[str, Any]:
        return {"content": self.content, "components": self.components, "allowed_mentions": NO_PINGS}


# --- text ----------------------------------------------------------------------------------------------------------

_MARKUP = re.compile(r"([\\*_~`|<>#\[\]@])")


def escape(text: str) -> str:
    """Agent text shown literally: markdown and mention markup (`<@…>`, `@everyone`) escaped."""
    return _MARKUP.sub(r"\\\1", text)


def clip(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut with "…"."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def escaped(text: str, limit: int) -> str:
    """Escaped `text` within `limit` characters (cut before escaping, never inside an escape)."""
    out = escape(text)
    if len(out) <= limit:
        return out
    kept, used = [], 0
    for char in text:
        piece = escape(char)
        if used + len(piece) > limit - 1:
            break
        kept.append(piece)
        used += len(piece)
    return "".join(kept).rstrip() + ELLIPSIS


def one_line(text: str) -> str:
    return " ".join(text.split())


def timestamp(when: datetime) -> str:
    """Discord's own time markup: each reader sees it in their time zone."""
    return f"<t:{int(when.timestamp())}:f>"


def person(by: str | None, via: str | None) -> str:
    """A Discord user as a mention (shown with their name; `allowed_mentions` keeps it from pinging); anyone else
    by name and the channel they answered in."""
    if by and via == "discord" and by.isdigit():
        return f"<@{by}>"
    name = escaped(by, 100) if by else "someone"
    return f"{name} via {escaped(via, 30)}" if via and via != "discord" else name


# --- the question --------------------------------------------------------------------------------------------------


def _check(record: QuestionRecord) -> None:
    if len(record.questions) > MAX_QUESTIONS:
        raise RenderError(f"{len(record.questions)} questions do not fit one message; ask at most {MAX_QUESTIONS}")
    for question in record.questions:
        if len(question.options or ()) > MAX_OPTIONS:
            raise RenderError(
                f"question {question.id} has {len(question.options or ())} options; a Discord select holds at most "
                f"{MAX_OPTIONS}, so ask with fewer options (or split the question)"
            )


def is_request_changes(question: AskUserQuestionItem, label: str) -> bool:
    """Whether `label` is a plan review's "Request changes" option, or its reject option (e.g. "Deny…"): its button
    opens the modal instead."""
    if question.reject_label is not None:
        return label == question.reject_label
    return question.intent is not None and label != question.intent.approve and "change" in label.casefold()


def words_label(question: AskUserQuestionItem) -> str:
    if question.reject_label is not None:
        return question.reject_label
    if question.intent is not None:
        return "Request changes…"
    return "Other…" if question.options else "Answer…"


def has_long_detail(question: AskUserQuestionItem) -> bool:
    return len(_quoted(question.detail or "")) > DETAIL_INLINE


def _quoted(detail: str) -> str:
    return "\n".join(f"> {line}" for line in escape(detail.strip("\n")).split("\n"))


def _chunks(text: str, limit: int) -> list[str]:
    """`text` escaped, in pieces of at most `limit` characters, split at line ends where it can be."""
    chunks: list[str] = []
    current = ""
    for line in text.split("\n"):
        pieces = (
            [escape(line)]
            if len(escape(line)) <= limit
            else [escaped(line[i : i + limit // 2], limit) for i in range(0, len(line), limit // 2)]
        )
        for piece in pieces:
            if current and len(current) + 1 + len(piece) > limit:
                chunks.append(current)
                current = piece
            else:
                current = f"{current}\n{piece}" if current else piece
    if current:
        chunks.append(current)
    return chunks


def detail_parts(record: QuestionRecord) -> tuple[tuple[str, ...], tuple[str, bytes] | None]:
    """What goes before the question for details too long for it: messages of under 2,000 characters, or (when
    they would be more than MAX_PARTS) one short message with the details attached as a file."""
    long = [(index, q) for index, q in enumerate(record.questions) if has_long_detail(q)]
    if not long:
        return (), None
    batch = len(record.questions) > 1
    parts: list[str] = []
    for index, question in long:
        title = escaped(one_line(question.header or question.question), 120)
        lead = f"Question {index + 1}: " if batch else ""
        chunks = _chunks((question.detail or "").strip("\n"), PART_TEXT - 200)
        for number, chunk in enumerate(chunks, start=1):
            parts.append(f"📄 **{lead}{title}** ({number}/{len(chunks)})\n{chunk}")
    if len(parts) <= MAX_PARTS:
        return tuple(parts), None
    text = "\n\n".join(f"# {q.header or q.question}\n\n{(q.detail or '').strip()}" for _, q in long)
    size = len(text)
    return (f"📄 The detail ({size} characters) is in the attached file.",), ("detail.md", text.encode())


def _head(record: QuestionRecord, index: int) -> str:
    agent = record.agent.name or record.agent.id if record.agent is not None else None
    head = f"❓ **{escaped(agent, 80)}** asks" if agent else "❓ **Question**"
    if len(record.questions) > 1:
        head += f" · {index + 1} of {len(record.questions)}"
    return head


def answer_text(item: AskUserQuestionAnswerItem, budget: int = 300) -> str:
    """One answer: the chosen labels in bold and the words in quotes; "skipped" for neither."""
    chosen = ", ".join(f"**{escaped(label, max(20, budget // 3))}**" for label in item.selected[:10])
    if len(item.selected) > 10:
        chosen += f" and {len(item.selected) - 10} more"
    words = f"“{escaped(item.custom.strip(), budget)}”" if item.custom and item.custom.strip() else ""
    return " + ".join(part for part in (chosen, words) if part) or "*skipped*"


def _so_far(record: QuestionRecord) -> list[str]:
    lines = []
    for index, question in enumerate(record.questions):
        item = record.partial.get(question.id)
        if item is not None:
            title = escaped(one_line(question.header or question.question), 60)
            lines.append(f"✓ {index + 1}. *{title}* — {answer_text(item, 60)}")
    return lines[-4:]


def _options_text(question: AskUserQuestionItem) -> str | None:
    """Numbered options with descriptions, when the controls cannot show them in full."""
    options = question.options or []
    described = any(option.description and option.description.strip() for option in options)
    if not described and all(len(option.label) <= BUTTON_LABEL for option in options):
        return None
    lines = []
    for number, option in enumerate(options, start=1):
        line = f"{number}. **{escaped(option.label, 150)}**"
        if option.description and option.description.strip():
            line += f" — {escaped(one_line(option.description), 150)}"
        lines.append(line)
    return clip("\n".join(lines), 400)


def _button(custom_id: str, label: str, style: int = SECONDARY) -> dict[str, Any]:
    return {"type": 2, "style": style, "label": clip(label, BUTTON_LABEL), "custom_id": custom_id}


def _row(*components: dict[str, Any]) -> dict[str, Any]:
    return {"type": 1, "components": list(components)}


def _select(custom_id: str, question: AskUserQuestionItem, *, multi: bool) -> dict[str, Any]:
    options = question.options or []
    shown = []
    for number, option in enumerate(options):
        entry: dict[str, Any] = {"label": clip(option.label, SELECT_TEXT), "value": str(number)}
        if option.description and option.description.strip():
            entry["description"] = clip(one_line(option.description), SELECT_TEXT)
        shown.append(entry)
    placeholder = "Choose the options that apply, then Submit" if multi else "Choose an option"
    return {
        "type": 3,
        "custom_id": custom_id,
        "options": shown,
        "min_values": 1,
        "max_values": len(options) if multi else 1,
        "placeholder": placeholder,
    }


def controls(question: AskUserQuestionItem, index: int) -> list[dict[str, Any]]:
    """The action rows for question `index`: buttons, a select, Submit, and the button that opens the modal."""
    options = question.options or []
    words = _button(f"hr:w:{index}", words_label(question))
    if question.multi_select and len(options) >= 2:
        return [
            _row(_select(f"hr:m:{index}", question, multi=True)),
            _row(_button(f"hr:u:{index}", "Submit", PRIMARY), words),
        ]
    shown = [
        (number, option) for number, option in enumerate(options) if not is_request_changes(question, option.label)
    ]
    if not shown:
        return [_row(words)]
    if len(shown) > MAX_BUTTONS:
        return [_row(_select(f"hr:s:{index}", question, multi=False)), _row(words)]
    buttons = []
    for number, option in shown:
        approve = question.intent is not None and option.label == question.intent.approve
        buttons.append(_button(f"hr:p:{index}:{number}", option.label, SUCCESS if approve else SECONDARY))
    return [_row(*buttons), _row(words)]


def render_question(record: QuestionRecord, *, note: str | None = None) -> DiscordMessage:
    """The message asking `record`'s current question, with its controls. Raises RenderError when the request
    cannot be shown in Discord."""
    _check(record)
    index = current_question(record)
    question = record.questions[index]
    parts, file = detail_parts(record)
    blocks = [_head(record, index), *_so_far(record)]
    asked = f"**{escaped(one_line(question.header), 120)}**\n" if question.header else ""
    blocks.append(asked + escaped(question.question.strip(), 500))
    if options := _options_text(question):
        blocks.append(options)
    if question.detail and question.detail.strip():
        if has_long_detail(question):
            where = "attached above" if file is not None else "in the message above"
            blocks.append(f"*📄 The {'plan' if question.intent else 'detail'} is {where}.*")
        else:
            blocks.append(_quoted(question.detail))
    if note:
        blocks.append(clip(note, 300))  # our own markup (approvals so far), never agent text
    content = "\n\n".join(blocks)
    if len(content) > MAX_TEXT:  # every piece at its budget at once: the answers so far give way first
        content = clip("\n\n".join(block for block in blocks if block[:1] != "✓"), MAX_TEXT)
    return DiscordMessage(content, controls(question, index), parts, file)


def render_modal(question: AskUserQuestionItem, index: int, message_id: str) -> dict[str, Any]:
    """The modal for words: opened as the first callback of the press (a modal cannot follow a deferral)."""
    reject = question.reject_label
    title = "Request changes" if question.intent is not None else "Your answer"
    label = "What should change?" if question.intent is not None else "Your answer"
    if reject is not None:  # "Deny…": the words are the reason, and none is a plain deny
        title, label = reject, reject_words_label(reject)
    text_input = {
        "type": 4,
        "custom_id": "words",
        "style": 2,
        "label": clip(label, MODAL_TITLE),
        "placeholder": clip(one_line(question.header or question.question), 100),
        "min_length": 0 if reject is not None else 1,
        "max_length": MAX_WORDS,
        "required": reject is None,
    }
    return {
        "custom_id": f"hr:x:{index}:{message_id}",
        "title": clip(title, MODAL_TITLE),
        "components": [_row(text_input)],
    }


# --- the outcome ---------------------------------------------------------------------------------------------------


def answerer(record: QuestionRecord) -> str:
    if record.status == "answered" and len(record.approvals) > 1:
        return ", ".join(person(approval.by, approval.via) for approval in record.approvals)
    return person(record.answered_by, record.answered_via)


_STATUS = {"cancelled": "🚫 **Cancelled**", "expired": "⌛ **Expired**", "failed": "⚠️ **Failed**"}


def status_line(record: QuestionRecord) -> str:
    when = f" · {timestamp(record.resolved_at)}" if record.resolved_at else ""
    if record.status == "answered":
        return f"✅ **Answered** by {answerer(record)}{when}"
    why = f" — {escaped(record.error_message, 300)}" if record.error_message else ""
    return f"{_STATUS.get(record.status, escape(record.status))}{when}{why}"


def render_outcome(record: QuestionRecord) -> DiscordMessage:
    """The message once `record` ended: each question with its answer, who and when (or that it was cancelled or
    expired); no controls."""
    agent = record.agent.name or record.agent.id if record.agent is not None else None
    blocks = [f"❓ **{escaped(agent, 80)}** asked" if agent else "❓ **Question**"]
    answers = {item.id: item for item in record.answer.answers} if record.answer is not None else {}
    budget = max(80, 1200 // len(record.questions))
    for index, question in enumerate(record.questions):
        number = f"{index + 1}. " if len(record.questions) > 1 else ""
        line = f"{number}*{escaped(one_line(question.header or question.question), budget)}*"
        if (item := answers.get(question.id)) is not None:
            line += f"\n→ {answer_text(item, budget)}"
        blocks.append(line)
    blocks.append(status_line(record))
    content = "\n\n".join(blocks)
    return DiscordMessage(clip(content, MAX_TEXT))


def render_reminder(record: QuestionRecord, responders: Sequence[str], count: int) -> str:
    shown = " ".join(f"<@{who}>" if who.isdigit() else f"<@&{who[5:]}>" for who in responders[:10])
    asked = escaped(one_line(record.questions[current_question(record)].question), 300)
    return (
        f"⏰ {shown + ' ' if shown else ''}Reminder {count}: this question is still waiting for an answer — “{asked}”"
    )


def render_note(headline: str, detail: str | None) -> str:
    """A status note ("deploy-bot: finished" and the agent's words under it), escaped as a question is."""
    text = f"📣 {escaped(headline, 300)}"
    return text + (f"\n{escaped(detail, 1000)}" if detail else "")


# --- what people are told (ephemeral) ------------------------------------------------------------------------------


def refusal(responders: Sequence[str]) -> str:
    shown = [f"<@{who}>" if who.isdigit() else f"members of <@&{who[5:]}>" for who in responders[:5]]
    more = f" and {len(responders) - 5} more" if len(responders) > 5 else ""
    who = ", ".join(shown) + more if shown else "the people this question was routed to"
    return f"Only {who} may answer this question. Nothing was changed."


def ended_notice(record: QuestionRecord | None) -> str:
    if record is None:
        return "This question is no longer open in handraise. Nothing was changed."
    when = f" {timestamp(record.resolved_at)}" if record.resolved_at else ""
    if record.status == "answered":
        return f"This question was already answered by {answerer(record)}{when}. Nothing was changed."
    return f"This question is closed: it was {record.status}{when}. Nothing was changed."


def approval_note(record: QuestionRecord, needed: int) -> str:
    return "☑️ " + progress(record, needed, name=lambda approval: person(approval.by, approval.via))


def ephemeral(text: str) -> dict[str, Any]:
    """An interaction callback only the presser sees (type 4, flags 64)."""
    return {"type": 4, "data": {"content": clip(text, MAX_TEXT), "flags": EPHEMERAL, "allowed_mentions": NO_PINGS}}
