"""The shared base every channel sits on: routing, delivery bookkeeping, escalation, expiry, the final update, and
(in `bot.channels.replies`) everything that happens when someone answers. A channel itself only renders, delivers, reads
what people do and shows them the outcome.

Escalation is delegation on a timer: after `escalate_after` the answerer calls `next()` while keeping its own
channel open, so the first answer from either channel wins and both are updated.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar

import anyio
from aiohttp import web
from pydantic import BaseModel

from bot.channels.replies import APPROVALS_KEY, RESPONDERS_KEY, Audience, Replies
from bot.errors import BotErrorCode, HandraiseError
from bot.logs.context import log_about
from bot.questions.ledger import Ledger, PendingQuestion
from bot.questions.routing import Route, Router
from bot.questions.status_note import StatusNote
from bot.replicas.replica import Alone, Leadership
from bot.settings.durations import format_duration
from bot.store.records import REMIND_AT_KEY, REMINDED_KEY, AgentRef, Delivery, NewDelivery, QuestionRecord
from core import (
    REQUEST_EVENT,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    Context,
    ErrorCode,
    Next,
    UserQuestionError,
)

log = logging.getLogger(__name__)

CLOSE_OUT_SECONDS = 30
"""How long a channel may take to show the outcome (update a Slack message, send a mail) once the question ends."""
NOTE_SECONDS = 10
"""How long a channel may take to show a status note; the agent's hook has long stopped waiting by then."""


class DeliveryError(HandraiseError, UserQuestionError):
    """A channel could not show the question (Slack said channel_not_found, SMTP refused, …); the agent sees it as
    a UserQuestionError with code DELIVERY_FAILED."""

    code = BotErrorCode.DELIVERY_FAILED

    def __init__(self, message: str) -> None:
        UserQuestionError.__init__(self, message, BotErrorCode.DELIVERY_FAILED)


@dataclass(frozen=True)
class Sent:
    """What a channel returns from `deliver`: the lookup key for replies, and the channel's own typed reference to
    what it sent (a pydantic model it reads back with `Model.model_validate(delivery.ref)` to update it later)."""

    key: str
    ref: BaseModel | None = None


class Channel(Audience, ABC):
    """One way of reaching people. Subclasses render, deliver, turn events into replies and show the outcome; the
    base does the rest (routing, timers, who may answer, first answer wins, audit)."""

    name: ClassVar[str]
    sends_out: ClassVar[bool] = True
    """Whether `deliver` sends something outside handraise (a Slack message, a mail). Only then is the intent to
    deliver recorded first, so that a replica taking the question over after a crash looks for what was sent
    (`find_sent`) before sending again; a channel that shows questions from the store (the web inbox) just shows
    it again."""

    def __init__(self) -> None:
        self._replies: Replies | None = None
        self.leadership: Leadership = Alone()
        """Runs what only one replica may run at a time (a mailbox watcher); the program sets its replica here."""

    def attach(self, replies: Replies) -> None:
        """Called when installed: people's replies are handed to `replies`."""
        self._replies = replies

    @property
    def replies(self) -> Replies:
        """The reply half of the base. Raises RuntimeError before the channel is installed (a programming error)."""
        if self._replies is None:
            raise RuntimeError(f"the {self.name} channel is not installed; install_channel attaches it")
        return self._replies

    @property
    def ledger(self) -> Ledger:
        return self.replies.ledger

    @abstractmethod
    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        """Show the question to the route's people. Raise DeliveryError when that is impossible."""

    def known_delivery(self, question: QuestionRecord) -> Sent | None:
        """What `deliver` will return for `question`, known before it runs, for a channel that sends nothing out:
        then a new API question's delivery here is stored with the question itself, one write instead of two, and
        `deliver` only shows it. Default: keyed by the question's id, with no reference (as the web inbox keeps
        it); None for a channel that sends out (its key is only known once it has sent)."""
        return None if self.sends_out else Sent(key=question.id)

    async def find_sent(self, question: QuestionRecord, route: Route) -> Sent | None:
        """What an earlier `deliver` of this question sent, when one began but its sender died before recording it
        (the replica that takes the question over asks before sending again). Default: None, so it is sent again
        (email sends it under the same Message-ID)."""
        return None

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        """Show the outcome where the question was shown (answered by whom, cancelled, expired). Default: nothing."""

    async def remind(self, question: QuestionRecord, delivery: Delivery, route: Route) -> None:
        """Nudge the route's people about a question still waiting (`route.remind_every`), where it was shown.
        Default: nothing more than what every channel gets (the reminder is counted and audited; the web inbox
        marks the question)."""

    async def show_progress(self, question: QuestionRecord, delivery: Delivery, needed: int) -> None:
        """Show how far a question that needs `needed` approvals has come (`bot.questions.approvals.progress`: "1 of 2
        approvals: Alice") where it is shown. Default: nothing (the approver is told in their reply's outcome)."""

    async def post_note(self, note: StatusNote, route: Route) -> bool:
        """Show a status note (`bot.questions.status_note`) where the route shows the agent's questions, in its
        thread there if it has one, with nothing to answer; True once shown. Default: nothing, and False (a mail
        for every finished turn would be noise; a channel without a place for notes skips them)."""
        return False

    def add_routes(self, app: web.Application) -> None:
        """Mount the HTTP endpoints the channel needs on the program's server (Slack's /slack/events). Default: none."""

    async def prepare(self) -> None:
        """Read or make what the channel keeps in the store (the web inbox's session key), before the server listens:
        the first request already finds it. Default: nothing."""

    async def run(self) -> None:
        """Background work for as long as the channel is installed (watching a mailbox, a socket). Default: none."""

    def links(self, base_url: str) -> Mapping[str, str]:
        """Pages of the channel that `handraise serve` prints at start-up, by what they are. Default: none."""
        return {}

    async def close(self) -> None:
        """The program is stopping: end what `run` and `add_routes` left open (streams, connections). Default: none."""


