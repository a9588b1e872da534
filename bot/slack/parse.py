"""Slack payloads as answers. Pure: block_actions, view_submission and thread replies in, answer items out.

Payloads come from Slack, signed, but their shape is still checked field by field: anything that is not one of our
own elements, or names a question or option that does not exist, is a ParseError and never an answer. Positions in
our ids are mapped back to the question's own labels here, so a label of any length round-trips exactly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.channels.reject import read_reject_reply, reject_item
from bot.channels.replies import ReplyError
from bot.errors import BotErrorCode, HandraiseError
from bot.slack import ids
from bot.slack.errors import SlackErrorCode
from bot.slack.render import answers_at_once, is_batch_of
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

Items = dict[str, AskUserQuestionAnswerItem]


class ParseError(HandraiseError, ValueError):
    """A payload that is malformed or not about one of our questions (logged, never shown as an answer)."""

    code = SlackErrorCode.PAYLOAD


# --- block_actions ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interaction:
    """One click in one of our messages, as far as the answerer needs it."""

    user: str
    channel: str
    ts: str
    thread_ts: str | None
    trigger_id: str | None
    action: ids.ActionId
    element: Mapping[str, Any]
    state: Mapping[str, Any] = field(default_factory=dict[str, Any])

    @property
    def key(self) -> str:
        """The delivery key of the message clicked in."""
        return f"{self.channel}:{self.ts}"


@dataclass(frozen=True)
class Answer:
    items: Items


@dataclass(frozen=True)
class OpenModal:
    question: int
    chosen: dict[int, list[int]]


@dataclass(frozen=True)
class Held:
    """A selection Slack keeps in the message until Submit: nothing to do but acknowledge it."""


Intent = Answer | OpenModal | Held


def _text(value: object, what: str, *, limit: int = 255) -> str:
    if not isinstance(value, str) or not value or len(value) > limit:
        raise ParseError(f"{what} is missing or not a short string")
    return value


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ParseError(f"{what} is missing or not an object")
    return value  # pyright: ignore[reportUnknownVariableType]


def read_block_actions(body: object) -> Interaction:
    """The click in a block_actions payload; raises ParseError unless it is exactly one of our actions."""
    payload = _mapping(body, "the payload")
    if payload.get("type") != "block_actions":
        raise ParseError("not a block_actions payload")
    user = _text(_mapping(payload.get("user"), "user").get("id"), "user.id")
    container = payload.get("container")
    container = container if isinstance(container, Mapping) else {}
    message = payload.get("message")
    message = message if isinstance(message, Mapping) else {}
    channel_obj = payload.get("channel")
    channel_obj = channel_obj if isinstance(channel_obj, Mapping) else {}
    channel = _text(container.get("channel_id") or channel_obj.get("id"), "channel")  # pyright: ignore
    ts = _text(container.get("message_ts") or message.get("ts"), "message ts")  # pyright: ignore
    thread = container.get("thread_ts") or message.get("thread_ts")  # pyright: ignore
    actions = payload.get("actions")
    if not isinstance(actions, list) or len(actions) != 1:  # pyright: ignore[reportUnknownArgumentType]
        raise ParseError("a block_actions payload must carry exactly one action")
    element = _mapping(actions[0], "actions[0]")
    action = ids.read_action_id(element.get("action_id"))
    if action is None:
        raise ParseError("not one of handraise's actions")
    state = payload.get("state")
    values = state.get("values") if isinstance(state, Mapping) else None  # pyright: ignore[reportUnknownMemberType]
    trigger = payload.get("trigger_id")
    return Interaction(
        user=user,
        channel=channel,
        ts=ts,
        thread_ts=thread if isinstance(thread, str) and thread else None,
        trigger_id=trigger if isinstance(trigger, str) and trigger else None,
        action=action,
        element=element,
        state=values if isinstance(values, Mapping) else {},  # pyright: ignore[reportUnknownArgumentType]
    )


def _question(questions: Sequence[AskUserQuestionItem], index: int) -> AskUserQuestionItem:
    if not 0 <= index < len(questions):
        raise ParseError(f"there is no question {index}")
    return questions[index]


def _label(question: AskUserQuestionItem, value: object) -> str:
    options = question.options or []
    index = ids.read_option_value(value)
    if index is None or index >= len(options):
        raise ParseError(f"question {question.id} has no option {value!r}")
    return options[index].label


def _selected_values(entry: Mapping[str, Any]) -> list[object]:
    """The option values of a radio group, checkboxes or menu's state, in the order Slack gives them."""
    if "selected_options" in entry:
        chosen = entry["selected_options"]
        if not isinstance(chosen, list):
            raise ParseError("selected_options is not a list")
        return [_mapping(option, "an option").get("value") for option in chosen]  # pyright: ignore
    one = entry.get("selected_option")
    return [] if one is None else [_mapping(one, "selected_option").get("value")]


