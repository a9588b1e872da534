"""Pending questions in memory, backed by the store: the one place where the first answer wins.

Every channel that shows a question (the routed one, and the ones it escalates to) holds the same
`PendingQuestion`; whichever human answers first resolves it in the store, and every holder wakes up to the same
outcome. An answer is committed to the store before anyone is told it was accepted.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import anyio

from bot.answers import normalise_answer, normalise_item
from bot.approvals import approvers
from bot.clock import Clock
from bot.errors import BotErrorCode, HandraiseError
from bot.records import AgentRef, Approval, QuestionRecord, QuestionStatus, Resolution
from bot.store_interface import AsyncStore
from bot.tasks import Latch
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionRequest

log = logging.getLogger(__name__)

ChangeKind = Literal["asked", "partial", "resolved"]
ChangeListener = Callable[[ChangeKind, QuestionRecord], Awaitable[None]]


class UnknownQuestion(HandraiseError, LookupError):
    """No question has that id (a forged or mistyped reference)."""

    code = BotErrorCode.UNKNOWN_QUESTION


class PendingQuestion:
    """One question while something in this process waits on it."""

    __slots__ = ("_changed", "holders", "new", "record", "request", "resolved")  # thousands may wait at once

    def __init__(self, record: QuestionRecord, request: AskUserQuestionRequest | None) -> None:
        self.record = record
        self.request = request
        self.resolved = Latch()
        self._changed: anyio.Event | None = None  # made only when followed: most questions never are
        self.holders = 0
        self.new = False
        """Created by this process and not yet shown anywhere: no channel needs to look for an earlier delivery."""

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


@dataclass(frozen=True)
class PartialResult:
    """What `Ledger.save_partial` did: `record` is the question now, `resolution` is set when it completed it."""

    record: QuestionRecord
    resolution: Resolution | None


@dataclass(frozen=True)
class ApprovalResult:
    """What `Ledger.approve` did: `counted` is False for a second approval by the same person; `resolution` is set
    once the approvals completed the question (or it had ended before)."""

    record: QuestionRecord
    counted: bool
    resolution: Resolution | None


class Ledger:
    def __init__(self, store: AsyncStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._by_request: dict[int, PendingQuestion] = {}
        self._by_id: dict[str, PendingQuestion] = {}
        self._listeners: list[ChangeListener] = []
        self.closing = False
        """Set while the program shuts down: waiting answerers are cancelled, but their questions stay pending."""
        self._waiters: set[anyio.CancelScope] = set()

    # --- holding questions ---------------------------------------------------------------------------------

    def bind(self, request: AskUserQuestionRequest, record: QuestionRecord, *, new: bool = False) -> PendingQuestion:
        """Tie `request` to a question already in the store (asked over the API, or resumed after a restart).

        `new`: the caller has just created it, so it has been delivered nowhere yet.
        """
        pending = self._by_id.get(record.id) or PendingQuestion(record, request)
        pending.new = new
        pending.request = request
        self._by_request[id(request)] = pending
        self._by_id[record.id] = pending
        return pending

    async def hold(self, request: AskUserQuestionRequest) -> PendingQuestion:
        """The question for `request`, recorded on first sight (an in-process ask); release it with `release`."""
        pending = self._by_request.get(id(request))
        if pending is None:
            agent = AgentRef.from_agent(request.agent) if request.agent is not None else None
            record = QuestionRecord(
                agent=agent, questions=list(request.questions), origin="local", created_at=self.clock.now()
            )
            await self.store.create_question(record)
            pending = self.bind(request, record, new=True)
            await self._notify("asked", record)
        pending.holders += 1
        return pending

    def release(self, pending: PendingQuestion) -> None:
        pending.holders -= 1
        if pending.holders <= 0 and pending.resolved.is_set():
            self.forget(pending)

    def forget(self, pending: PendingQuestion) -> None:
        if pending.request is not None and self._by_request.get(id(pending.request)) is pending:
            del self._by_request[id(pending.request)]
        if self._by_id.get(pending.id) is pending:
            del self._by_id[pending.id]

    def get(self, question_id: str) -> PendingQuestion | None:
        return self._by_id.get(question_id)

    # --- resolving -----------------------------------------------------------------------------------------

    async def submit(
        self,
        question_id: str,
        items: Mapping[str, AskUserQuestionAnswerItem] | AskUserQuestionAnswer,
        *,
        by: str | None,
        via: str,
        record: QuestionRecord | None = None,
    ) -> Resolution:
        """Record a human's answer if the question is still pending; the first one wins.

        `record` is the question as the caller has just read it, if it has (its questions never change; the store
        re-reads the status inside the write). Raises UnknownQuestion, or AnswerError when the answer does not fit
        the questions (nothing is recorded).
        """
        if record is None:
            record = await self._record(question_id)
        if isinstance(items, AskUserQuestionAnswer):
            items = {item.id: item for item in items.answers}
        answer = normalise_answer(record.questions, items)
        return await self._resolve(question_id, "answered", known=True, answer=answer, by=by, via=via, seen=record)

    async def save_partial(
        self, question_id: str, item: AskUserQuestionAnswerItem, *, by: str | None, via: str
    ) -> PartialResult:
        """Keep the answer to one question of several; when every question has one, the whole answer is submitted."""
        record = await self._record(question_id)
        question = next((q for q in record.questions if q.id == item.id), None)
        if question is None:
            raise UnknownQuestion(f"question {question_id} has no question {item.id}")
        record = await self.store.save_partial(question_id, normalise_item(question, item), actor=by, channel=via)
        if record.status != "pending":
            return PartialResult(record, Resolution(won=False, record=record))
        await self._notify("partial", record)
        if all(q.id in record.partial for q in record.questions):
            return PartialResult(record, await self.submit(question_id, dict(record.partial), by=by, via=via))
        return PartialResult(record, None)

    async def approve(
        self, question_id: str, item: AskUserQuestionAnswerItem, *, by: str, via: str, identity: str, needed: int
    ) -> ApprovalResult:
        """Count one person's approval; the `needed`-th different one answers the question with `item`, naming
        everyone who approved. Raises UnknownQuestion."""
        await self._record(question_id)
        record, counted = await self.store.add_approval(question_id, Approval(by=by, via=via, identity=identity))
        if record.status != "pending":
            return ApprovalResult(record, counted, Resolution(won=False, record=record))
        if counted:
            if (pending := self._by_id.get(question_id)) is not None:
                pending.touch(record)
            await self._notify("partial", record)
        if len(record.approvals) < needed:
            return ApprovalResult(record, counted, None)
        resolution = await self.submit(question_id, {item.id: item}, by=approvers(record), via=via)
        return ApprovalResult(resolution.record, counted, resolution)

    async def remind(self, question_id: str, channel: str, *, next_at: datetime) -> QuestionRecord | None:
        """Record one reminder on `channel` (None when the question has ended: no reminder then); watchers hear of
        it, so the inbox can mark the question."""
        record = await self.store.remind(question_id, channel, next_at=next_at)
        if record is not None:
            if (pending := self._by_id.get(question_id)) is not None:
                pending.touch(record)
            await self._notify("partial", record)
        return record

    async def resolve(
        self,
        question_id: str,
        status: QuestionStatus,
        *,
        code: str,
        message: str,
        by: str | None = None,
        via: str | None = None,
    ) -> Resolution:
        """End a question without an answer (cancelled, expired, failed) unless something already ended it."""
        return await self._resolve(question_id, status, error_code=code, error_message=message, by=by, via=via)

    async def _resolve(
        self, question_id: str, status: QuestionStatus, *, known: bool = False, **fields: object
    ) -> Resolution:
        if not known:
            await self._record(question_id)  # UnknownQuestion rather than the store's error for a forged id
        resolution = await self.store.resolve(question_id, status, **fields)  # type: ignore[arg-type]
        if resolution.won:
            pending = self._by_id.get(question_id)
            if pending is not None:
                pending.record = resolution.record
                pending.resolved.set()
                if pending.holders <= 0:
                    self.forget(pending)
            await self._notify("resolved", resolution.record)
        return resolution

    async def _record(self, question_id: str) -> QuestionRecord:
        record = await self.store.get_question(question_id)
        if record is None:
            raise UnknownQuestion(f"no question {question_id}")
        return record

    # --- waiting and watching ------------------------------------------------------------------------------

    async def wait(self, question_id: str, seconds: float) -> QuestionRecord:
        """The question's record once it resolves, or as it is after `seconds`. Raises UnknownQuestion."""
        record = await self._record(question_id)
        pending = self._by_id.get(question_id)
        if record.status == "pending" and pending is not None and seconds > 0 and not self.closing:
            # One cancel scope and no tasks per waiter: thousands of agents long-poll at once (bench/flood.py).
            with anyio.move_on_after(seconds) as waiting:
                self._waiters.add(waiting)
                try:
                    await pending.resolved.wait()
                finally:
                    self._waiters.discard(waiting)
            record = await self._record(question_id)
        return record

    def close(self) -> None:
        """The program is stopping: long polls return at once, and waiting answerers leave questions pending."""
        self.closing = True
        for waiting in list(self._waiters):
            waiting.cancel()

    def watch(self, listener: ChangeListener) -> Callable[[], None]:
        """Call `listener(kind, record)` on every new, partially answered or resolved question; returns a disposer."""
        self._listeners.append(listener)

        def dispose() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return dispose

    async def announce(self, record: QuestionRecord) -> None:
        """Tell watchers about a question created outside `hold` (the HTTP API)."""
        await self._notify("asked", record)

    async def _notify(self, kind: ChangeKind, record: QuestionRecord) -> None:
        for listener in list(self._listeners):
            try:
                await listener(kind, record)
            except Exception:
                log.exception("a question watcher failed")
