"""What people do in Discord, read as answers: a press, a pick in a select, a modal's words, or words in a thread
reply. Pure: no I/O.

A control is read against the question being asked now: a press on an earlier question's control, or on an option
that is not there, answers nothing. Words answer the current question: for a question with options, an option's
number or exact label chooses it ("1, 3" for several), anything else is the person's own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from bot.channels import words
from bot.channels.reject import reject_item
from bot.channels.replies import ReplyError
from bot.discord.render import MAX_WORDS, current_question
from bot.store.records import QuestionRecord
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

MAX_REPLY = 4000
"""Discord's own limit for a message (with Nitro); a longer text is not from Discord."""

_CUSTOM_ID = re.compile(r"hr:([pswmux]):([0-9]{1,2})(?::([0-9]{1,20}))?")

Kind = Literal["p", "s", "w", "m", "u", "x"]


@dataclass(frozen=True)
class Press:
    """A control of handraise's: `kind` (p: option button, s: select, m: multi-select pick, u: Submit, w: open the
    modal, x: the modal's words), the question's position, and an option number (p) or message id (x)."""

    kind: Kind
    question: int
    extra: str | None = None


@dataclass(frozen=True)
class Chosen:
    index: int
    item: AskUserQuestionAnswerItem


@dataclass(frozen=True)
class Picked:
    """A multi-select pick, kept until Submit."""

    labels: tuple[str, ...]


@dataclass(frozen=True)
class WantsWords:
    index: int


@dataclass(frozen=True)
class Stale:
    reason: str


Decision = Chosen | Picked | WantsWords | Stale


def read_press(custom_id: object) -> Press | None:
    """The control a custom id names, or None for one that is not handraise's (or is malformed)."""
    if not isinstance(custom_id, str) or not (match := _CUSTOM_ID.fullmatch(custom_id)):
        return None
    kind: Any = match[1]
    if (kind in ("p", "x")) != (match[3] is not None):
        return None
    return Press(kind, int(match[2]), match[3])


def decide(
    press: Press, record: QuestionRecord, values: list[str], words: str | None, picked: tuple[str, ...] | None
) -> Decision:
    """What `press` means for `record` as it is now. `values` are a select's picks, `words` a modal's text, `picked`
    the multi-select pick kept for Submit."""
    index = current_question(record)
    if press.question != index or record.questions[index].id in record.partial:
        return Stale("That control belongs to a question already answered; use the ones shown now.")
    question = record.questions[index]
    labels = [option.label for option in question.options or []]
    if press.kind == "w":
        return WantsWords(index)
    if press.kind == "x":
        item = read_modal_words(words or "", question)
        if question.multi_select and picked and item.custom is not None and not item.selected:
            # A multi-select answer carries both: what was picked in the list, and the person's words.
            item = item.model_copy(update={"selected": [lab for lab in labels if lab in picked]})
        return Chosen(index, item)
    if press.kind == "p":
        number = int(press.extra or -1)
        if (question.multi_select and len(labels) >= 2) or not 0 <= number < len(labels):
            return Stale("That option is not there any more.")
        return Chosen(index, AskUserQuestionAnswerItem(id=question.id, selected=[labels[number]]))
    if press.kind == "u":
        if not question.multi_select:
            return Stale("That control does not fit this question.")
        if not picked:
            raise ReplyError("Choose at least one option in the list first, then press Submit.")
        return Chosen(
            index, AskUserQuestionAnswerItem(id=question.id, selected=[lab for lab in labels if lab in picked])
        )
    chosen = _values(values, labels)
    if chosen is None:
        return Stale("That choice does not fit this question.")
    if press.kind == "s":
        if question.multi_select or len(chosen) != 1:
            return Stale("That choice does not fit this question.")
        return Chosen(index, AskUserQuestionAnswerItem(id=question.id, selected=chosen))
    if not question.multi_select:
        return Stale("That choice does not fit this question.")
    return Picked(tuple(chosen))


def _values(values: list[str], labels: list[str]) -> list[str] | None:
    """A select's values (option numbers as strings) as labels; None when any is not an option."""
    if not values or len(values) > len(labels) or len(set(values)) != len(values):
        return None
    if not all(value.isdigit() and int(value) < len(labels) for value in values):
        return None
    return [labels[int(value)] for value in values]


def read_modal_words(words: str, question: AskUserQuestionItem) -> AskUserQuestionAnswerItem:
    """A modal's text: the person's own words (the modal is what they open to write them); for a reject option
    ("Deny…") the reason, and no words a plain deny."""
    text = words.strip()
    if (reject := question.reject_label) is not None and len(words) <= MAX_WORDS:
        return reject_item(question, reject, text)
    if not text:
        raise ReplyError("The answer is empty; write your answer, or press an option.")
    if len(words) > MAX_WORDS:
        raise ReplyError(f"The answer is longer than {MAX_WORDS} characters; send a shorter one.")
    return AskUserQuestionAnswerItem(id=question.id, selected=[], custom=text)


def read_words(text: str, question: AskUserQuestionItem) -> AskUserQuestionAnswerItem:
    """Words in a thread reply as the answer to `question` (the kit's reading, `bot.channels.words`); raises
    ReplyError for an empty or oversize reply, or numbers that name no option."""
    return words.read_words(text, question, limit=MAX_REPLY, press="press")


def modal_words(data: object) -> str | None:
    """The text of the modal's "words" input in a MODAL_SUBMIT's data, or None when it has none."""
    if not isinstance(data, dict):
        return None
    for row in data.get("components") or []:
        for item in (row.get("components") or []) if isinstance(row, dict) else []:
            if isinstance(item, dict) and item.get("custom_id") == "words" and isinstance(item.get("value"), str):
                return item["value"]
    return None
