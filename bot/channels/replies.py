"""The reply half of the shared base: what happens when a person answers, whichever channel they answered in.

A channel turns an event (a click, a mail, a form) into a call to `Replies.answer` with the delivery it refers to,
who acted, and a reader that turns the event into answer items once the question is known. The base finds the
question, checks the person against the route's responders (one allow-list matcher; channels add user groups),
reads, keeps partial answers, lets the first valid answer win, audits refusals and late answers, and returns a typed
`Outcome` that the channel shows the person. A channel keeps only: event → read → hand over → show the outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import anyio

from bot.channels.addresses import address_matches, normal_address
from bot.channels.in_flight import DeliveriesInFlight, until_recorded
from bot.errors import BotErrorCode, HandraiseError
from bot.questions.answers import AnswerError
from bot.questions.approvals import approval_item, progress
from bot.questions.ledger import Ledger, UnknownQuestion
from bot.questions.routing import Route, Router
from bot.store.records import Delivery, QuestionRecord
from core import AskUserQuestionAnswerItem

log = logging.getLogger(__name__)

Items = Mapping[str, AskUserQuestionAnswerItem]

RESPONDERS_KEY = "responders"
"""Where the base keeps, beside a channel's own delivery reference, who could answer when the question was sent."""
APPROVALS_KEY = "approvals"
"""Likewise, how many approvals the question needed."""
RECORDING_WAIT_SECONDS = 5.0
"""How long an event that matches no delivery waits for its question's delivery to be recorded (a click within
milliseconds of the post) before the person is asked to try again."""
TRY_AGAIN = "handraise could not find this question yet; try again in a moment."


@dataclass(frozen=True)
class Answer:
    """What a reader found in a reply: answer items by question id.

    `partial` keeps them as answers to some of the questions until every question has one (email answers a batch
    over several mails); otherwise a question with no item is answered as skipped.
    """

    items: Items
    partial: bool = False
    problems: tuple[str, ...] = ()
    """What could not be read: the items that could are still kept (with `partial`), and the person is told."""


Reader = Callable[[QuestionRecord, Delivery], "Answer | None"]
"""Reads a reply once its question is known. Returns None when the event answers nothing (a selection kept for
later, a form to open); raises a HandraiseError (ReplyError, FormError, …) whose message tells the person what to
send instead."""


class ReplyError(HandraiseError, ValueError):
    """What a person sent cannot be read as an answer; the message tells them what to send instead."""

    code = BotErrorCode.UNREADABLE_REPLY


class ReplyProblems(HandraiseError, ValueError):
    """Several things in one reply could not be read."""

    code = BotErrorCode.UNREADABLE_REPLY

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


# --- outcomes ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accepted:
    """The reply was recorded. `complete` when it answered the question; else the answers so far are kept and
    `still_open` names the questions that wait for one, or (`needed` > 1) the approvals so far are in
    `record.approvals`. `repeated` when it was the same person approving again (it counted once)."""

    record: QuestionRecord
    complete: bool = True
    still_open: tuple[str, ...] = ()
    needed: int = 1
    repeated: bool = False

    @property
    def progress(self) -> str | None:
        """While a question waits for more approvals, how far they have come ("1 of 2 approvals: U0ALICE")."""
        return progress(self.record, self.needed) if self.needed > 1 else None


@dataclass(frozen=True)
class Ended:
    """Too late: the question was already answered (`record.answered_by` at `record.resolved_at`) or closed
    (cancelled, expired, failed). `record` is None when no open question matches the reply at all."""

    record: QuestionRecord | None

    @property
    def answered(self) -> bool:
        return self.record is not None and self.record.status == "answered"


@dataclass(frozen=True)
class Unmatched(Ended):
    """An event certainly about a question (a click on one of its buttons) whose delivery was still not recorded
    after waiting for it: nothing changed, one line is logged, and the channel tells the person `notice` (try
    again). A channel that shows only `Ended` says "no longer open" instead."""

    how: str = ""
    key: str = ""
    notice: ClassVar[str] = TRY_AGAIN


@dataclass(frozen=True)
class NotAllowed:
    """The person is not one of `responders`; nothing changed, and the refusal is in the audit log."""

    record: QuestionRecord
    person: str
    responders: tuple[str, ...]


@dataclass(frozen=True)
class Unreadable:
    """The reply could not be read as an answer; `reason` says what to send instead. Nothing changed."""

    record: QuestionRecord
    reason: str
    problems: tuple[str, ...] = ()
    error: Exception | None = None
    """What the reader raised, for a channel that shows more than the reason (Slack's per-field form errors)."""


@dataclass(frozen=True)
class Noted:
    """The event answers nothing yet (a selection kept for Submit, a form to open); the question is `record`."""

    record: QuestionRecord


Outcome = Accepted | Ended | NotAllowed | Unreadable | Noted
"""`Unmatched` is an `Ended` with no record."""


# --- the base's side --------------------------------------------------------------------------------------------------


