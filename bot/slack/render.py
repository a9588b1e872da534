"""A question as a Block Kit message, and the summary that message becomes once the question ends. Pure: no I/O.

One question with a single choice is answered by one click (buttons, a radio group or a menu). Several questions in
one request, and multi-select questions, are answered with selections that Slack keeps per user in the message until
Submit. Every question offers a free-text path (Other…, Answer…, Request changes…, or a plan review's reject option
such as "Deny…") through a modal, see `modal.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from bot.errors import HandraiseError
from bot.questions.approvals import progress
from bot.slack import ids
from bot.slack.blocks import (
    ELLIPSIS,
    MAX_ACTIONS_ELEMENTS,
    MAX_BUTTON_TEXT,
    MAX_BUTTONS,
    MAX_CHECKBOX_OPTIONS,
    MAX_FALLBACK_TEXT,
    MAX_HEADER_TEXT,
    MAX_MESSAGE_BLOCKS,
    MAX_OPTION_DESCRIPTION,
    MAX_OPTION_TEXT,
    MAX_PLACEHOLDER,
    MAX_RADIO_OPTIONS,
    MAX_SECTION_TEXT,
    MAX_SELECT_OPTIONS,
    Block,
    context,
    escape_clipped,
    header,
    markdown_to_mrkdwn,
    plain,
    section,
    split_escaped,
    units,
)
from bot.slack.errors import SlackErrorCode
from bot.store.records import AgentRef, QuestionRecord
from core import AskUserQuestionItem

Control = Literal["none", "buttons", "radio", "select", "checkboxes", "multi_select"]

RECOMMENDED = "(Recommended)"
MAX_WAITING_SHOWN = 20
"""Questions listed by `/handraise` (an ephemeral message is a few thousand characters at most)."""
MARKER_ROOM = 40
"""Units kept free in each section for a "… (N more characters)" marker."""

_SLACK_ID = re.compile(r"[UWS][A-Z0-9]{2,}")


class RenderError(HandraiseError, ValueError):
    """The question cannot be shown in Slack: over 100 options, or too many questions for one message."""

    code = SlackErrorCode.RENDER


@dataclass(frozen=True)
class SlackMessage:
    """What `chat.postMessage` / `chat.update` take: notification `text` and the `blocks`."""

    text: str
    blocks: list[Block]


# --- choosing controls -----------------------------------------------------------------------------------------------


def is_batch_of(questions: Sequence[AskUserQuestionItem]) -> bool:
    """Whether a request holds several questions (answered together with Submit)."""
    return len(questions) > 1


def is_batch(record: QuestionRecord) -> bool:
    return is_batch_of(record.questions)


def answers_at_once(question: AskUserQuestionItem, *, batch: bool) -> bool:
    """A lone single-select question is answered by one click; everything else waits for Submit or the modal."""
    return not batch and not question.multi_select and bool(question.options)


def is_plan_review(question: AskUserQuestionItem, *, batch: bool) -> bool:
    """Plan review gets its own layout (approve as the primary button) when it is asked alone."""
    count = len(question.options or ())
    return question.intent is not None and answers_at_once(question, batch=batch) and count < MAX_ACTIONS_ELEMENTS


def control_for(question: AskUserQuestionItem, *, batch: bool) -> Control:
    """The element that shows `question`'s options; raises RenderError for more than Slack's menus hold."""
    count = len(question.options or ())
    if count == 0:
        return "none"
    if count > MAX_SELECT_OPTIONS:
        raise RenderError(
            f"question {question.id} has {count} options; a Slack menu holds at most {MAX_SELECT_OPTIONS}, "
            "so ask with fewer options (or split the question)"
        )
    if question.multi_select:
        return "checkboxes" if count <= MAX_CHECKBOX_OPTIONS else "multi_select"
    if is_plan_review(question, batch=batch) or (not batch and count <= MAX_BUTTONS):
        return "buttons"
    return "radio" if count <= MAX_RADIO_OPTIONS else "select"


def text_button_label(question: AskUserQuestionItem) -> str:
    """The free-text button: a plan review's reject option (e.g. "Deny…") when it names one."""
    if question.reject_label is not None:
        return question.reject_label
    if question.intent is not None:
        return "Request changes…"
    return "Other…" if question.options else "Answer…"


