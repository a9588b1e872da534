"""A tap answers once: what every channel that takes taps from a phone does after reading the tap's token. The
token's nonce is spent in the store (so a replay is refused even after a restart, or on another replica), then the
chosen option is handed to the base as the answer of the person the token names; the base decides the rest (who may
answer, first answer wins, a question already over). The channel verifies the token and finds the question first, so
that a tap that beats its question's recording is not spent and can be tried again.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.channels.base import Channel
from bot.channels.replies import Answer, Outcome, Reader, ReplyError
from bot.channels.tap_tokens import Tap
from bot.store.records import Delivery, QuestionRecord
from core import AskUserQuestionAnswerItem


@dataclass(frozen=True)
class Spent:
    """The token was used before: nothing was changed."""


def choosing(index: int, option: int) -> Reader:
    """Reads a tap as choosing option `option` of question `index` of its request."""

    def read(record: QuestionRecord, delivery: Delivery) -> Answer:
        if not 0 <= index < len(record.questions):
            raise ReplyError("This button belongs to no question here; open the question instead.")
        question = record.questions[index]
        options = question.options or []
        if not 0 <= option < len(options):
            raise ReplyError("This button belongs to no option here; open the question instead.")
        return Answer({question.id: AskUserQuestionAnswerItem(id=question.id, selected=[options[option].label])})

    return read


async def answer_once(
    channel: Channel,
    tap: Tap,
    found: tuple[QuestionRecord, Delivery],
    choice: tuple[int, int],
    *,
    how: str,
) -> Outcome | Spent:
    """Spend `tap`'s nonce and answer `found`'s question with `choice` (question index, option index) as the tap's
    person; Spent when the nonce was spent before."""
    ledger = channel.ledger
    if not await ledger.store.first_sight(channel.name, f"tap:{tap.nonce}", now=ledger.clock.now()):
        return Spent()
    return await channel.replies.answer(
        tap.question_id, by=tap.person, how=how, read=choosing(*choice), question_id=tap.question_id, found=found
    )
