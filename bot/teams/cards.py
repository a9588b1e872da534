"""A question as an Adaptive Card 1.5 with Universal Actions (`Action.Execute`), and what the card becomes once the
question ends. Pure: no I/O.

One card asks the current question of a request (several questions are asked one by one in the same card, the
answers so far above it). Up to five options are buttons, with "Other…" beside them (Teams shows six actions in a
row); more options, or a multi-select question, are an `Input.ChoiceSet` with "Submit". "Other…" and
"Request changes…" are an `Action.ShowCard` holding an `Input.Text` and its own "Submit". The agent's question text
stands verbatim in a TextBlock; nothing the agent writes becomes a mention (a card only mentions through entities,
which are never added). The whole activity, as sent, stays within Teams' 28,000 bytes: a long plan or detail is cut,
its start shown, and what was left out counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from bot.channels import reject
from bot.errors import HandraiseError
from bot.questions.approvals import progress
from bot.questions.status_note import StatusNote
from bot.store.records import QuestionRecord
from bot.teams.connector import MAX_BODY, body_bytes
from bot.teams.errors import TeamsErrorCode
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

CARD_TYPE = "application/vnd.microsoft.card.adaptive"
SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
VERSION = "1.5"
MARK = "handraise"
"""The key every action's data carries (its value: the question id), so that a press names its question."""
INPUT_CHOICE = "handraise_choice"
INPUT_WORDS = "handraise_words"
MAX_BUTTONS = 5
"""Options shown as buttons; with "Other…" that makes Teams' six actions in a row."""
MAX_OPTIONS = 100
MAX_QUESTIONS = 10
BUTTON_TEXT = 80
BUDGET = MAX_BODY - 1_000
"""Bytes a card activity may take: under Teams' limit with room for the fields the connector adds (the id)."""
ELLIPSIS = "…"
_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class RenderError(HandraiseError, ValueError):
    """The request cannot be shown as a Teams card: too many questions, or a question with too many options."""

    code = TeamsErrorCode.RENDER


Card = dict[str, Any]
Names = Mapping[str, str]


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + ELLIPSIS


def one_line(text: str) -> str:
    return " ".join(text.split())


def moment(when: datetime) -> str:
    """A time people read: `2026-12-06 10:00 UTC`."""
    return f"{when:%Y-%m-%d %H:%M} UTC"


def current_question(record: QuestionRecord) -> int:
    """The position of the question being asked: the first with no answer kept yet."""
    for index, question in enumerate(record.questions):
        if question.id not in record.partial:
            return index
    return len(record.questions) - 1


def text_block(text: str, **style: Any) -> dict[str, Any]:
    return {"type": "TextBlock", "text": text, "wrap": True} | style


def card(body: list[dict[str, Any]], actions: list[dict[str, Any]] | None = None) -> Card:
    made: Card = {"type": "AdaptiveCard", "$schema": SCHEMA, "version": VERSION, "body": body}
    if actions:
        made["actions"] = actions
    return made


def message(content: Card, summary: str) -> dict[str, Any]:
    """The message activity carrying `content`; `summary` is what notifications and the activity feed show."""
    return {
        "type": "message",
        "summary": clip(one_line(summary), 200),
        "attachments": [{"contentType": CARD_TYPE, "content": content}],
    }


def invoke_answer(content: Card) -> dict[str, Any]:
    """The answer to an `adaptiveCard/action` invoke that shows `content` to the person who pressed."""
    return {"statusCode": 200, "type": CARD_TYPE, "value": content}


def invoke_message(text: str) -> dict[str, Any]:
    """The answer to an invoke that tells only the person who pressed something (a refusal), changing no card."""
    return {"statusCode": 200, "type": "application/vnd.microsoft.activity.message", "value": clip(text, 400)}


def fits(activity: Mapping[str, Any]) -> bool:
    return len(body_bytes(activity)) <= BUDGET


# --- the question ----------------------------------------------------------------------------------------------------