# --- elements --------------------------------------------------------------------------------------------------------


def option_object(question: AskUserQuestionItem, index: int) -> dict[str, Any]:
    """One option for a radio group, checkboxes or menu: clipped text, the option's position as its value."""
    option = (question.options or [])[index]
    built: dict[str, Any] = {"text": plain(option.label, MAX_OPTION_TEXT), "value": ids.option_value(index)}
    if option.description and option.description.strip():
        built["description"] = plain(option.description, MAX_OPTION_DESCRIPTION)
    return built


def choice_element(question: AskUserQuestionItem, index: int, action_id: str, control: Control) -> dict[str, Any]:
    """The radio group, checkboxes or menu for question `index` (not buttons)."""
    options = [option_object(question, o) for o in range(len(question.options or ()))]
    kind = {"radio": "radio_buttons", "select": "static_select", "multi_select": "multi_static_select"}
    element: dict[str, Any] = {"type": kind.get(control, control), "action_id": action_id, "options": options}
    if control in ("select", "multi_select"):
        element["placeholder"] = plain("Choose…" if control == "select" else "Choose any…", MAX_PLACEHOLDER)
    return element


def _button(text: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {"type": "button", "text": plain(text, MAX_BUTTON_TEXT), "action_id": action_id}
    button["value"] = value
    if style is not None:
        button["style"] = style
    return button


def _is_primary(question: AskUserQuestionItem, label: str) -> bool:
    if question.intent is not None:
        return label == question.intent.approve
    return RECOMMENDED in label


def _control_blocks(question: AskUserQuestionItem, index: int, *, batch: bool) -> list[Block]:
    control = control_for(question, batch=batch)
    other = _button(text_button_label(question), ids.text(index), "text")
    elements: list[dict[str, Any]]
    if control == "none":
        elements = [other]
    elif control == "buttons":
        elements = [
            # The reject option is the free-text button itself, where the option stands: one button, not two.
            other
            if option.label == question.reject_label
            else _button(
                option.label,
                ids.pick(index, o),
                ids.option_value(o),
                "primary" if _is_primary(question, option.label) else None,
            )
            for o, option in enumerate(question.options or ())
        ]
        if question.reject_label is None:
            elements.append(other)
    else:
        at_once = answers_at_once(question, batch=batch)
        action_id = ids.choose(index) if at_once else ids.hold(index)
        elements = [choice_element(question, index, action_id, control), other]
    return [{"type": "actions", "block_id": ids.choice_block(index), "elements": elements}]


# --- elastic content: details and option lists that get whatever room is left ---------------------------------------


@dataclass(frozen=True)
class _Elastic:
    """Sections that may be cut short; `shown[i]` is how much of `total` chunk i shows, counted in `unit`."""

    chunks: list[str]
    shown: list[int]
    total: int
    unit: str

    def blocks(self, count: int) -> list[Block]:
        kept = self.chunks[:count]
        if not kept:
            return []
        missing = self.total - sum(self.shown[:count])
        if missing > 0:
            kept[-1] = f"{kept[-1]}\n{ELLIPSIS} ({missing} more {self.unit})"
        return [section(text) for text in kept]


def _detail(question: AskUserQuestionItem) -> _Elastic | None:
    if not question.detail or not question.detail.strip():
        return None
    converted = markdown_to_mrkdwn(question.detail.strip("\n"))
    pieces = split_escaped(converted, MAX_SECTION_TEXT - MARKER_ROOM)
    return _Elastic([text for text, _ in pieces], [shown for _, shown in pieces], len(converted) + 1, "characters")


def _option_list(question: AskUserQuestionItem, control: Control) -> _Elastic | None:
    """Numbered options with their descriptions, when the control itself cannot show them in full."""
    options = question.options or []
    inline = control in ("radio", "checkboxes")
    clipped = any(units(option.label) > MAX_OPTION_TEXT for option in options)
    described = [option.description for option in options if option.description and option.description.strip()]
    if not clipped and not (described and (not inline or any(units(d) > MAX_OPTION_DESCRIPTION for d in described))):
        return None
    lines: list[str] = []
    for number, option in enumerate(options, start=1):
        line = f"*{number}.* {escape_clipped(option.label, 300)}"
        if option.description and option.description.strip():
            line += f" — {escape_clipped(option.description, 500)}"
        lines.append(line)
    chunks, shown = pack_lines(lines, MAX_SECTION_TEXT - MARKER_ROOM)
    return _Elastic(chunks, shown, len(lines), "options")


def pack_lines(lines: Sequence[str], limit: int) -> tuple[list[str], list[int]]:
    """Join already-escaped lines (each within `limit`) into as few texts of at most `limit` units as possible;
    also returns how many lines each text holds."""
    chunks: list[str] = []
    counts: list[int] = []
    for line in lines:
        if chunks and units(chunks[-1]) + 1 + units(line) <= limit:
            chunks[-1] += "\n" + line
            counts[-1] += 1
        else:
            chunks.append(line)
            counts.append(1)
    return chunks, counts


def _allocate(fixed: int, elastics: Sequence[_Elastic | None], what: str) -> list[int]:
    """Sections for each elastic part within the message's block limit: one each first, then the rest in order."""
    room = MAX_MESSAGE_BLOCKS - fixed
    if room < 0:
        raise RenderError(
            f"{what} needs {fixed} blocks but a Slack message holds {MAX_MESSAGE_BLOCKS}; ask fewer questions at once"
        )
    given = [0] * len(elastics)
    for index, part in enumerate(elastics):
        if part is not None and room > 0:
            given[index], room = 1, room - 1
    for index, part in enumerate(elastics):
        if part is not None:
            extra = min(len(part.chunks) - given[index], room)
            given[index], room = given[index] + extra, room - extra
    return given


# --- the question message --------------------------------------------------------------------------------------------


def mention(slack_id: str) -> str | None:
    """`<@U…>` for a user, `<!subteam^S…>` for a user group; None for anything that is not an id."""
    if not _SLACK_ID.fullmatch(slack_id):
        return None
    return f"<!subteam^{slack_id}>" if slack_id.startswith("S") else f"<@{slack_id}>"


def agent_name(agent: AgentRef | None) -> str | None:
    return None if agent is None else (agent.name or agent.id)


def _question_text(question: AskUserQuestionItem, index: int, *, batch: bool) -> str:
    prefix = ""
    if batch:
        title = escape_clipped(" ".join(question.header.split()), MAX_HEADER_TEXT) if question.header else ""
        prefix = f"*{index + 1}. {title}*\n" if title else f"*{index + 1}.* "
    return prefix + escape_clipped(question.question.strip() or "(no question text)", MAX_SECTION_TEXT - 200)


def _heads(record: QuestionRecord) -> list[Block]:
    first = record.questions[0]
    if not is_batch(record) and first.header and first.header.strip():
        return [header(first.header)]
    return []


def _asked_by(record: QuestionRecord) -> str | None:
    name = agent_name(record.agent)
    return f"Asked by *{escape_clipped(name, 200)}*" if name else None


def render_question(record: QuestionRecord, *, mentions: Sequence[str] = (), note: str | None = None) -> SlackMessage:
    """The message that asks `record`'s questions, mentioning `mentions` (user or user group ids).

    Raises RenderError when a question has more than 100 options or the questions cannot fit in one message.
    """
    batch = is_batch(record)
    heads = _heads(record)
    parts: list[tuple[Block, list[Block]]] = []
    elastics: list[_Elastic | None] = []
    for index, question in enumerate(record.questions):
        control = control_for(question, batch=batch)
        parts.append(
            (section(_question_text(question, index, batch=batch)), _control_blocks(question, index, batch=batch))
        )
        elastics += [_detail(question), _option_list(question, control)]
    submit = (
        [{"type": "actions", "block_id": ids.SUBMIT, "elements": [_button("Submit", ids.SUBMIT, "submit", "primary")]}]
        if batch or any(not answers_at_once(q, batch=batch) and q.options for q in record.questions)
        else []
    )
    fixed = len(heads) + sum(1 + len(controls) for _, controls in parts) + len(submit) + 1
    given = _allocate(fixed, elastics, f"asking {len(record.questions)} questions")
    blocks = list(heads)
    for index, (asked, controls) in enumerate(parts):
        detail, options = elastics[2 * index], elastics[2 * index + 1]
        blocks.append(asked)
        blocks += detail.blocks(given[2 * index]) if detail else []
        blocks += options.blocks(given[2 * index + 1]) if options else []
        blocks += controls
    blocks += submit
    blocks.append(context(*_footer(record, mentions, batch=batch), *([note] if note else [])))
    return SlackMessage(_fallback(record, mentions), blocks)


def _footer(record: QuestionRecord, mentions: Sequence[str], *, batch: bool) -> list[str]:
    notes = [text for text in (_asked_by(record),) if text]
    shown = [m for m in (mention(slack_id) for slack_id in mentions[:20]) if m]
    if shown:
        notes.append("For " + " ".join(shown))
    if batch:
        notes.append(
            "Choices stay yours until you press *Submit* · or reply in this thread, one line per question: `1: yes`"
        )
    else:
        notes.append("Or reply in this thread in your own words")
    return notes


def _fallback(record: QuestionRecord, mentions: Sequence[str]) -> str:
    shown = " ".join(m for m in (mention(slack_id) for slack_id in mentions[:20]) if m)
    name = agent_name(record.agent)
    who = f"{escape_clipped(name, 200)} asks" if name else "Question"
    count = f" ({len(record.questions)} questions)" if is_batch(record) else ""
    lead = f"{shown} {who}{count}: ".lstrip()
    return lead + escape_clipped(" ".join(record.questions[0].question.split()), MAX_FALLBACK_TEXT - units(lead))


# --- the outcome -----------------------------------------------------------------------------------------------------


def slack_date(moment: datetime) -> str:
    """A date Slack shows in each reader's own time zone, with UTC as the fallback text."""
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} at {{time}}|{moment:%Y-%m-%d %H:%M} UTC>"