class ChannelAnswerer:
    """The waterfall listener for one channel."""

    def __init__(self, channel: Channel, router: Router, ledger: Ledger) -> None:
        self.channel = channel
        self.router = router
        self.ledger = ledger
        self._shows_outcome = type(channel).close_out is not Channel.close_out
        self.replies = Replies(channel, ledger, router)
        channel.attach(self.replies)

    @property
    def name(self) -> str:
        return self.channel.name

    def route_for(self, agent: AgentRef | None) -> Route | None:
        return self.router.route(self.name, agent)

    async def post_note(self, note: StatusNote) -> bool:
        """Show `note` here when the agent's questions would come here, bounded in time; a failure is logged."""
        route = self.route_for(note.agent)
        if route is None:
            return False
        try:
            with anyio.fail_after(NOTE_SECONDS):
                return await self.channel.post_note(note, route)
        except Exception as failure:
            self.ledger.observer.send_failed(self.name)
            log.warning("%s could not show a %s note of %s: %s", self.name, note.event, note.agent.id, failure)
            return False

    def delivery_with_question(self, record: QuestionRecord, route: Route) -> NewDelivery | None:
        """The delivery `_deliver` would record for the new question `record`, to store with it, when the channel
        sends nothing out (`Channel.known_delivery`); None otherwise."""
        sent = self.channel.known_delivery(record)
        return None if sent is None else NewDelivery(self.name, sent.key, self._ref(sent, route))

    def only_waits(self, route: Route) -> bool:
        """Whether a question shown here on `route` needs nothing of this answerer until it ends: nothing sent out,
        no timers or approvals to follow, no outcome to show. A new API question that comes here first is then shown
        and held with no task of its own (`RemoteQuestions.ask`): the task would only wait."""
        return not self.channel.sends_out and not self._shows_outcome and _nothing_to_do_meanwhile(route)

    async def show_stored(self, pending: PendingQuestion, route: Route) -> None:
        """Show a new question whose delivery here was stored with it (`delivery_with_question`), as a call of this
        answerer would before it waits."""
        await self._deliver(pending, route)

    async def __call__(self, request: AskUserQuestionRequest, next_: Next) -> AskUserQuestionAnswer:
        # No local for the agent's snapshot: this frame lives as long as the question waits.
        route = self.router.route(self.name, AgentRef.from_agent(request.agent) if request.agent is not None else None)
        if route is None:
            return await next_()
        pending = await self.ledger.hold(request)
        log_about(question_id=pending.id, channel=self.name, agent=_agent_id(request))
        delivered = False
        try:
            await self._deliver(pending, route)
            delivered = True
            if _nothing_to_do_meanwhile(route):
                # No task group and no extra frame: they are most of a waiting question's memory.
                await pending.resolved.wait()
            else:
                await self._wait(pending, route, next_)
            # The outcome is shown to people (and handed to the agent) only once it would survive a power loss. An API
            # question's agent is handed nothing here (it reads the outcome over the API, which waits for the disk
            # itself): with nothing to show either, there is nothing to wait for, and no fsync round to drive.
            if self._shows_outcome or pending.record.origin != "api":
                await self.ledger.store.durable()
        except anyio.get_cancelled_exc_class():
            if self.ledger.closing:
                raise
            with anyio.CancelScope(shield=True):  # the store may wait (PostgreSQL): record it despite the cancel
                await self.ledger.resolve(
                    pending.id,
                    "cancelled",
                    code=ErrorCode.ASK_ABORTED,
                    message="the agent stopped waiting for this question",
                    via=self.name,
                )
            raise
        except DeliveryError as failure:
            self.ledger.observer.send_failed(self.name)
            if pending.holders <= 1:
                await self.ledger.resolve(
                    pending.id, "failed", code=failure.code, message=failure.message, via=self.name
                )
            # Else this channel was an escalation target: the question is still open where it was first shown,
            # and the escalating channel records the failure.
            raise
        finally:
            if delivered and pending.resolved.is_set() and self._shows_outcome:
                with anyio.CancelScope(shield=True):
                    await self._close_out(pending)
            # Else nothing to show: no cancel scope either, which at 10^5 questions stopping at once adds up.
            self.ledger.release(pending)
        return outcome_of(pending.record)

    async def _deliver(self, pending: PendingQuestion, route: Route) -> None:
        store = self.ledger.store
        stored, pending.stored_delivery = pending.stored_delivery, None
        if stored is not None and stored.channel == self.name:
            # Stored with the question (an API ask that came here first): only show it.
            shown = await self.channel.deliver(pending.record, route)
            if shown.key == stored.key and shown.ref is None:
                return
            log.warning(
                "question %s: the %s channel delivered it otherwise than it said it would", pending.id, self.name
            )
            await store.add_delivery(pending.id, self.name, shown.key, self._ref(shown, route))
            return
        if not pending.new and await store.get_delivery(pending.id, self.name) is not None:
            return  # resumed after a restart: the question is already on show
        # Counted until recorded: a click that beats the recording waits for it instead of matching nothing.
        in_flight = self.replies.in_flight
        ticket = in_flight.begin()
        try:
            await self._send_and_record(pending, route)
        finally:
            in_flight.end(ticket)

    async def _send_and_record(self, pending: PendingQuestion, route: Route) -> None:
        store = self.ledger.store
        # The intent, recorded before sending: whoever finds it without a delivery knows a message may be out.
        sent: Sent | None = None
        if self.channel.sends_out and not await store.fire_once(pending.id, f"deliver:{self.name}"):
            sent = await self.channel.find_sent(pending.record, route)
            if sent is None:
                log.warning(
                    "question %s: an earlier %s delivery began but was not recorded; sending it again",
                    pending.id,
                    self.name,
                )
        if sent is None:
            sent = await self.channel.deliver(pending.record, route)
        recording = store.add_delivery(pending.id, self.name, sent.key, self._ref(sent, route))
        if not self.channel.sends_out:
            await recording  # nothing went out that a cancel could leave unrecorded (and a cancel scope costs)
            return
        with anyio.CancelScope(shield=True):  # a message is out: recorded even if the agent stops waiting meanwhile
            await recording

    def _ref(self, sent: Sent, route: Route) -> dict[str, Any]:
        """What a delivery keeps: the channel's reference, and who could answer when it was sent (the fallback once
        the agent is no longer routed here), and when the first reminder is due."""
        ref = sent.ref.model_dump(mode="json") if sent.ref is not None else {}
        ref |= {RESPONDERS_KEY: self.channel.responders(route), APPROVALS_KEY: route.approvals}
        if route.remind_every is not None:
            ref[REMIND_AT_KEY] = (self.ledger.clock.now() + route.remind_every).isoformat()
        return ref

    async def _wait(self, pending: PendingQuestion, route: Route, next_: Next) -> None:
        created = pending.record.created_at
        async with anyio.create_task_group() as group:
            if route.approvals > 1:
                group.start_soon(self._follow_approvals, pending, route.approvals)
            if route.remind_every is not None:
                group.start_soon(self._remind, pending, route, route.remind_every)
            if route.escalate_after is not None:
                group.start_soon(self._escalate, pending, created + route.escalate_after, next_)
            if route.expire_after is not None:
                group.start_soon(self._expire, pending, created + route.expire_after, route)
            await pending.resolved.wait()
            group.cancel_scope.cancel()

    async def _escalate(self, pending: PendingQuestion, when: datetime, next_: Next) -> None:
        await self.ledger.clock.sleep_until(when)
        if pending.resolved.is_set():
            return
        # Escalated once per question: after a restart, or on the replica that took the question over, the next
        # channel is only resumed (it finds its earlier delivery instead of sending again).
        first = await self.ledger.store.fire_once(pending.id, f"escalate:{self.name}")
        if first:
            await self.ledger.store.audit(pending.id, "escalated", channel=self.name)
        try:
            await next_()
        except UserQuestionError as failure:
            if failure.code == ErrorCode.NO_PROVIDER:
                log.warning("question %s: %s escalated but no later answerer takes it", pending.id, self.name)
            elif not pending.resolved.is_set():
                log.warning("question %s: escalation from %s failed: %s", pending.id, self.name, failure.message)
            detail = {"code": failure.code, "message": failure.message}
            if first and not pending.resolved.is_set():
                detail |= {"escalation": True}
                await self.ledger.store.audit(pending.id, "failed", channel=self.name, detail=detail)
        except Exception:
            # The escalation target broke; the question is still open here, so keep waiting rather than fail it.
            log.exception("question %s: escalation from %s failed", pending.id, self.name)

    async def _follow_approvals(self, pending: PendingQuestion, needed: int) -> None:
        while True:
            await pending.wait_changed()
            record = pending.record
            delivery = await self.ledger.store.get_delivery(pending.id, self.name)
            if delivery is None or record.status != "pending" or not record.approvals:
                continue
            await self._bounded(
                pending.id, "show the approvals so far", self.channel.show_progress(record, delivery, needed)
            )

    async def _remind(self, pending: PendingQuestion, route: Route, every: timedelta) -> None:
        # The count and the next due time live with the delivery, so a restart neither repeats nor skips one.
        store, clock = self.ledger.store, self.ledger.clock
        while True:
            delivery = await store.get_delivery(pending.id, self.name)
            if delivery is None or int(delivery.ref.get(REMINDED_KEY, 0)) >= route.remind_max:
                return
            due = _moment(delivery.ref.get(REMIND_AT_KEY)) or clock.now() + every
            await clock.sleep_until(due)
            if pending.resolved.is_set():
                return
            record = await self.ledger.remind(pending.id, self.name, next_at=max(due, clock.now()) + every)
            if record is None:
                return  # it ended meanwhile: never remind about a question that is over
            await self._bounded(pending.id, "send a reminder", self.channel.remind(record, delivery, route))

    async def _expire(self, pending: PendingQuestion, when: datetime, route: Route) -> None:
        await self.ledger.clock.sleep_until(when)
        assert route.expire_after is not None
        await self.ledger.resolve(
            pending.id,
            "expired",
            code=ErrorCode.ASK_TIMEOUT,
            message=f"nobody answered within {format_duration(route.expire_after)}",
            via=self.name,
        )

    async def _close_out(self, pending: PendingQuestion) -> None:
        # The delivery is read back only now: a waiting question should not hold it in memory for hours.
        delivery = await self.ledger.store.get_delivery(pending.id, self.name)
        if delivery is None:
            return
        await self._bounded(pending.id, "show the outcome", self.channel.close_out(pending.record, delivery))

    async def _bounded(self, question_id: str, what: str, shown: Awaitable[None]) -> None:
        """Let the channel show something, bounded in time; a failure is logged and never fails the question."""
        try:
            with anyio.fail_after(CLOSE_OUT_SECONDS):
                await shown
        except Exception:
            self.ledger.observer.send_failed(self.name)
            log.exception("question %s: %s could not %s", question_id, self.name, what)


