"""Pending questions in memory, backed by the store: the one place where the first answer wins.

Every channel that shows a question (the routed one, and the ones it escalates to) holds the same
`PendingQuestion`; whichever human answers first resolves it in the store, and every holder wakes up to the same
outcome. An answer is committed to the store before anyone is told it was accepted.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

import anyio

from bot.errors import BotErrorCode, HandraiseError
from bot.questions.answers import normalise_answer, normalise_item
from bot.questions.approvals import approvers
from bot.questions.clock import Clock
from bot.questions.ledger_feed import Stamp, Stored, Told, Watches, ahead, stamp
from bot.questions.routing import Route
from bot.questions.tasks import Latch
from bot.store.interface import AsyncStore
from bot.store.records import AgentRef, Approval, Delivery, NewDelivery, QuestionRecord, QuestionStatus, Resolution
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionRequest

log = logging.getLogger(__name__)

ChangeKind = Literal["asked", "partial", "resolved"]
ChangeListener = Callable[[ChangeKind, QuestionRecord], Awaitable[None]]
ShownListener = Callable[[str, QuestionRecord], Awaitable[None]]
"""Called with a channel's name when another replica has shown a question there."""


class UnknownQuestion(HandraiseError, LookupError):
    """No question has that id (a forged or mistyped reference)."""

    code = BotErrorCode.UNKNOWN_QUESTION