def person(by: str | None, via: str | None) -> str:
    """A Slack mention for a Slack user, else the name and the channel it came through."""
    if by and via == "slack" and _SLACK_ID.fullmatch(by) and not by.startswith("S"):
        return f"<@{by}>"
    name = escape_clipped(by, 200) if by else "someone"
    return f"{name} via {escape_clipped(via, 50)}" if via and via != "slack" else name


def approval_progress(record: QuestionRecord, needed: int) -> str:
    """How far the approvals have come, in mrkdwn: "1 of 2 approvals: @Alice"."""
    return progress(record, needed, name=lambda approval: person(approval.by, approval.via))


def answerer(record: QuestionRecord) -> str:
    """Who resolved `record` (everyone who approved, when it took several): mentions for Slack users."""
    if record.status == "answered" and len(record.approvals) > 1:
        return ", ".join(person(approval.by, approval.via) for approval in record.approvals)
    return person(record.answered_by, record.answered_via)


_STATUS_LINE = {
    "cancelled": ":no_entry_sign: *Cancelled*",
    "expired": ":hourglass: *Expired*",
    "failed": ":warning: *Failed*",
    "pending": ":speech_balloon: *Waiting for an answer*",
}


def outcome_lines(record: QuestionRecord) -> list[str]:
    """The outcome in mrkdwn, one line per question answered (escaped, each line well within a section)."""
    when = f" {slack_date(record.resolved_at)}" if record.resolved_at else ""
    if record.status != "answered" or record.answer is None:
        message = f" — {escape_clipped(record.error_message, 1000)}" if record.error_message else ""
        return [f"{_STATUS_LINE.get(record.status, record.status)}{when}{message}"]
    lines = [f":white_check_mark: *Answered* by {answerer(record)}{when}"]
    batch = is_batch(record)
    for index, item in enumerate(record.answer.answers):
        chosen = _chosen(item.selected)
        written = f"“{escape_clipped(item.custom, 1500)}”" if item.custom else ""
        shown = " + ".join(part for part in (chosen, written) if part) or "_skipped_"
        lines.append(f"*{index + 1}.* {shown}" if batch else shown)
    return lines