def _agent_id(request: AskUserQuestionRequest) -> str | None:
    """The asking agent's id, for log lines about its question."""
    return request.agent.id if request.agent is not None else None


def _moment(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _nothing_to_do_meanwhile(route: Route) -> bool:
    """Whether a question on this route only waits: no escalation, expiry or reminders, no approvals to count."""
    timers = (route.escalate_after, route.expire_after, route.remind_every)
    return all(timer is None for timer in timers) and route.approvals == 1


def outcome_of(record: QuestionRecord) -> AskUserQuestionAnswer:
    """The answer of a resolved question, or the UserQuestionError that ended it."""
    if record.status == "answered" and record.answer is not None:
        return record.answer
    code = record.error_code or ErrorCode.ASK_CANCELLED
    raise UserQuestionError(record.error_message or f"the question was {record.status}", code)


def install_channel(ctx: Context, channel: Channel, router: Router, ledger: Ledger) -> ChannelAnswerer:
    """Register `channel` as an answerer on `ctx` (use inside a plugin so disposal removes it)."""
    answerer = ChannelAnswerer(channel, router, ledger)
    ctx.on(REQUEST_EVENT, answerer)
    # The ledger lists its answerers in the same order, for a new API question to meet its first one at once.
    ledger.answerers.append(answerer)
    ctx.on_dispose(lambda: ledger.answerers.remove(answerer) if answerer in ledger.answerers else None)
    return answerer