def _chosen_in_state(state: Mapping[str, Any], question: AskUserQuestionItem, index: int) -> list[str]:
    block = state.get(ids.choice_block(index))
    entry = block.get(ids.hold(index)) if isinstance(block, Mapping) else None  # pyright: ignore
    if not isinstance(entry, Mapping):
        return []
    return list(dict.fromkeys(_label(question, value) for value in _selected_values(entry)))  # pyright: ignore


def decide(interaction: Interaction, questions: Sequence[AskUserQuestionItem]) -> Intent:
    """What a click means for these questions. Raises ParseError for a click our message could not have made,
    ReplyError for a Submit with nothing chosen."""
    action = interaction.action
    batch = is_batch_of(questions)
    if action.kind == "submit":
        items: Items = {}
        for index, question in enumerate(questions):
            if question.options and not answers_at_once(question, batch=batch):
                chosen = _chosen_in_state(interaction.state, question, index)
                items[question.id] = AskUserQuestionAnswerItem(id=question.id, selected=chosen)
        if not any(item.selected for item in items.values()):
            raise ReplyError("Choose something before pressing Submit, or use Other… to answer in your own words.")
        return Answer(items)
    question = _question(questions, action.question)
    if action.kind == "text":
        chosen_indices: dict[int, list[int]] = {}
        for index, asked in enumerate(questions):
            labels = _chosen_in_state(interaction.state, asked, index) if asked.options else []
            positions = [o for o, option in enumerate(asked.options or []) if option.label in labels]
            if positions:
                chosen_indices[index] = positions
        return OpenModal(action.question, chosen_indices)
    if action.kind == "hold":
        return Held()
    if not answers_at_once(question, batch=batch):
        raise ParseError(f"question {question.id} is not answered by one click")
    if action.kind == "pick":
        value = interaction.element.get("value")
        if ids.read_option_value(value) != action.option:
            raise ParseError("the button's value does not match its id")
        label = _label(question, value)
    else:
        values = _selected_values(interaction.element)
        if len(values) != 1:
            raise ParseError("a one-click choice must select exactly one option")
        label = _label(question, values[0])
    return Answer({question.id: AskUserQuestionAnswerItem(id=question.id, selected=[label])})


# --- view_submission -------------------------------------------------------------------------------------------------


class ViewErrors(HandraiseError, ValueError):
    """Problems to show in the modal itself, by input block id (Slack's response_action "errors")."""

    code = BotErrorCode.UNREADABLE_REPLY

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(errors.values()))
        self.errors = errors


def read_view_ref(body: object) -> tuple[str, ids.ModalRef, Mapping[str, Any]]:
    """The user, the modal's reference and its state values, from a view_submission payload; raises ParseError."""
    payload = _mapping(body, "the payload")
    if payload.get("type") != "view_submission":
        raise ParseError("not a view_submission payload")
    user = _text(_mapping(payload.get("user"), "user").get("id"), "user.id")
    view = _mapping(payload.get("view"), "view")
    if view.get("callback_id") != ids.MODAL_CALLBACK:
        raise ParseError("not handraise's modal")
    ref = ids.ModalRef.load(view.get("private_metadata"))
    if ref is None:
        raise ParseError("the modal's private_metadata is not handraise's")
    state = view.get("state")
    values = state.get("values") if isinstance(state, Mapping) else None  # pyright: ignore[reportUnknownMemberType]
    return user, ref, values if isinstance(values, Mapping) else {}  # pyright: ignore[reportUnknownVariableType]