def _chosen(labels: Sequence[str], budget: int = 1200) -> str:
    shown: list[str] = []
    for label in labels:
        piece = f"*{escape_clipped(label, 300)}*"
        if shown and sum(units(p) + 2 for p in shown) + units(piece) > budget:
            return ", ".join(shown) + f" and {len(labels) - len(shown)} more"
        shown.append(piece)
    return ", ".join(shown)


def render_outcome(record: QuestionRecord) -> SlackMessage:
    """The message once `record` is resolved: the question, its detail, who answered what and when; no buttons."""
    batch = is_batch(record)
    heads = _heads(record)
    asked = [section(_question_text(question, index, batch=batch)) for index, question in enumerate(record.questions)]
    chunks, _ = pack_lines(outcome_lines(record), MAX_SECTION_TEXT)
    outcome = [section(text) for text in chunks]
    footer = [context(note)] if (note := _asked_by(record)) else []
    details = [_detail(question) for question in record.questions]
    fixed = len(heads) + len(asked) + len(outcome) + len(footer)
    given = _allocate(fixed, details, "the outcome")
    blocks = list(heads)
    for index, block in enumerate(asked):
        blocks.append(block)
        detail = details[index]
        blocks += detail.blocks(given[index]) if detail else []
    blocks += outcome + footer
    status = "Answered" if record.status == "answered" else record.status.capitalize()
    asked_text = " ".join(record.questions[0].question.split())
    return SlackMessage(f"{status}: " + escape_clipped(asked_text, MAX_FALLBACK_TEXT - 20), blocks)