class Answering(Protocol):
    """A channel's answerer installed with the ledger (`bot.channels.base.ChannelAnswerer`), as a new question meets
    it."""

    def route_for(self, agent: AgentRef | None) -> Route | None:
        """Its route for `agent`'s questions; None when they pass it by."""
        ...

    def delivery_with_question(self, record: QuestionRecord, route: Route) -> NewDelivery | None:
        """The delivery to store with the new question `record` when showing it only takes that row; else None."""
        ...


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
        self._shown_listeners: list[ShownListener] = []
        self.following = False
        """Set while a change feed runs: other replicas change the store too, and `refresh` hears of it."""
        self._told = Told()
        self._watches = Watches()
        self.answerers: list[Answering] = []
        """The channels' answerers installed with this ledger, in waterfall order
        (`bot.channels.base.install_channel`)."""

    # --- holding questions ---------------------------------------------------------------------------------

    def bind(
        self,
        request: AskUserQuestionRequest,
        record: QuestionRecord,
        *,
        new: bool = False,
        stored_delivery: NewDelivery | None = None,
    ) -> PendingQuestion:
        """Tie `request` to a question already in the store (asked over the API, or resumed after a restart).

        `new`: the caller has just created it, so it has been delivered nowhere yet but `stored_delivery` (stored
        with it, for its first channel to show).
        """
        pending = self._by_id.get(record.id) or PendingQuestion(record, request)
        pending.new = new
        pending.stored_delivery = stored_delivery
        pending.request = request
        self._by_request[id(request)] = pending
        self._by_id[record.id] = pending
        self._told.held(record.id)
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

    def held_ids(self) -> list[str]:
        """The questions held here (asked here, or resumed): this replica runs them."""
        return list(self._by_id)

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
        if (pending := self._by_id.get(question_id)) is not None:
            pending.record = record  # without waking its followers: they follow approvals and reminders
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
        record = await self.current(question_id)
        if record is None:
            raise UnknownQuestion(f"no question {question_id}")
        return record

    async def current(self, question_id: str) -> QuestionRecord | None:
        """The question as the store has it now, None for an unknown id.

        Without a change feed this process makes every change to the store, each through this ledger, which keeps
        the record of a question it holds up to date: that one is not read back. (A feed stops only once the ledger
        is closing: from then on the store is read again.)
        """
        pending = self._by_id.get(question_id)
        if pending is not None and not self.following and not self.closing:
            return pending.record
        return await self.store.get_question(question_id)

    async def delivered(self, channel: str, key: str) -> tuple[QuestionRecord, Delivery] | None:
        """The delivery on `channel` that a reply refers to by its lookup key, and its question as it is now (as
        `current` has it); None when there is none.

        While the store is read for the question anyway (a change feed runs, or the ledger is closing), one read
        returns both. Otherwise the record of a question held here is the ledger's own copy, which costs no read.
        """
        if self.following or self.closing:
            return await self.store.find_delivery_with_question(channel, key)
        delivery = await self.store.find_delivery(channel, key)
        if delivery is None:
            return None
        record = await self.current(delivery.question_id)
        return (record, delivery) if record is not None else None

    # --- waiting and watching ------------------------------------------------------------------------------

    async def wait(self, question_id: str, seconds: float) -> QuestionRecord:
        """The question's record once it resolves, or as it is after `seconds`. Raises UnknownQuestion.

        While a change feed runs, this works for a question another replica holds too (agents long-poll any replica):
        the feed wakes it. Without one, a question this process does not hold cannot end meanwhile: it returns at once.
        """
        # Watching before reading: an end the feed hears of during the read still wakes this wait.
        watch = self._watches.add(question_id) if self.following and seconds > 0 and not self.closing else None
        try:
            record = await self._record(question_id)
            pending = self._by_id.get(question_id)
            latch = pending.resolved if pending is not None else watch.latch if watch is not None else None
            if record.status == "pending" and latch is not None and seconds > 0 and not self.closing:
                # One cancel scope and no tasks per waiter: thousands of agents long-poll at once (bench/flood.py).
                with anyio.move_on_after(seconds) as waiting:
                    self._waiters.add(waiting)
                    try:
                        await latch.wait()
                    finally:
                        self._waiters.discard(waiting)
                record = await self._record(question_id)
            return record
        finally:
            if watch is not None:
                self._watches.discard(question_id, watch)

    # --- other replicas' changes ---------------------------------------------------------------------------------

    async def refresh(self, changes: Iterable[Stored]) -> None:
        """Catch up with questions as the store has them now (the change feed's reads; other replicas wrote them).

        Ended: local holders and long polls wake, watchers hear "resolved". Moved on: holders are touched, watchers
        hear "partial". Never seen: "asked", and shown listeners hear of each channel showing it. Idempotent: what
        this process already announced (its own writes come back through the feed) is not announced again.
        """
        self._told.forget_old_ends()
        for stored in changes:
            record = stored.record
            pending = self._by_id.get(record.id)
            if record.status != "pending":
                self._watches.wake(record.id)
                if pending is not None and not pending.resolved.is_set():
                    pending.record = record
                    pending.resolved.set()
                    if pending.holders <= 0:
                        self.forget(pending)
                elif pending is not None or self._told.ended(record.id):
                    continue  # this process ended it, or heard of it already
                self._noted("resolved", record)
                await self._tell("resolved", record)
            elif pending is not None:
                # The owner shows it itself: only the record can have moved (a partial answer, an approval).
                now = stamp(record)
                if not pending.resolved.is_set() and ahead(now, pending.announced or stamp(pending.record)):
                    pending.touch(record)
                    pending.announced = now
                    await self._tell("partial", record)
            elif not self._told.ended(record.id):
                await self._refresh_unheld(stored)

    async def _refresh_unheld(self, stored: Stored) -> None:
        record = stored.record
        new, moved, shown = self._told.read(stored)
        if new or moved:
            await self._tell("asked" if new else "partial", record)
        for channel in shown:
            for listener in list(self._shown_listeners):
                try:
                    await listener(channel, record)
                except Exception:
                    log.exception("a question watcher failed")

    def _noted(self, kind: ChangeKind, record: QuestionRecord) -> bool:
        """Remember what watchers are told, so that the change feed's echo of it is not news; False when it is not
        news any more (the echo of this process's own write was heard before the write returned)."""
        if kind == "resolved":
            self._watches.wake(record.id)
            return self._told.end(record.id)
        if (pending := self._by_id.get(record.id)) is None:
            return self._told.move(record)
        now = stamp(record)
        if pending.announced is not None and not ahead(now, pending.announced):
            return False
        pending.announced = now
        return True

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

    def watch_shown(self, listener: ShownListener) -> Callable[[], None]:
        """Call `listener(channel, record)` when the change feed finds a question shown on `channel` by another
        replica (this process's own channels show theirs themselves); returns a disposer."""
        self._shown_listeners.append(listener)

        def dispose() -> None:
            if listener in self._shown_listeners:
                self._shown_listeners.remove(listener)

        return dispose

    async def announce(self, record: QuestionRecord) -> None:
        """Tell watchers about a question created outside `hold` (the HTTP API)."""
        await self._notify("asked", record)

    async def _notify(self, kind: ChangeKind, record: QuestionRecord) -> None:
        if self.following and not self._noted(kind, record):
            return
        await self._tell(kind, record)

    async def _tell(self, kind: ChangeKind, record: QuestionRecord) -> None:
        for listener in list(self._listeners):
            try:
                await listener(kind, record)
            except Exception:
                log.exception("a question watcher failed")
