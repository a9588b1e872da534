"""The questions this process holds in memory while something here waits on them, found by id or by the in-process
request that asked them.

The store has every question; this keeps the one `PendingQuestion` that every waiter on a question shares, so that
the first answer wakes them all.
"""

from __future__ import annotations

import anyio

from bot.questions.ledger_feed import Stamp
from bot.questions.tasks import Latch
from bot.store.records import NewDelivery, QuestionRecord
from core import AskUserQuestionRequest


class PendingQuestion:
    """One question while something in this process waits on it."""

    # Slots: thousands wait at once.
    __slots__ = ("_changed", "announced", "holders", "new", "record", "request", "resolved", "stored_delivery")

    def __init__(self, record: QuestionRecord, request: AskUserQuestionRequest | None) -> None:
        self.record = record
        self.request = request
        self.resolved = Latch()
        self._changed: anyio.Event | None = None  # made only when followed: most questions never are
        self.holders = 0
        self.announced: Stamp | None = None
        """What watchers were last told of it, while a change feed runs (its echo of this process's writes)."""
        self.new = False
        """Created by this process and not yet shown anywhere: no channel needs to look for an earlier delivery."""
        self.stored_delivery: NewDelivery | None = None
        """The delivery stored with the question when it was created, until its channel has shown it."""

    async def wait_changed(self) -> None:
        """Return once the question moves without ending (an approval counted, a reminder sent)."""
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()

    def touch(self, record: QuestionRecord) -> None:
        """The question moved on without ending: wake whoever follows its progress."""
        self.record = record
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    @property
    def id(self) -> str:
        return self.record.id


class HeldQuestions:
    """The questions held here, by id and by the request that asked them; a question leaves once it has ended and
    nothing holds it any more."""

    def __init__(self) -> None:
        self._by_request: dict[int, PendingQuestion] = {}
        self._by_id: dict[str, PendingQuestion] = {}

    def bind(
        self, request: AskUserQuestionRequest, record: QuestionRecord, *, new: bool, stored_delivery: NewDelivery | None
    ) -> PendingQuestion:
        """Tie `request` to the question `record` (`Ledger.bind` says what `new` and `stored_delivery` mean)."""
        pending = self._by_id.get(record.id) or PendingQuestion(record, request)
        pending.new = new
        pending.stored_delivery = stored_delivery
        pending.request = request
        self._by_request[id(request)] = pending
        self._by_id[record.id] = pending
        return pending

    def asked_by(self, request: AskUserQuestionRequest) -> PendingQuestion | None:
        return self._by_request.get(id(request))

    def get(self, question_id: str) -> PendingQuestion | None:
        return self._by_id.get(question_id)

    def ids(self) -> list[str]:
        return list(self._by_id)

    def release(self, pending: PendingQuestion) -> None:
        """One holder is done with it: forget it if it has ended and it was the last."""
        pending.holders -= 1
        if pending.holders <= 0 and pending.resolved.is_set():
            self.forget(pending)

    def settle(self, pending: PendingQuestion, record: QuestionRecord) -> None:
        """The question ended as `record`: wake everything waiting on it here, and forget it unless it is held."""
        pending.record = record
        pending.resolved.set()
        if pending.holders <= 0:
            self.forget(pending)

    def forget(self, pending: PendingQuestion) -> None:
        if pending.request is not None and self._by_request.get(id(pending.request)) is pending:
            del self._by_request[id(pending.request)]
        if self._by_id.get(pending.id) is pending:
            del self._by_id[pending.id]