def render_reminder(record: QuestionRecord, mentions: Sequence[str], count: int) -> SlackMessage:
    """The reminder posted in a question's thread, paging `mentions` (user or user group ids)."""
    shown = " ".join(m for m in (mention(slack_id) for slack_id in mentions[:20]) if m)
    asked = escape_clipped(" ".join(record.questions[0].question.split()), 300)
    lead = f"{shown} " if shown else ""
    text = f":alarm_clock: {lead}Reminder {count}: this question is still waiting for an answer — “{asked}”"
    return SlackMessage(text, [section(text)])


def render_waiting(waiting: Sequence[tuple[QuestionRecord, str]]) -> str:
    """The `/handraise` answer: the questions waiting for this person, each with a link to its message."""
    if not waiting:
        return "Nothing is waiting for you in handraise. :tada:"
    lines = [f"*{len(waiting)} question{'s' if len(waiting) > 1 else ''} waiting for you:*"]
    for record, link in waiting[:MAX_WAITING_SHOWN]:
        title = escape_clipped(" ".join((record.questions[0].header or record.questions[0].question).split()), 150)
        asked = f" — asked by {escape_clipped(name, 100)}" if (name := agent_name(record.agent)) else ""
        lines.append(f"• <{link}|{title}>{asked} {slack_date(record.created_at)}")
    if len(waiting) > MAX_WAITING_SHOWN:
        lines.append(f"… and {len(waiting) - MAX_WAITING_SHOWN} more.")
    return "\n".join(lines)


def resolved_notice(record: QuestionRecord) -> str:
    """What a late answerer is told (ephemeral mrkdwn): answered by whom and when, or how the question ended."""
    when = f" {slack_date(record.resolved_at)}" if record.resolved_at else ""
    if record.status == "answered":
        return f"This question was already answered by {answerer(record)}{when}."
    why = f": {escape_clipped(record.error_message, 500)}" if record.error_message else ""
    return f"This question is closed — it was {record.status}{when}{why}."


def refusal_notice(responders: Sequence[str]) -> str:
    """What someone not on the route's responders list is told (ephemeral mrkdwn)."""
    shown = [m for m in (mention(slack_id) for slack_id in responders[:20]) if m]
    who = ", ".join(shown) if shown else "the people this question was routed to"
    return f"You can't answer this question: only {who} may. Nothing was changed."