def _check(record: QuestionRecord) -> None:
    if len(record.questions) > MAX_QUESTIONS:
        raise RenderError(
            f"{len(record.questions)} questions do not fit one Teams card; ask at most {MAX_QUESTIONS} at once"
        )
    for question in record.questions:
        if len(question.options or ()) > MAX_OPTIONS:
            raise RenderError(
                f"question {question.id} has {len(question.options or ())} options; a Teams card lists at most "
                f"{MAX_OPTIONS}, so ask with fewer options"
            )


def words_label(question: AskUserQuestionItem) -> str:
    if question.reject_label is not None:
        return question.reject_label  # the reject option itself is the way to give words ("Deny…")
    if question.intent is not None:
        return "Request changes…"
    return "Other…" if question.options else "Answer…"


def _data(record: QuestionRecord, index: int, verb: str, **more: Any) -> dict[str, Any]:
    return {MARK: record.id, "q": index, "verb": verb} | more


def _execute(title: str, record: QuestionRecord, index: int, verb: str, **more: Any) -> dict[str, Any]:
    return {"type": "Action.Execute", "title": title, "verb": verb, "data": _data(record, index, verb, **more)}


def _words_card(record: QuestionRecord, index: int, question: AskUserQuestionItem) -> dict[str, Any]:
    placeholder = "The changes you want" if question.intent is not None else "Your answer in your own words"
    field = {"type": "Input.Text", "id": INPUT_WORDS, "isMultiline": True, "maxLength": 4000}
    if question.reject_label is not None:  # words optional: none is the reject option alone (a plain deny)
        field |= {"label": reject.words_label(question.reject_label), "placeholder": "Why (optional)"}
    else:
        field |= {"placeholder": placeholder, "isRequired": True, "errorMessage": "Write something first"}
    return {
        "type": "Action.ShowCard",
        "title": words_label(question),
        "card": card([field], [_execute("Submit", record, index, "words")]),
    }


def _asks_for_changes(question: AskUserQuestionItem, label: str) -> bool:
    """An option the words field stands for: the reject option ("Deny…"), or a plan review's own "Request changes"
    (its "Request changes…" field gives it with the words)."""
    if question.reject_label is not None:
        return label == question.reject_label
    return question.intent is not None and label.strip(" .…").casefold() == "request changes"


