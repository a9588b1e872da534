"""What people do in Telegram, read as answers: a tap on a button, or words in a reply. Pure: no I/O.

A tap is read against the question being asked: a tap on an earlier question's keyboard, or on an option that is
not there, answers nothing. Words answer the current question: for a question with options, an option's number or
exact label chooses it ("1, 3" for several), anything else is the person's own answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.channels.reject import read_reject_reply
from bot.channels.replies import ReplyError
from bot.store.records import QuestionRecord
from bot.telegram import keys
from bot.telegram.render import current_question
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

MAX_REPLY = 4096
"""Telegram's own limit for a message; a longer text is not from Telegram."""

_PROMPT_REF = re.compile(r"\nref ([0-9]{1,12})/([0-9]{1,3})\Z")
_NUMBERS = re.compile(r"[0-9]{1,3}(?:\s*[,;]\s*[0-9]{1,3}|\s+[0-9]{1,3})*")


@dataclass(frozen=True)
class Chosen:
    """The tap answers question `index` with `item`."""

    index: int
    item: AskUserQuestionAnswerItem


@dataclass(frozen=True)
class Toggled:
    """The tap ticks or unticks an option: show `mask` as the selection now."""

    mask: int


@dataclass(frozen=True)
class WantsWords:
    """The tap asks to answer question `index` in words: send a ForceReply prompt."""

    index: int


@dataclass(frozen=True)
class Stale:
    """The tap is about a question that is no longer the one asked, or an option that is not there."""

    reason: str


Decision = Chosen | Toggled | WantsWords | Stale


def decide(tap: keys.Tap, record: QuestionRecord) -> Decision:
    """What `tap` means for `record` as it is now."""
    index = current_question(record)
    if tap.question != index or record.questions[index].id in record.partial:
        return Stale("that button belongs to a question already answered; use the buttons shown now")
    question = record.questions[index]
    options = question.options or []
    if tap.kind == "write":
        return WantsWords(index)
    if tap.kind == "pick":
        if question.multi_select or tap.option >= len(options):
            return Stale("that option is not there any more")
        return Chosen(index, AskUserQuestionAnswerItem(id=question.id, selected=[options[tap.option].label]))
    if not question.multi_select or tap.mask >> len(options):
        return Stale("that selection does not fit this question")
    if tap.kind == "toggle":
        if tap.option >= len(options):
            return Stale("that option is not there any more")
        return Toggled(tap.mask ^ (1 << tap.option))
    labels = [options[position].label for position in keys.selected(tap.mask, len(options))]
    return Chosen(index, AskUserQuestionAnswerItem(id=question.id, selected=labels))


def read_words(text: str, question: AskUserQuestionItem) -> AskUserQuestionAnswerItem:
    """Words in a reply as the answer to `question`; raises ReplyError for an empty or oversize reply, or numbers
    that name no option."""
    words = text.strip()
    if not words:
        raise ReplyError("The reply is empty; write your answer in words, or tap an option.")
    if len(text) > MAX_REPLY:
        raise ReplyError(f"The reply is longer than {MAX_REPLY} characters; send a shorter answer.")
    if (rejected := read_reject_reply(question, words)) is not None:
        return rejected  # "Deny" alone, or "Deny: because…"
    options = question.options or []
    labels = [option.label for option in options]
    if options and _NUMBERS.fullmatch(words):
        numbers = [int(number) for number in re.findall(r"[0-9]+", words)]
        if any(not 1 <= number <= len(options) for number in numbers):
            raise ReplyError(f"Choose options by their numbers, 1 to {len(options)}, or write your answer in words.")
        if len(numbers) > 1 and not question.multi_select:
            raise ReplyError("This question takes one option; send one number, or write your answer in words.")
        chosen = list(dict.fromkeys(labels[number - 1] for number in numbers))
        return AskUserQuestionAnswerItem(id=question.id, selected=chosen)
    for label in labels:
        if words.casefold() == label.strip().casefold():
            return AskUserQuestionAnswerItem(id=question.id, selected=[label])
    return AskUserQuestionAnswerItem(id=question.id, selected=[], custom=words)


def read_prompt_ref(text: object) -> tuple[int, int | None] | None:
    """The (question message id, question position) that a prompt or reminder of the bot names on its last line
    (`ref 1234/2`; `/0` for whichever question is asked now), or None when it names none."""
    if not isinstance(text, str) or not (match := _PROMPT_REF.search(text)):
        return None
    position = int(match[2])
    return int(match[1]), position - 1 if position >= 1 else None
