"""A question as a Telegram message with an inline keyboard, and what that message becomes once it ends. Pure: no I/O.

Text is Telegram HTML; every piece of agent text is escaped (`&`, `<`, `>`) so it shows literally and cannot link,
mention or format. A message holds at most 4096 characters: every piece has a budget, a long plan or detail goes in
messages of its own sent before the question (`parts`), and what still does not fit ends with "… (N more
characters)". Several questions in one request are asked one by one in the same message: the current question is
the first without an answer yet, with the answers so far above it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bot.channels.reject import bare
from bot.errors import HandraiseError
from bot.questions.approvals import progress
from bot.store.records import QuestionRecord
from bot.telegram import keys
from bot.telegram.errors import TelegramErrorCode
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

MAX_TEXT = 4096
"""Telegram's limit for a message's text (counted here in UTF-16 units of the HTML, never fewer than Telegram's)."""
MAX_QUESTIONS = 10
MAX_PARTS = 4
"""Messages a long detail may take before the question; beyond them it is cut."""
DETAIL_INLINE = 1500
"""A detail up to this many units shows in the question message; a longer one goes in parts before it."""
PART_TEXT = 3800
OPTIONS_TEXT = 600
"""Room for the numbered list of options (with descriptions) in the question message."""
SO_FAR_SHOWN = 4
"""Answers so far shown above the current question of a request; earlier ones are counted."""
BUTTON_TEXT = 48
"""A button shows this much of a label; the full labels are then listed in the text."""
MAX_ALERT = 200
"""Telegram's limit for the text of an answerCallbackQuery alert."""

ELLIPSIS = "…"
TICK = "✓"

Button = tuple[str, str]
"""An inline button: its text and its callback_data."""


class RenderError(HandraiseError, ValueError):
    """The request cannot be shown in Telegram: too many questions, or a question with too many options."""

    code = TelegramErrorCode.RENDER


@dataclass(frozen=True)
class TelegramMessage:
    """What sendMessage / editMessageText take: HTML `text` and the inline `keyboard` (rows of buttons; empty for
    none). `parts` are messages sent once, before the question, holding details too long for it."""

    text: str
    keyboard: list[list[Button]] = field(default_factory=list[list[Button]])
    parts: tuple[str, ...] = ()


# --- text primitives -------------------------------------------------------------------------------------------------


def units(text: str) -> int:
    """Length as Telegram counts it: UTF-16 code units (an emoji outside the BMP counts twice)."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def escape(text: str) -> str:
    """Escape what Telegram HTML treats as markup, so agent text shows literally."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_clipped(text: str, limit: int) -> str:
    """Escaped `text` within `limit` units, cut on a character (never inside an entity) and ended with "…"."""
    if units(escaped := escape(text)) <= limit:
        return escaped
    budget, kept = limit - 1, []
    for char in text:
        piece = escape(char)
        if units(piece) > budget:
            break
        kept.append(piece)
        budget -= units(piece)
    return "".join(kept).rstrip() + ELLIPSIS


_CODE = re.compile(r"`([^`\n]+)`")


def code_spans(escaped: str) -> str:
    """Markdown `code` in escaped agent text shown as code (agents write markdown); the text stays escaped."""
    return _CODE.sub(r"<code>\1</code>", escaped)


def _fitting_code(chunk: str) -> str:
    converted = code_spans(chunk)
    return converted if units(converted) <= PART_TEXT else chunk


def one_line(text: str) -> str:
    return " ".join(text.split())


def moment(when: datetime) -> str:
    return f"{when:%Y-%m-%d %H:%M} UTC"


def person(by: str | None, via: str | None, names: Mapping[str, str]) -> str:
    """A Telegram user as a mention link with their name (their id when the name is unknown); anyone else by name
    and the channel they answered in."""
    if by and via == "telegram" and by.isdigit():
        return f'<a href="tg://user?id={by}">{escape_clipped(names.get(by) or f"user {by}", 64)}</a>'
    name = escape_clipped(by, 100) if by else "someone"
    return f"{name} via {escape_clipped(via, 30)}" if via and via != "telegram" else name


# --- the question ----------------------------------------------------------------------------------------------------


def current_question(record: QuestionRecord) -> int:
    """The position of the question being asked: the first with no answer kept yet."""
    for index, question in enumerate(record.questions):
        if question.id not in record.partial:
            return index
    return len(record.questions) - 1


def write_label(question: AskUserQuestionItem) -> str:
    if question.reject_label is not None:
        return question.reject_label
    if question.intent is not None:
        return "✏️ Request changes in words…"
    return "✏️ Other…" if question.options else "✏️ Answer…"


def _check(record: QuestionRecord) -> None:
    if len(record.questions) > MAX_QUESTIONS:
        raise RenderError(
            f"{len(record.questions)} questions do not fit one Telegram message; ask at most {MAX_QUESTIONS} at once"
        )
    for question in record.questions:
        if len(question.options or ()) > keys.MAX_OPTIONS:
            raise RenderError(
                f"question {question.id} has {len(question.options or ())} options; a Telegram keyboard holds at "
                f"most {keys.MAX_OPTIONS}, so ask with fewer options (or split the question)"
            )


def _pieces(line: str, limit: int) -> list[str]:
    """`line` escaped, in pieces of at most `limit` units (one enormous line is cut, never inside an entity)."""
    pieces, current, used = [], [], 0
    for char in line:
        piece = escape(char)
        if used + units(piece) > limit:
            pieces.append("".join(current))
            current, used = [], 0
        current.append(piece)
        used += units(piece)
    return [*pieces, "".join(current)]


def _detail_parts(question: AskUserQuestionItem) -> list[str]:
    """A detail too long for the question message, as texts of at most PART_TEXT units, split at line ends."""
    chunks: list[str] = []
    current = ""
    for line in (question.detail or "").strip("\n").split("\n"):
        for piece in _pieces(line, PART_TEXT):
            if current and units(current) + 1 + units(piece) > PART_TEXT:
                chunks.append(current)
                current = piece
            else:
                current = f"{current}\n{piece}" if current else piece
    if current:
        chunks.append(current)
    if len(chunks) > MAX_PARTS:
        missing = sum(units(chunk) for chunk in chunks[MAX_PARTS:])
        chunks = chunks[:MAX_PARTS]
        chunks[-1] += f"\n{ELLIPSIS} ({missing} more characters)"
    return chunks


def has_long_detail(question: AskUserQuestionItem) -> bool:
    return units(code_spans(escape((question.detail or "").strip("\n")))) > DETAIL_INLINE


def detail_parts(record: QuestionRecord) -> tuple[str, ...]:
    """The messages sent before the question for details too long to show in it."""
    batch = len(record.questions) > 1
    parts: list[str] = []
    for index, question in enumerate(record.questions):
        if not has_long_detail(question):
            continue
        chunks = _detail_parts(question)
        title = escape_clipped(one_line(question.header or question.question), 120)
        lead = f"Question {index + 1}: " if batch else ""
        for number, chunk in enumerate(chunks, start=1):
            parts.append(
                f"📄 <b>{lead}{title}</b> ({number}/{len(chunks)})\n<blockquote>{_fitting_code(chunk)}</blockquote>"
            )
    return tuple(parts)


def _lists_options(question: AskUserQuestionItem) -> bool:
    """Whether the buttons alone cannot show the options in full (descriptions, long labels)."""
    options = question.options or []
    described = any(option.description and option.description.strip() for option in options)
    return described or any(len(option.label) > BUTTON_TEXT for option in options)


def _options_text(question: AskUserQuestionItem) -> str | None:
    """Numbered options with descriptions, within OPTIONS_TEXT units; the rest are counted."""
    if not _lists_options(question):
        return None
    options = question.options or []
    shown: list[str] = []
    for number, option in enumerate(options, start=1):
        line = f"{number}. <b>{escape_clipped(option.label, 200)}</b>"
        if option.description and option.description.strip():
            line += f" — {escape_clipped(one_line(option.description), 200)}"
        if sum(units(kept) + 1 for kept in shown) + units(line) > OPTIONS_TEXT - 40:
            shown.append(f"{ELLIPSIS} and {len(options) - len(shown)} more on the buttons")
            break
        shown.append(line)
    return "\n".join(shown)


def _asked_head(record: QuestionRecord, index: int) -> str:
    agent = record.agent.name or record.agent.id if record.agent is not None else None
    head = f"❓ <b>{escape_clipped(agent, 80)}</b> asks" if agent else "❓ <b>Question</b>"
    if len(record.questions) > 1:
        head += f" · {index + 1} of {len(record.questions)}"
    return head


def _so_far(record: QuestionRecord) -> list[str]:
    lines = []
    for index, question in enumerate(record.questions):
        item = record.partial.get(question.id)
        if item is None:
            continue
        title = escape_clipped(one_line(question.header or question.question), 60)
        lines.append(f"{TICK} {index + 1}. <i>{title}</i> — {answer_text(item, 60)}")
    if len(lines) > SO_FAR_SHOWN:
        earlier = len(lines) - SO_FAR_SHOWN + 1
        lines = [f"{TICK} {earlier} earlier questions answered", *lines[-(SO_FAR_SHOWN - 1) :]]
    return lines


def _buttons(question: AskUserQuestionItem, index: int, mask: int) -> list[list[Button]]:
    options = question.options or []
    rows: list[list[Button]] = []
    numbered = _lists_options(question)
    for number, option in enumerate(options):
        label = option.label if not numbered else f"{number + 1}. {option.label}"
        shown = label if len(label) <= BUTTON_TEXT else label[: BUTTON_TEXT - 1].rstrip() + ELLIPSIS
        if question.multi_select:
            ticked = bool(mask >> number & 1)
            rows.append([(f"{TICK} {shown}" if ticked else shown, keys.toggle(index, number, mask))])
        elif option.label == question.reject_label:
            # The reject option ("Deny…") is the words path itself, where the option stands: no second button.
            rows.append([(shown, keys.write(index))])
        else:
            approve = question.intent is not None and option.label == question.intent.approve
            rows.append([(f"✅ {shown}" if approve else shown, keys.pick(index, number))])
    if question.multi_select and options:
        count = len(keys.selected(mask, len(options)))
        rows.append([(f"Submit ({count} chosen)" if count else "Submit (none chosen)", keys.submit(index, mask))])
    if question.reject_label is None or question.multi_select:
        rows.append([(write_label(question), keys.write(index))])
    return rows


def render_question(
    record: QuestionRecord, *, mask: int = 0, note: str | None = None, names: Mapping[str, str] | None = None
) -> TelegramMessage:
    """The message asking `record`'s current question; `mask` is the multi-select selection shown, `note` a line
    such as the approvals so far. Raises RenderError when the request cannot be shown in Telegram."""
    _check(record)
    names = names or {}
    index = current_question(record)
    question = record.questions[index]
    blocks = [_asked_head(record, index)]
    blocks += _so_far(record)
    asked = f"<b>{escape_clipped(one_line(question.header), 120)}</b>\n" if question.header else ""
    blocks.append(asked + escape_clipped(question.question.strip(), 700))
    if options := _options_text(question):
        blocks.append(options)
    if question.detail and question.detail.strip():
        if has_long_detail(question):
            blocks.append("<i>📄 The detail is in the message above.</i>")
        else:
            blocks.append(f"<blockquote expandable>{code_spans(escape(question.detail.strip(chr(10))))}</blockquote>")
    if question.multi_select and question.options:
        hint = "Tick the options that apply, then Submit · or reply to this message in your own words"
    elif question.options and question.reject_label is not None:
        hint = f"Tap an option · {question.reject_label} asks for your reason (optional)"
    elif question.options:
        hint = "Tap an option · or reply to this message in your own words"
    else:
        hint = "Reply to this message with your answer"
    blocks.append(f"<i>{hint}</i>")
    if note:
        blocks.append(escape_clipped(note, 300))
    text = "\n\n".join(blocks)
    assert units(text) <= MAX_TEXT, "every piece has a budget that keeps the message within Telegram's limit"
    return TelegramMessage(text, _buttons(question, index, mask), detail_parts(record))


# --- the outcome -----------------------------------------------------------------------------------------------------


def answer_text(item: AskUserQuestionAnswerItem, budget: int = 1000) -> str:
    """One answer in HTML: the chosen labels in bold and the words in quotes; "skipped" for neither."""
    chosen = ", ".join(f"<b>{escape_clipped(label, max(20, budget // 3))}</b>" for label in item.selected[:20])
    if len(item.selected) > 20:
        chosen += f" and {len(item.selected) - 20} more"
    words = f"“{escape_clipped(item.custom.strip(), budget)}”" if item.custom and item.custom.strip() else ""
    return " + ".join(part for part in (chosen, words) if part) or "<i>skipped</i>"


def answerer(record: QuestionRecord, names: Mapping[str, str]) -> str:
    """Who resolved `record`: everyone who approved, when it took several."""
    if record.status == "answered" and len(record.approvals) > 1:
        return ", ".join(person(approval.by, approval.via, names) for approval in record.approvals)
    return person(record.answered_by, record.answered_via, names)


_STATUS = {
    "cancelled": "🚫 <b>Cancelled</b>",
    "expired": "⌛ <b>Expired</b>",
    "failed": "⚠️ <b>Failed</b>",
    "pending": "💬 <b>Waiting for an answer</b>",
}


def status_line(record: QuestionRecord, names: Mapping[str, str]) -> str:
    when = f" · {moment(record.resolved_at)}" if record.resolved_at else ""
    if record.status == "answered":
        return f"✅ <b>Answered</b> by {answerer(record, names)}{when}"
    why = f" — {escape_clipped(record.error_message, 300)}" if record.error_message else ""
    return f"{_STATUS.get(record.status, escape(record.status))}{when}{why}"


def render_outcome(record: QuestionRecord, names: Mapping[str, str] | None = None) -> TelegramMessage:
    """The message once `record` ended: each question with its answer (or how it ended), who and when; no buttons."""
    names = names or {}
    agent = record.agent.name or record.agent.id if record.agent is not None else None
    blocks = [f"❓ <b>{escape_clipped(agent, 80)}</b> asked" if agent else "❓ <b>Question</b>"]
    answers = {item.id: item for item in record.answer.answers} if record.answer is not None else {}
    per_question = max(120, 2400 // len(record.questions))
    for index, question in enumerate(record.questions):
        number = f"{index + 1}. " if len(record.questions) > 1 else ""
        asked = escape_clipped(one_line(question.header or question.question), min(300, per_question))
        line = f"{number}<i>{asked}</i>"
        if len(record.questions) == 1 and question.detail and question.detail.strip() and not has_long_detail(question):
            # What was approved (or answered) stays readable beside the answer, as it was asked.
            line += f"\n<blockquote expandable>{code_spans(escape(question.detail.strip(chr(10))))}</blockquote>"
        if (item := answers.get(question.id)) is not None:
            line += f"\n→ {answer_text(item, per_question)}"
        blocks.append(line)
    blocks.append(status_line(record, names))
    return TelegramMessage("\n\n".join(blocks))


def render_reminder(record: QuestionRecord, responders: Sequence[str], count: int) -> str:
    """A reminder sent as a reply to the question, mentioning the responders (by id; their names are theirs)."""
    shown = " ".join(f'<a href="tg://user?id={who}">👤</a>' for who in responders[:20] if who.isdigit())
    asked = escape_clipped(one_line(record.questions[current_question(record)].question), 300)
    return (
        f"⏰ {shown + ' ' if shown else ''}Reminder {count}: this question is still waiting for an answer — “{asked}”"
    )


def prompt_text(record: QuestionRecord, index: int, message_id: int) -> str:
    """The ForceReply prompt for words. Its last line names the question message and the question's position, so
    a reply to the prompt finds its question after a restart too (it is read back only from the bot's own message)."""
    question = record.questions[index]
    asked = escape_clipped(one_line(question.header or question.question), 300)
    ref = f"\nref {message_id}/{index + 1}"
    if (reject := question.reject_label) is not None and not question.multi_select:
        word = escape(bare(reject))
        return (
            f"✏️ {escape(reject)} <i>{asked}</i>\nReply to this message with your reason, which the agent reads, "
            f"or with just “{word}” to {word.casefold()} without one.{ref}"
        )
    what = "the changes you want" if question.intent is not None else "your answer"
    return f"✏️ Reply to this message with {what} to: <i>{asked}</i>{ref}"


def prompt_placeholder(question: AskUserQuestionItem) -> str:
    """The grey text in the reply box the prompt opens."""
    return "Your reason (optional)" if question.reject_label is not None else "Your answer"


# --- what people are told ---------------------------------------------------------------------------------------------


def clip_alert(text: str) -> str:
    """An alert's text within Telegram's 200 characters (alerts are plain text: no escaping)."""
    return text if len(text) <= MAX_ALERT else text[: MAX_ALERT - 1].rstrip() + ELLIPSIS


def refusal(responders: Sequence[str], names: Mapping[str, str]) -> str:
    """Plain text for someone not on the route's responders list."""
    shown = [names.get(who) or f"user {who}" for who in responders[:5]]
    more = f" and {len(responders) - 5} more" if len(responders) > 5 else ""
    who = ", ".join(shown) + more if shown else "the people this question was routed to"
    return clip_alert(f"Only {who} may answer this question. Nothing was changed.")


def ended_notice(record: QuestionRecord | None, names: Mapping[str, str]) -> str:
    """Plain text for a late reply: answered by whom and when, or how the question ended."""
    if record is None:
        return "This question is no longer open in handraise."
    when = f" at {moment(record.resolved_at)}" if record.resolved_at else ""
    if record.status == "answered":
        who = _plain_answerer(record, names)
        return clip_alert(f"This question was already answered by {who}{when}.")
    return clip_alert(f"This question is closed: it was {record.status}{when}.")


def _plain_answerer(record: QuestionRecord, names: Mapping[str, str]) -> str:
    def plain(by: str | None, via: str | None) -> str:
        name = names.get(by or "") or (f"user {by}" if by and by.isdigit() and via == "telegram" else by or "someone")
        return name if via in (None, "telegram") else f"{name} via {via}"

    if len(record.approvals) > 1:
        return ", ".join(plain(approval.by, approval.via) for approval in record.approvals)
    return plain(record.answered_by, record.answered_via)


def approval_note(record: QuestionRecord, needed: int, names: Mapping[str, str]) -> str:
    """How far the approvals have come, plain text: "☑️ 1 of 2 approvals: Alice"."""
    name: Callable[..., str] = lambda approval: names.get(approval.by) or approval.by  # noqa: E731
    return "☑️ " + progress(record, needed, name=name)