def read_modal_answer(values: Mapping[str, Any], questions: Sequence[AskUserQuestionItem]) -> Items:
    """The answer in a submitted modal's state. Raises ViewErrors when nothing was given, ParseError for values
    the modal could not have held."""
    items: Items = {}
    for index, question in enumerate(questions):
        choice = values.get(ids.modal_choice_block(index))
        entry = choice.get(ids.MODAL_CHOICE) if isinstance(choice, Mapping) else None  # pyright: ignore
        labels = [_label(question, v) for v in _selected_values(entry)] if isinstance(entry, Mapping) else []  # pyright: ignore
        text_block = values.get(ids.modal_text_block(index))
        text_entry = text_block.get(ids.MODAL_TEXT) if isinstance(text_block, Mapping) else None  # pyright: ignore
        written = text_entry.get("value") if isinstance(text_entry, Mapping) else None  # pyright: ignore
        custom = written.strip() if isinstance(written, str) and written.strip() else None
        items[question.id] = AskUserQuestionAnswerItem(
            id=question.id, selected=list(dict.fromkeys(labels)), custom=custom
        )
        reject = question.reject_label
        if reject is not None and len(questions) == 1 and not question.multi_select and not labels:
            # The lone "Deny…" form: words are the reason; sent empty, it is the plain reject option.
            items[question.id] = reject_item(question, reject, custom)
    if not any(item.selected or item.custom for item in items.values()):
        raise ViewErrors({ids.modal_text_block(0): "Write an answer (or choose an option) before sending."})
    return items


# --- thread replies --------------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"<([^<>]*)>")
_LEADING_MENTIONS = re.compile(r"^(?:\s*<@[A-Z0-9]+(?:\|[^>]*)?>)+")
_NUMBERS = re.compile(r"#?([0-9]{1,4})(?:\s*(?:,|;|\band\b|&|\s)\s*#?([0-9]{1,4}))*\s*\.?", re.IGNORECASE)
_NUMBER = re.compile(r"[0-9]{1,4}")
_NUMBERED_LINE = re.compile(r"^\s*(?:q(?:uestion)?\s*)?([0-9]{1,3})\s*[:.)\-]\s*(.*)$", re.IGNORECASE)
_SPLIT_LABELS = re.compile(r"\s*(?:,|;|\n)\s*")


def slack_text_to_plain(text: str) -> str:
    """A message's text as the person wrote it: `<@U1>` → `@U1`, `<url|label>` → label, entities decoded."""

    def token(match: re.Match[str]) -> str:
        inner = match[1]
        target, _, label = inner.partition("|")
        if target.startswith(("@", "#")):
            return (target[0] + label) if label else target
        if target.startswith("!"):
            return label or "@" + target[1:].split("^")[0]
        if label and label not in target:
            return f"{label} ({target})"
        return label or target.removeprefix("mailto:")

    plain = _TOKEN.sub(token, text)
    return plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _normal(text: str) -> str:
    text = text.casefold().replace("(recommended)", "")
    return " ".join(text.split()).strip(" .!")


def _by_label(text: str, question: AskUserQuestionItem) -> list[str] | None:
    labels = {_normal(option.label): option.label for option in question.options or []}
    whole = labels.get(_normal(text))
    if whole is not None:
        return [whole]
    if not question.multi_select:
        return None
    parts = [labels.get(_normal(part)) for part in _SPLIT_LABELS.split(text) if part.strip()]
    if parts and all(part is not None for part in parts):
        return list(dict.fromkeys(part for part in parts if part is not None))
    return None