def _controls(record: QuestionRecord, index: int, room: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The inputs shown in the body and the actions under it, for question `index`."""
    question = record.questions[index]
    options = question.options or []
    if not options:
        field = {"type": "Input.Text", "id": INPUT_WORDS, "isMultiline": True, "maxLength": 4000}
        field |= {"placeholder": "Your answer", "isRequired": True, "errorMessage": "Write your answer first"}
        return [field], [_execute("Submit", record, index, "words")]
    if not question.multi_select and len(options) <= MAX_BUTTONS:
        buttons = [
            _execute(clip(option.label, BUTTON_TEXT), record, index, "pick", o=number)
            | ({"style": "positive"} if question.intent is not None and option.label == question.intent.approve else {})
            for number, option in enumerate(options)
            if not _asks_for_changes(question, option.label)
        ]
        return [], [*buttons, _words_card(record, index, question)]
    # Values are positions, never labels: a label may hold a comma, and a multi-select answer is "0,2".
    choices = [
        {"title": clip(option.label, _label_room(room)), "value": str(number)}
        for number, option in enumerate(options)
        if option.label != question.reject_label
    ]
    field = {"type": "Input.ChoiceSet", "id": INPUT_CHOICE, "choices": choices, "isRequired": True}
    field |= {"errorMessage": "Choose an option first", "style": "expanded" if len(options) <= 10 else "compact"}
    if question.multi_select:
        field |= {"isMultiSelect": True, "label": "Choose every option that applies"}
    return [field], [_execute("Submit", record, index, "choose"), _words_card(record, index, question)]


def _head(record: QuestionRecord, verb: str) -> str:
    agent = record.agent.name or record.agent.id if record.agent is not None else None
    return f"**{clip(one_line(agent), 80)}** {verb}" if agent else f"A question for you ({verb})"


def _options_list(question: AskUserQuestionItem, room: int) -> list[dict[str, Any]]:
    """The options with their descriptions, numbered (replies pick by number), when any has a description."""
    options = question.options or []
    if not any(option.description and option.description.strip() for option in options):
        return []
    described = room // 10 >= 20
    lines = [
        f"{number}. **{clip(one_line(option.label), _label_room(room))}**"
        + (f" — {clip(one_line(option.description), min(room // 10, 400))}" if option.description and described else "")
        for number, option in enumerate(options, start=1)
    ]
    return [text_block("\n\n".join(lines), spacing="small")]


def _label_room(room: int) -> int:
    return min(200, max(20, room // 20))


def _cut_detail(detail: str, limit: int) -> str:
    if len(detail) <= limit:
        return detail
    kept = detail[:limit].rstrip()
    return f"{kept}\n\n{ELLIPSIS} ({len(detail) - len(kept)} more characters not shown)"


def _question_activity(
    record: QuestionRecord, index: int, note: str | None, detail_limit: int, room: int
) -> dict[str, Any]:
    question = record.questions[index]
    body: list[dict[str, Any]] = [text_block(_head(record, "asks"), size="small", isSubtle=True)]
    if len(record.questions) > 1:
        body[0]["text"] += f" · {index + 1} of {len(record.questions)}"
        body += [
            text_block(f"✓ {number + 1}. {clip(one_line(q.header or q.question), 80)} — {answer_text(item, 120)}")
            for number, q in enumerate(record.questions)
            if (item := record.partial.get(q.id)) is not None
        ]
    if question.header:
        body.append(text_block(clip(one_line(question.header), min(200, max(40, room // 10))), weight="bolder"))
    body.append(text_block(clip(question.question, max(100, room)), size="medium"))
    body += _options_list(question, room)
    if question.detail and question.detail.strip():
        detail = _cut_detail(question.detail.strip("\n"), detail_limit)
        body.append({"type": "Container", "style": "emphasis", "items": [text_block(detail, fontType="monospace")]})
    inputs, actions = _controls(record, index, room)
    body += inputs
    if note:
        body.append(text_block(clip(note, 300), isSubtle=True))
    summary = f"{_head(record, 'asks').replace('**', '')}: {question.header or question.question}"
    return message(card(body, actions), summary)


FULL_ROOM = 200_000
"""The room a card's texts get when nothing needs cutting (more than any of them may hold)."""


def _fitted(build: Callable[[int, int], dict[str, Any]], longest_detail: int) -> dict[str, Any]:
    """The activity `build(detail_limit, room)` makes with the most text that fits the budget: the detail (a plan)
    is cut first, the question's own texts only when they are too long on their own."""
    full = build(longest_detail, FULL_ROOM)
    if fits(full):
        return full
    low, high = 0, longest_detail
    while low < high:
        middle = (low + high + 1) // 2
        if fits(build(middle, FULL_ROOM)):
            low = middle
        else:
            high = middle - 1
    if fits(made := build(low, FULL_ROOM)):
        return made
    low, high = 0, FULL_ROOM
    while low < high:
        middle = (low + high + 1) // 2
        if fits(build(0, middle)):
            low = middle
        else:
            high = middle - 1
    return build(0, low)


def render_question(record: QuestionRecord, *, note: str | None = None) -> dict[str, Any]:
    """The message activity asking `record`'s current question; `note` is a line such as the approvals so far.
    Raises RenderError when the request cannot be shown in Teams."""
    _check(record)
    index = current_question(record)
    question = record.questions[index]
    return _fitted(
        lambda detail, room: _question_activity(record, index, note, detail, room), len(question.detail or "")
    )


# --- the outcome -----------------------------------------------------------------------------------------------------


def answer_text(item: AskUserQuestionAnswerItem, budget: int = 1000) -> str:
    """One answer: the chosen labels in bold and the words in quotes; "skipped" for neither."""
    chosen = ", ".join(f"**{clip(one_line(label), max(20, budget // 3))}**" for label in item.selected[:20])
    if len(item.selected) > 20:
        chosen += f" and {len(item.selected) - 20} more"
    words = f"“{clip(item.custom.strip(), budget)}”" if item.custom and item.custom.strip() else ""
    return " + ".join(part for part in (chosen, words) if part) or "_skipped_"


def person(by: str | None, via: str | None, names: Names) -> str:
    """Who answered, as people read them: a Teams person's display name (or email), anyone else by name and the
    channel they answered in."""
    name = names.get(by or "") or by or "someone"
    if via == "teams" and (name.startswith(("29:", "8:orgid:")) or _is_guid(name)):
        name = "someone in Teams"  # a raw id is never shown
    return f"{clip(name, 100)} via {via}" if via and via != "teams" else clip(name, 100)


def _is_guid(text: str) -> bool:
    return _GUID.fullmatch(text) is not None


def answerer(record: QuestionRecord, names: Names) -> str:
    if record.status == "answered" and len(record.approvals) > 1:
        return ", ".join(person(approval.by, approval.via, names) for approval in record.approvals)
    return person(record.answered_by, record.answered_via, names)


_STATUS = {"cancelled": "🚫 **Cancelled**", "expired": "⌛ **Expired**", "failed": "⚠️ **Failed**"}


def status_line(record: QuestionRecord, names: Names) -> str:
    when = f" · {moment(record.resolved_at)}" if record.resolved_at else ""
    if record.status == "answered":
        return f"✅ **Answered** by {answerer(record, names)}{when}"
    why = f" — {clip(one_line(record.error_message), 300)}" if record.error_message else ""
    return f"{_STATUS.get(record.status, '💬 **Waiting for an answer**')}{when}{why}"


def _outcome_activity(record: QuestionRecord, names: Names, detail_limit: int, text_limit: int) -> dict[str, Any]:
    body: list[dict[str, Any]] = [text_block(_head(record, "asked"), size="small", isSubtle=True)]
    answers = {item.id: item for item in record.answer.answers} if record.answer is not None else {}
    for index, question in enumerate(record.questions):
        number = f"{index + 1}. " if len(record.questions) > 1 else ""
        body.append(
            text_block(number + clip(question.header or question.question, max(100, text_limit)), weight="bolder")
        )
        if len(record.questions) == 1 and question.detail and question.detail.strip():
            detail = _cut_detail(question.detail.strip("\n"), detail_limit)
            body.append({"type": "Container", "style": "emphasis", "items": [text_block(detail, fontType="monospace")]})
        if (item := answers.get(question.id)) is not None:
            body.append(text_block(f"→ {answer_text(item, max(120, text_limit))}", spacing="small"))
    body.append(text_block(status_line(record, names), spacing="medium"))
    first = record.questions[0]
    return message(card(body), f"{status_line(record, names).replace('**', '')}: {first.header or first.question}")


def render_outcome(record: QuestionRecord, names: Names | None = None) -> dict[str, Any]:
    """The message activity once `record` ended: each question with its answer (or how it ended), who and when;
    no actions left."""
    names = names or {}
    longest = max(len(q.detail or "") for q in record.questions)
    return _fitted(lambda detail, room: _outcome_activity(record, names, detail, room), longest)


def approval_note(record: QuestionRecord, needed: int, names: Names) -> str:
    """How far the approvals have come: "☑️ 1 of 2 approvals: Alice"."""
    return "☑️ " + progress(record, needed, name=lambda approval: person(approval.by, approval.via, names))


def note_message(note: StatusNote) -> dict[str, Any]:
    """A status note as a plain-text message: the headline and a glance at the agent's words (never a mention:
    Teams only mentions through entities, which are never added)."""
    text = clip(note.headline, 300)
    if note.detail is not None:
        text += "\n\n" + clip(note.detail, 1_000)
    return {"type": "message", "text": text, "textFormat": "plain"}


def reminder_text(record: QuestionRecord, count: int) -> str:
    asked = clip(one_line(record.questions[current_question(record)].question), 300)
    return f"⏰ Reminder {count}: this question is still waiting for an answer — “{asked}”"
