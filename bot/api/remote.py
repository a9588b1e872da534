"""Questions asked by agents in other processes (over the HTTP API or `handraise ask`).

A remote agent is treated as a runtime root identified by its `agent.id`: the process that owns it is not ours to
inspect, so each question enters a fresh `Agent` as a root for as long as it waits. Such questions are durable: after
a restart they are resumed from the store, and channels find their earlier deliveries instead of sending again.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio

from bot.errors import BotErrorCode
from bot.logs.context import log_about
from bot.questions.ledger import Answering, Ledger
from bot.questions.routing import Route, Router
from bot.questions.tasks import TaskBag
from bot.store.errors import StoreUnavailable
from bot.store.records import AgentRef, NewDelivery, QuestionRecord, QuestionStatus, Resolution
from core import (
    Agent,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    Context,
    ErrorCode,
    UserQuestionError,
    UserQuestionService,
    no_provider,
)

log = logging.getLogger(__name__)

STORE_RETRY_SECONDS = 2.0

STATUS_OF_ERROR: dict[str, QuestionStatus] = {
    ErrorCode.ASK_TIMEOUT: "expired",
    ErrorCode.ASK_ABORTED: "cancelled",
    ErrorCode.ASK_CANCELLED: "cancelled",
}


class Stopping(StoreUnavailable):
    """An ask reached a `serve` process that is stopping (shut down, or its lease was lost): nothing was stored, so
    the agent may ask again (answered 503, like a store that cannot write)."""

    code = BotErrorCode.STOPPING


class RemoteQuestions:
    def __init__(
        self, ctx: Context, ledger: Ledger, router: Router, tasks: TaskBag, *, store_retry: float = STORE_RETRY_SECONDS
    ) -> None:
        self.store_retry = store_retry
        """Seconds between attempts to deliver a question while the store cannot be written."""
        self._store_down = False
        self._ctx = ctx
        self._ledger = ledger
        self._router = router
        self._tasks = tasks
        self._running: set[str] = set()

    async def ask(
        self, questions: list[AskUserQuestionItem], agent: AgentRef | None, *, permission: dict[str, Any] | None = None
    ) -> QuestionRecord:
        """Check, record and start asking; returns the pending record at once. `permission` is the coding agent's
        permission prompt the question asks (`POST /v1/permissions`), kept with it for what "Always allow" learns.

        Raises UserQuestionError for what `ask()` would refuse (EMPTY_QUESTIONS, BAD_INTENT) and NO_PROVIDER when no
        configured channel takes this agent's questions, and Stopping while this process stops — before anything is
        stored.
        """
        if self._ledger.closing:
            raise Stopping(
                "this handraise replica is stopping; nothing was asked; ask again (another replica, or this one "
                "once it is started again)"
            )
        request = AskUserQuestionRequest(questions=questions)
        self._service().check(request)
        if not self._router.takes(agent):
            raise no_provider()
        record = QuestionRecord(
            agent=agent, questions=questions, origin="api", created_at=self._ledger.clock.now(), permission=permission
        )
        first = self._first_answerer(record.agent)
        delivery = first[0].delivery_with_question(record, first[1]) if first is not None else None
        started = time.perf_counter()
        await self._ledger.store.create_question(record, delivery)
        await self._ledger.announce(record, time.perf_counter() - started)
        if self._ledger.closing:  # stored and pending: the next owner (or this one restarted) runs it
            return record
        if first is not None and delivery is not None and first[0].only_waits(first[1]):
            await self._show_and_hold(first[0], first[1], record, request, delivery)
        else:
            self._start(record, new=True, request=request, delivery=delivery)
        return record

    def _first_answerer(self, agent: AgentRef | None) -> tuple[Answering, Route] | None:
        """The first answerer of the waterfall that takes `agent`'s questions, with its route; the ledger lists the
        answerers in the waterfall's order."""
        for answerer in self._ledger.answerers:
            route = answerer.route_for(agent)
            if route is not None:
                return answerer, route
        return None

    async def _show_and_hold(
        self,
        answerer: Answering,
        route: Route,
        record: QuestionRecord,
        request: AskUserQuestionRequest,
        delivery: NewDelivery,
    ) -> None:
        """Show a new question where its delivery was stored, and hold it here until it ends, with no task: its
        first answerer only waits (`only_waits`), and an answer, a cancel or a long poll finds the held copy. When
        showing fails the question takes the usual way (a task that shows it again and deals with the failure: a
        store that cannot write is retried), so nothing acknowledged is left unshown."""
        pending = self._ledger.bind(request, record, new=True, stored_delivery=delivery)
        try:
            await answerer.show_stored(pending, route)
        except BaseException as failure:
            self._start(record, new=True, request=request, delivery=delivery)
            if not isinstance(failure, Exception):
                raise  # cancelled: the task shows it all the same

    def resume(self, records: list[QuestionRecord]) -> int:
        """Start waiting again for the pending API questions among `records` (this replica's, from the store: after
        a restart, or taken over from a dead replica); returns how many. Channels find their earlier deliveries."""
        resumed = 0
        for record in records:
            if record.origin == "api" and record.id not in self._running:
                self._start(record)
                resumed += 1
        return resumed

    async def cancel(self, question_id: str, *, by: str | None = None) -> Resolution:
        """Cancel a pending question; every channel holding it wakes to the cancellation and retracts it.

        Raises UnknownQuestion for an unknown id.
        """
        return await self._ledger.resolve(
            question_id,
            "cancelled",
            code=ErrorCode.ASK_CANCELLED,
            message="the question was cancelled",
            by=by,
            via="api",
        )

    def _service(self) -> UserQuestionService:
        service = self._ctx.user_questions
        if service is None:
            raise RuntimeError("the user-questions service is not installed")
        return service

    def _start(
        self,
        record: QuestionRecord,
        *,
        new: bool = False,
        request: AskUserQuestionRequest | None = None,
        delivery: NewDelivery | None = None,
    ) -> None:
        # No AbortController: a cancel resolves the question in the ledger, which wakes every channel holding it.
        self._running.add(record.id)
        self._tasks.spawn(self._run, record, new, request, delivery)

    async def _run(
        self,
        record: QuestionRecord,
        new: bool,
        request: AskUserQuestionRequest | None,
        delivery: NewDelivery | None,
    ) -> None:
        question_id = record.id
        log_about(question_id=question_id, agent=record.agent.id if record.agent is not None else None)
        try:
            while True:
                try:
                    await self._ask_once(record, new, request, delivery)
                    self._store_down = False
                    return
                except StoreUnavailable as down:
                    # The question is stored (it was acknowledged), but could not be delivered or resolved: keep
                    # it, and try again until the store works, without a restart.
                    if not self._store_down:
                        log.warning("%s; pending questions are retried every %g s", down.message, self.store_retry)
                    self._store_down = True
                await anyio.sleep(self.store_retry)
                try:
                    current = await self._ledger.store.get_question(question_id)
                except StoreUnavailable:
                    continue
                if current is None or current.status != "pending":
                    held = self._ledger.get(question_id)
                    if held is not None and current is not None:  # bound before the store failed: wake its waiters
                        await self._ledger.read_back(held, current)
                    return
                # A channel may have shown it before the store failed (and the delivery stored with it is stored).
                record, new, delivery = current, False, None
        finally:
            self._running.discard(question_id)

    async def _ask_once(
        self,
        record: QuestionRecord,
        new: bool,
        request: AskUserQuestionRequest | None,
        delivery: NewDelivery | None,
    ) -> None:
        """One waterfall for the question. `request` is the one `ask` checked (agentless: the agent's live object
        is made here), None for a resumed question; `delivery` the one stored with the question, if any."""
        agent: Agent | None = None
        leave = _nothing
        registry = self._ctx.agents
        if record.agent is not None and registry is not None:
            agent = Agent(record.agent.id, name=record.agent.name, labels=record.agent.labels)
            leave = registry.enter(agent)
        if request is None:
            request = AskUserQuestionRequest(questions=record.questions, agent=agent)
        elif agent is not None:
            request = request.model_copy(update={"agent": agent})  # its questions are checked already
        pending = self._ledger.bind(request, record, new=new, stored_delivery=delivery)
        try:
            if not new and not await self._ledger.read_back(pending):
                return  # answered (or ended) between the read that resumed it and now: nothing left to ask
            await self._service().ask(request)
        except UserQuestionError as failure:
            status = STATUS_OF_ERROR.get(failure.code, "failed")
            await self._ledger.resolve(record.id, status, code=failure.code, message=failure.message)
        except StoreUnavailable:
            raise
        except Exception as failure:
            log.exception("question %s failed", record.id)
            await self._ledger.resolve(record.id, "failed", code="INTERNAL", message=f"handraise failed: {failure}")
        finally:
            leave()


def _nothing() -> None:
    return None