def _reply_item(text: str, question: AskUserQuestionItem) -> AskUserQuestionAnswerItem:
    text = text.strip()
    options = question.options or []
    if not text:
        raise ReplyError("That reply is empty; write your answer, or reply with an option's number.")
    if (rejected := read_reject_reply(question, text)) is not None:
        return rejected
    labels = _by_label(text, question) if options else None
    if labels is not None:
        return AskUserQuestionAnswerItem(id=question.id, selected=labels)
    if options and _NUMBERS.fullmatch(text):
        numbers = list(dict.fromkeys(int(n) for n in _NUMBER.findall(text)))
        wrong = [n for n in numbers if not 1 <= n <= len(options)]
        if wrong:
            raise ReplyError(
                f"There is no option {wrong[0]}: reply with a number from 1 to {len(options)}, "
                "an option's name, or your own words."
            )
        if len(numbers) > 1 and not question.multi_select:
            raise ReplyError("This question takes one choice; reply with one number, or your own words.")
        return AskUserQuestionAnswerItem(id=question.id, selected=[options[n - 1].label for n in numbers])
    return AskUserQuestionAnswerItem(id=question.id, custom=text)


_MESSAGE_TS = re.compile(r"([0-9]{1,12})\.([0-9]{1,6})")


def message_time(ts: object) -> tuple[int, int] | None:
    """A message ts (`"1700000123.000456"`, Slack's id for a message and the moment it was posted) as a pair that
    sorts in posting order, or None when `ts` is not one."""
    if not isinstance(ts, str) or not (match := _MESSAGE_TS.fullmatch(ts)):
        return None
    return int(match[1]), int(match[2].ljust(6, "0"))


def posted_after(ts: object, than: object) -> bool:
    """Whether message `ts` was posted after message `than`; False when either is not a message ts.

    A reply posted before a question was meant for an earlier one: Slack may deliver it late (a retry after a slow
    acknowledgement), when the agent has already asked its next question in the same thread.
    """
    mine, theirs = message_time(ts), message_time(than)
    return mine is not None and theirs is not None and mine > theirs


def numbered_lines(reply: str, count: int, *, noun: str) -> dict[int, str]:
    """`1: yes` lines (and the lines that follow each) by number, from 1 to `count`; {} when the reply does not start
    with one. Raises ReplyError for a number out of range or given twice."""
    parts: dict[int, list[str]] = {}
    current: int | None = None
    for line in reply.split("\n"):
        numbered = _NUMBERED_LINE.match(line)
        if numbered:
            current = int(numbered[1])
            if not 1 <= current <= count:
                raise ReplyError(f"There is no {noun} {current}; they are numbered 1 to {count}.")
            if current in parts:
                raise ReplyError(f"{noun.capitalize()} {current} is answered twice; give each {noun} one line.")
            parts[current] = [numbered[2]]
        elif current is not None:
            parts[current].append(line)
        elif line.strip():
            break
    return {number: "\n".join(lines) for number, lines in parts.items()}


def strip_leading_mentions(text: str) -> str:
    """`<@U0BOT> 1: yes` → `1: yes`: people address the bot before answering."""
    return _LEADING_MENTIONS.sub("", text).strip()


def plain_reply(text: str) -> str:
    """A thread reply as the person wrote it, without the @-mentions that lead it."""
    return slack_text_to_plain(strip_leading_mentions(text)).strip()


def parse_thread_reply(text: str, questions: Sequence[AskUserQuestionItem]) -> Items:
    """The answer in a thread reply: for one question, a number (or several, for multi-select), an option's name,
    or free text; for several, one line per question, `1: yes`. Raises ReplyError explaining what to send."""
    reply = plain_reply(text)
    if len(questions) == 1:
        question = questions[0]
        return {question.id: _reply_item(reply, question)}
    parts = numbered_lines(reply, len(questions), noun="question")
    if not parts:
        raise ReplyError(
            f"This message asks {len(questions)} questions: reply with one line per question, like "
            "`1: yes` and `2: the second option`, or use the buttons and Submit."
        )
    return {
        questions[number - 1].id: _reply_item(lines, questions[number - 1]) for number, lines in sorted(parts.items())
    }
