"""Words people write back in a chat, read as the answer to the question asked now: for a question with options, an
option's number or exact label chooses it ("1, 3" for several), anything else is the person's own words. Shared by
the chat channels (Telegram replies, Discord thread replies), so each reads words the same way. Pure: no I/O."""

from __future__ import annotations

import re

from bot.channels.reject import read_reject_reply
from bot.channels.replies import ReplyError
from bot.store.records import QuestionRecord
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

_NUMBERS = re.compile(r"[0-9]{1,3}(?:\s*[,;]\s*[0-9]{1,3}|\s+[0-9]{1,3})*")


def current_question(record: QuestionRecord) -> int:
    """The position of the question being asked in a request: the first with no answer kept yet."""
    for index, question in enumerate(record.questions):
        if question.id not in record.partial:
            return index
    return len(record.questions) - 1


def read_words(
    text: str, question: AskUserQuestionItem, *, limit: int, press: str = "tap"
) -> AskUserQuestionAnswerItem:
    """`text` as the answer to `question`; raises ReplyError for an empty reply, one over `limit` characters (the
    platform's own limit: a longer one is not from it), or numbers that name no option. `press` is how the
    platform's people choose an option ("tap", "press"), for the error that says what to do instead."""
    words = text.strip()
    if not words:
        raise ReplyError(f"The reply is empty; write your answer in words, or {press} an option.")
    if len(text) > limit:
        raise ReplyError(f"The reply is longer than {limit} characters; send a shorter answer.")
    if (rejected := read_reject_reply(question, words)) is not None:
        return rejected  # "Deny" alone, or "Deny: because…"
    labels = [option.label for option in question.options or []]
    if labels and _NUMBERS.fullmatch(words):
        numbers = [int(number) for number in re.findall(r"[0-9]+", words)]
        if any(not 1 <= number <= len(labels) for number in numbers):
            raise ReplyError(f"Choose options by their numbers, 1 to {len(labels)}, or write your answer in words.")
        if len(numbers) > 1 and not question.multi_select:
            raise ReplyError("This question takes one option; send one number, or write your answer in words.")
        return AskUserQuestionAnswerItem(id=question.id, selected=list(dict.fromkeys(labels[n - 1] for n in numbers)))
    for label in labels:
        if words.casefold() == label.strip().casefold():
            return AskUserQuestionAnswerItem(id=question.id, selected=[label])
    return AskUserQuestionAnswerItem(id=question.id, selected=[], custom=words)
