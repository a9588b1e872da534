"""What people do in Teams, read as answers: a card's action (its data, with the inputs merged in), or words in a
reply in the card's thread. Pure: no I/O.

A press is read against the question as it is now: one on an earlier question's card, or naming an option that is
not there, answers nothing. Words answer the current question: "2" (or "1, 3" for several) picks options by number,
an option's exact label picks it, anything else is the person's own answer. Mentions (`<at>handraise</at>`) and the
HTML Teams wraps a message in are taken out first.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from bot.channels.reject import reject_item
from bot.channels.replies import ReplyError
from bot.channels.words import read_words as read_chat_words
from bot.store.records import QuestionRecord
from bot.teams.cards import INPUT_CHOICE, INPUT_WORDS, MARK, current_question
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

MAX_WORDS = 4_000
"""The longest answer in words read (the card's text field holds as much; Teams' own limit is about 28 KB)."""
MAX_CHOICES = 100

_MENTION = re.compile(r"<at\b[^>]*>.*?</at>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]{0,200}>")
_BREAK = re.compile(r"<br\s*/?>|</p>|</div>", re.IGNORECASE)


@dataclass(frozen=True)
class Press:
    """One of handraise's actions: the question it names (id and position), what it does, and what came with it."""

    question_id: str
    index: int
    verb: str
    option: int | None = None
    choice: str | None = None
    words: str | None = None


@dataclass(frozen=True)
class Chosen:
    index: int
    item: AskUserQuestionAnswerItem


@dataclass(frozen=True)
class Stale:
    reason: str


Decision = Chosen | Stale


def read_press(data: object) -> Press | None:
    """The press in an action's data, or None when it is not one of handraise's (another app's card, garbage)."""
    if not isinstance(data, dict):
        return None
    question_id, index, verb = data.get(MARK), data.get("q"), data.get("verb")
    if not isinstance(question_id, str) or not 0 < len(question_id) <= 100:
        return None
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < 1000:
        return None
    if verb not in ("pick", "choose", "words"):
        return None
    option = data.get("o")
    if verb == "pick" and (not isinstance(option, int) or isinstance(option, bool) or not 0 <= option < 1000):
        return None
    choice, words = data.get(INPUT_CHOICE), data.get(INPUT_WORDS)
    return Press(
        question_id,
        index,
        verb,
        option=option if verb == "pick" else None,
        choice=choice if isinstance(choice, str) else None,
        words=words if isinstance(words, str) else None,
    )


def decide(press: Press, record: QuestionRecord) -> Decision:
    """What `press` means for `record` as it is now; raises ReplyError for words or choices that cannot be read."""
    index = current_question(record)
    if press.index != index or record.questions[index].id in record.partial:
        return Stale("That card shows a question already answered; use the card as it is now.")
    question = record.questions[index]
    options = question.options or []
    if press.verb == "pick":
        if question.multi_select or press.option is None or press.option >= len(options):
            return Stale("That option is not there any more.")
        return Chosen(index, AskUserQuestionAnswerItem(id=question.id, selected=[options[press.option].label]))
    if press.verb == "choose":
        return Chosen(index, _choices(press.choice, question))
    words = (press.words or "").strip()
    if len(words) > MAX_WORDS:
        raise ReplyError(f"The answer is longer than {MAX_WORDS} characters; send a shorter one.")
    if question.reject_label is not None:  # the reject option's field: words are the reason, none a plain deny
        return Chosen(index, reject_item(question, question.reject_label, words))
    if not words:
        raise ReplyError("The answer is empty; write something in the box, then Submit.")
    return Chosen(index, AskUserQuestionAnswerItem(id=question.id, selected=[], custom=words))


def _choices(value: str | None, question: AskUserQuestionItem) -> AskUserQuestionAnswerItem:
    options = question.options or []
    parts = [part.strip() for part in (value or "").split(",") if part.strip()]
    if not parts:
        raise ReplyError("Choose an option first, then Submit.")
    if len(parts) > MAX_CHOICES or not all(part.isdigit() and int(part) < len(options) for part in parts):
        raise ReplyError("That choice is not one of the options; choose again.")
    if len(parts) > 1 and not question.multi_select:
        raise ReplyError("This question takes one option.")
    labels = list(dict.fromkeys(options[int(part)].label for part in parts))
    return AskUserQuestionAnswerItem(id=question.id, selected=labels)


def plain_text(text: str) -> str:
    """A Teams message's words: mentions removed, HTML tags dropped, entities read, space tidied."""
    text = _MENTION.sub(" ", text[: MAX_WORDS * 4])
    text = _TAG.sub("", _BREAK.sub("\n", text))
    lines = [" ".join(line.split()) for line in html.unescape(text).replace("\xa0", " ").split("\n")]
    return "\n".join(line for line in lines if line).strip()


def read_words(text: str, question: AskUserQuestionItem) -> AskUserQuestionAnswerItem:
    """Words in a thread reply as the answer to `question`: the message's plain text read as every chat channel reads
    words (`bot.channels.words`); raises ReplyError for an empty or oversize reply, or numbers that name no option."""
    return read_chat_words(plain_text(text), question, limit=MAX_WORDS, press="press")


def thread_root(conversation_id: str) -> tuple[str, str | None]:
    """A conversation id split into the channel's id and the thread's root message id (None outside a thread)."""
    base, _, root = conversation_id.partition(";messageid=")
    return base, root or None


def action_data(activity: dict[str, Any]) -> object:
    """The data of an `Action.Execute` invoke (inputs merged in), or of an older client's `Action.Submit`."""
    if activity.get("type") == "invoke":
        value = activity.get("value")
        action = value.get("action") if isinstance(value, dict) else None
        return action.get("data") if isinstance(action, dict) else None
    return activity.get("value")
