"""Finding a question as it is now: the copy held here while this process alone writes the store (no read), else
the store's.

Every reply, click and long poll starts with one of these, so the read saved is the one most often made.
"""

from __future__ import annotations

from bot.errors import BotErrorCode, HandraiseError
from bot.questions.ledger_mode import LedgerMode
from bot.questions.pending import HeldQuestions
from bot.store.interface import AsyncStore
from bot.store.records import Delivery, QuestionRecord


class UnknownQuestion(HandraiseError, LookupError):
    """No question has that id (a forged or mistyped reference)."""

    code = BotErrorCode.UNKNOWN_QUESTION


class QuestionLookup:
    """Questions and deliveries as they are now, for the ledger's parts and (through `Ledger`) its callers."""

    def __init__(self, store: AsyncStore, held: HeldQuestions, mode: LedgerMode) -> None:
        self._store = store
        self._held = held
        self._mode = mode

    async def current(self, question_id: str) -> QuestionRecord | None:
        """The question as the store has it now, None for an unknown id.

        Without a change feed this process makes every change to the store, each through this ledger, which keeps
        the record of a question it holds up to date: that one is not read back. (A feed stops only once the ledger
        is closing: from then on the store is read again.)
        """
        pending = self._held.get(question_id)
        if pending is not None and not self._mode.reads_store:
            return pending.record
        return await self._store.get_question(question_id)

    async def existing(self, question_id: str) -> QuestionRecord:
        """As `current`, for a question that must exist. Raises UnknownQuestion."""
        record = await self.current(question_id)
        if record is None:
            raise UnknownQuestion(f"no question {question_id}")
        return record

    async def delivered(self, channel: str, key: str) -> tuple[QuestionRecord, Delivery] | None:
        """The delivery on `channel` that a reply refers to by its lookup key, and its question as it is now (as
        `current` has it); None when there is none.

        While the store is read for the question anyway (a change feed runs, or the ledger is closing), one read
        returns both. Otherwise the record of a question held here is the ledger's own copy, which costs no read.
        """
        if self._mode.reads_store:
            return await self._store.find_delivery_with_question(channel, key)
        delivery = await self._store.find_delivery(channel, key)
        if delivery is None:
            return None
        record = await self.current(delivery.question_id)
        return (record, delivery) if record is not None else None