def is_allowed(person: str, responders: Sequence[str], groups: Mapping[str, frozenset[str]] | None = None) -> bool:
    """Whether `person` may answer: anyone when `responders` is empty; else an entry equal to them (ignoring case),
    a `@domain` entry for an address at that domain, or a group in `groups` (by entry) that holds them."""
    if not responders:
        return True
    for entry in responders:
        if address_matches(entry, person):
            return True
        if groups is not None and person in groups.get(entry, frozenset()):
            return True
    return False


class Audience:
    """A channel as its people see it: its name, who may answer on a route, who is in a group, and who a person is.
    `Channel` is one; the reply half needs no more of its channel, and so sits below the outbound base."""

    name: ClassVar[str]

    def responders(self, route: Route) -> list[str]:
        """Who may answer on this route, as this channel reads it. Default: the route's responders (anyone when
        there are none)."""
        return route.responders

    async def members(self, entry: str) -> frozenset[str] | None:
        """The people in group `entry` of a responders list (a Slack user group), or None when it is no group."""
        return None

    async def identity(self, person: str) -> str:
        """Who `person` is across channels, so that one person approving twice counts once: an email address when
        the channel can tell (Slack reads the user's profile). Default: `person` as the channel names them."""
        return person


class Replies:
    """The reply half for one installed channel: its ledger (store, first-answer-wins) and the router that says who
    may answer, read at answer time so that removing a responder from the config takes effect at once."""

    def __init__(self, channel: Audience, ledger: Ledger, router: Router) -> None:
        self.channel = channel
        self.ledger = ledger
        self.router = router
        self.in_flight = DeliveriesInFlight()
        """The channel's deliveries sent but not yet recorded (the outbound base counts them)."""
        self.recording_wait = RECORDING_WAIT_SECONDS
        self.awaiting = 0
        """How many events wait now for their question's delivery to be recorded."""

    async def delivered(self, key: str, question_id: str | None = None) -> tuple[QuestionRecord, Delivery] | None:
        """The question and delivery a reply refers to by the channel's lookup key; None when there is none (or it
        belongs to another question than `question_id`)."""
        found = await self.ledger.delivered(self.channel.name, key)
        if found is None or (question_id is not None and found[1].question_id != question_id):
            return None
        return found

    async def find(
        self, key: str, question_id: str | None = None, *, expected: bool = True
    ) -> tuple[QuestionRecord, Delivery] | None:
        """Like `delivered`, but an event can beat its question's recording (a click within milliseconds of the
        post): when nothing matches and `expected` (the event is certainly about a question, a click on one of its
        buttons), wait up to `recording_wait` for the deliveries in flight, and with replicas for the store."""
        found = await self.delivered(key, question_id)
        if found is not None or not expected:
            return found
        self.awaiting += 1
        try:
            with anyio.move_on_after(self.recording_wait):
                return await until_recorded(
                    self.in_flight, lambda: self.delivered(key, question_id), other_processes=self.ledger.following
                )
        finally:
            self.awaiting -= 1
        return None

    async def recorded(self) -> None:
        """Wait (at most `recording_wait`) until the deliveries in flight now are recorded: for a channel that finds
        an event's questions otherwise than by its key (Slack lists the questions open in a reply's thread)."""
        ticket = self.in_flight.newest()
        if ticket is None:
            return
        self.awaiting += 1
        try:
            with anyio.move_on_after(self.recording_wait):
                await self.in_flight.ended(ticket)
        finally:
            self.awaiting -= 1

    async def responders(self, record: QuestionRecord, delivery: Delivery | None = None) -> list[str]:
        """Who may answer `record` here: the current route's responders (as the channel reads a route), or those
        kept with the delivery when the agent is no longer routed here."""
        route = self.router.route(self.channel.name, record.agent)
        if route is not None:
            return self.channel.responders(route)
        if delivery is None:
            delivery = await self.ledger.store.get_delivery(record.id, self.channel.name)
        stored = delivery.ref.get(RESPONDERS_KEY) if delivery is not None else None
        return [str(entry) for entry in stored] if isinstance(stored, list) else []

    def approvals_needed(self, record: QuestionRecord, delivery: Delivery | None = None) -> int:
        """How many approvals the route wants (as kept with the delivery once the agent is no longer routed here)."""
        route = self.router.route(self.channel.name, record.agent)
        if route is not None:
            return route.approvals
        stored = delivery.ref.get(APPROVALS_KEY) if delivery is not None else None
        return stored if isinstance(stored, int) and stored > 0 else 1

    async def may_answer(
        self, person: str, responders: Sequence[str], known: dict[str, frozenset[str] | None] | None = None
    ) -> bool:
        """The allow-list check; the channel's `members` hook expands its groups (Slack user groups).

        `known` keeps the groups looked up across several checks (one listing of many questions): a group that
        cannot be read is then asked for once, not once per question, each waiting out its time limit.
        """
        if is_allowed(person, responders):
            return True
        known = {} if known is None else known
        groups: dict[str, frozenset[str]] = {}
        for entry in responders:
            if entry not in known:
                known[entry] = await self.channel.members(entry)
            members = known[entry]
            if members is not None:
                groups[entry] = members
        return bool(groups) and is_allowed(person, responders, groups)

    async def refuse(self, record: QuestionRecord, person: str | None, reason: str, **detail: Any) -> None:
        """Audit a reply that does not count (not a responder, an auto-reply, a bounce, …); nothing else changes."""
        await self.ledger.store.audit(
            record.id, "refused", channel=self.channel.name, actor=person or None, detail={"reason": reason} | detail
        )

    async def answer(
        self,
        key: str,
        *,
        by: str,
        how: str,
        read: Reader,
        question_id: str | None = None,
        found: tuple[QuestionRecord, Delivery] | None = None,
        expected: bool = True,
        **detail: Any,
    ) -> Outcome:
        """Hand over one person's reply: find its question, check who they are, read it, record it.

        `key` is the delivery's lookup key, `by` who acted (as the channel names people), `how` what they did
        ("click", "thread reply", "mail", …) for the audit log, `detail` more for a refusal's audit entry. A channel
        that already looked the delivery up passes it as `found`. `expected` (the default) says the event is
        certainly about a question: one that matches none yet waits for its recording (`find`), and is `Unmatched`
        (logged) when it never comes; pass False for an event that may be about anything (a reply to any of the
        bot's messages), which is then `Ended(None)` at once.
        """
        found = found or await self.find(key, question_id, expected=expected)
        if found is None:
            if not expected:
                return Ended(None)
            log.warning(
                "%s: a %s on %r matched no question (no delivery with that key was recorded within %gs); "
                "the person was asked to try again",
                self.channel.name,
                how,
                key,
                self.recording_wait,
            )
            return Unmatched(None, how, key)
        record, delivery = found
        responders = await self.responders(record, delivery)
        if not await self.may_answer(by, responders):
            await self.refuse(record, by, "not-a-responder", via=how, **detail)
            return NotAllowed(record, by, tuple(responders))
        try:
            answer = read(record, delivery)
        except (HandraiseError, ValueError) as problem:
            return await self._unreadable(record, by, how, problem)
        if answer is None:
            return Noted(record)
        if not answer.items and not answer.problems and record.status != "pending":
            return Ended(record)
        # Only a route that wants several approvals counts them; else an approval is an answer like any other.
        needed = self.approvals_needed(record, delivery)
        approval = approval_item(record, answer.items) if needed > 1 else None
        # Late answers go to the ledger too: it tells who won, and the store audits them as duplicates.
        try:
            if approval is not None:
                outcome = await self._approve(record, approval, by, needed)
            else:
                outcome = await self._record(record, answer, by)
        except AnswerError as problem:
            return await self._unreadable(record, by, how, problem)
        except UnknownQuestion:
            return Ended(None)
        # Whatever was recorded is on disk before anyone is told (and before a mail is flagged \Seen).
        await self.ledger.store.durable()
        if approval is not None:
            return outcome
        if answer.problems and isinstance(outcome, Accepted) and not outcome.complete:
            return await self._unreadable(outcome.record, by, how, ReplyProblems(answer.problems))
        return outcome

    async def _unreadable(self, record: QuestionRecord, by: str, how: str, problem: Exception) -> Outcome:
        if record.status != "pending":
            return Ended(record)  # that it is too late matters more than what was wrong with the reply
        reason = str(problem)
        problems = tuple(getattr(problem, "problems", ()) or (reason,))
        await self.refuse(record, by, "unreadable", via=how, problems=list(problems))
        return Unreadable(record, reason, problems, problem)

    async def _record(self, record: QuestionRecord, answer: Answer, by: str) -> Outcome:
        ledger, via = self.ledger, self.channel.name
        if answer.partial:
            merged = {**record.partial, **answer.items}
            if not answer.items or not {q.id for q in record.questions} <= set(merged):
                current = record
                for item in answer.items.values():
                    result = await ledger.save_partial(record.id, item, by=by, via=via)
                    current = result.record
                    if result.resolution is not None:
                        return _resolved(result.resolution.won, result.resolution.record)
                still_open = tuple(q.id for q in current.questions if q.id not in current.partial)
                return Accepted(current, complete=False, still_open=still_open)
            items: Items = merged
        else:
            items = answer.items
        resolution = await ledger.submit(record.id, items, by=by, via=via, record=record)
        return _resolved(resolution.won, resolution.record)

    async def _approve(self, record: QuestionRecord, item: AskUserQuestionAnswerItem, by: str, needed: int) -> Outcome:
        identity = normal_address(await self.channel.identity(by))
        via = self.channel.name
        result = await self.ledger.approve(record.id, item, by=by, via=via, identity=identity, needed=needed)
        resolution = result.resolution
        if resolution is None:
            return Accepted(result.record, complete=False, needed=needed, repeated=not result.counted)
        current = resolution.record
        # Two last approvals at once: both counted, one completed the question; neither is told it was too late.
        if resolution.won or any(approval.identity == identity for approval in current.approvals):
            return Accepted(current, needed=needed, repeated=not result.counted)
        return Ended(current)


def _resolved(won: bool, record: QuestionRecord) -> Outcome:
    return Accepted(record) if won else Ended(record)
