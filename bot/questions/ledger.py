"""Pending questions in memory, backed by the store: the one place where the first answer wins.

Every channel that shows a question (the routed one, and the ones it escalates to) holds the same
`PendingQuestion`; whichever human answers first resolves it in the store, and every holder wakes up to the same
outcome. An answer is committed to the store before anyone is told it was accepted.

`Ledger` is the face the rest of the bot sees: it wires its parts (the package's docstring names them) to one store,
one clock and one set of held questions, and hands each call to the part whose job it is.
"""

from __future__ import annotations

import time
from typing import Protocol

from bot.questions.announcing import Announcer
from bot.questions.catch_up import CatchUp
from bot.questions.clock import Clock
from bot.questions.ledger_feed import Told, Watches, ahead, stamp
from bot.questions.ledger_mode import LedgerMode
from bot.questions.long_polls import LongPolls
from bot.questions.lookup import QuestionLookup
from bot.questions.lookup import UnknownQuestion as UnknownQuestion
from bot.questions.observer import QuestionObserver
from bot.questions.pending import HeldQuestions
from bot.questions.pending import PendingQuestion as PendingQuestion
from bot.questions.progress import ApprovalResult as ApprovalResult
from bot.questions.progress import PartialResult as PartialResult
from bot.questions.progress import Progress
from bot.questions.resolving import Resolver
from bot.questions.routing import Route
from bot.questions.status_note import StatusNote
from bot.questions.watchers import ChangeKind as ChangeKind
from bot.questions.watchers import ChangeListener as ChangeListener
from bot.questions.watchers import ShownListener as ShownListener
from bot.questions.watchers import Watchers
from bot.store.interface import AsyncStore
from bot.store.records import AgentRef, NewDelivery, QuestionRecord
from core import AskUserQuestionRequest


class Answering(Protocol):
    """A channel's answerer installed with the ledger (`bot.channels.base.ChannelAnswerer`), as a new question meets
    it."""

    def route_for(self, agent: AgentRef | None) -> Route | None:
        """Its route for `agent`'s questions; None when they pass it by."""
        ...

    def delivery_with_question(self, record: QuestionRecord, route: Route) -> NewDelivery | None:
        """The delivery to store with the new question `record` when showing it only takes that row; else None."""
        ...

    def only_waits(self, route: Route) -> bool:
        """Whether a question shown here on `route` needs nothing of it until the question ends."""
        ...

    async def show_stored(self, pending: PendingQuestion, route: Route) -> None:
        """Show a new question whose delivery here was stored with it."""
        ...

    @property
    def name(self) -> str:
        """Its channel's name."""
        ...

    async def post_note(self, note: StatusNote) -> bool:
        """Show `note` where the agent's questions would go here; False when it is not routed here, the channel
        shows no notes, or showing it failed (logged)."""
        ...


class Ledger:
    """The questions of one process: held, looked up, answered, waited on and watched."""

    def __init__(self, store: AsyncStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.answerers: list[Answering] = []
        """The channels' answerers installed with this ledger, in waterfall order
        (`bot.channels.base.install_channel`)."""
        self._mode = LedgerMode()
        self._held = HeldQuestions()
        self._told = Told()
        self._watches = Watches()
        self._watchers = Watchers()
        self._lookup = QuestionLookup(store, self._held, self._mode)
        self._announcer = Announcer(self._mode, self._held, self._told, self._watches, self._watchers)
        self._catch_up = CatchUp(self._held, self._told, self._watches, self._watchers, self._announcer)
        self._long_polls = LongPolls(self._mode, self._held, self._watches, self._lookup)
        self._resolver = Resolver(store, self._held, self._lookup, self._announcer)
        self._progress = Progress(store, self._held, self._lookup, self._announcer, self._resolver)
        # A call that one part answers alone is that part's own method: the docstring shown is the one that knows,
        # and the hottest calls (every reply, every long poll) take no extra frame.
        self.get = self._held.get
        self.release = self._held.release
        self.forget = self._held.forget
        self.held_ids = self._held.ids
        self.current = self._lookup.current
        self.delivered = self._lookup.delivered
        self.submit = self._resolver.submit
        self.resolve = self._resolver.resolve
        self.save_partial = self._progress.save_partial
        self.approve = self._progress.approve
        self.remind = self._progress.remind
        self.wait = self._long_polls.wait
        self.refresh = self._catch_up.refresh
        self.watch = self._watchers.watch
        self.watch_shown = self._watchers.watch_shown

    @property
    def observer(self) -> QuestionObserver:
        """Told of the questions this process asks and ends, and of channels failing to show them (`/metrics`)."""
        return self._resolver.observer

    @observer.setter
    def observer(self, observer: QuestionObserver) -> None:
        self._resolver.observer = observer

    @property
    def following(self) -> bool:
        """Set while a change feed runs: other replicas change the store too, and `refresh` hears of it."""
        return self._mode.following

    @following.setter
    def following(self, following: bool) -> None:
        self._mode.following = following

    @property
    def closing(self) -> bool:
        """Set by `close` while the program shuts down: waiting answerers are cancelled, but their questions stay
        pending."""
        return self._mode.closing

    @property
    def watches(self) -> Watches:
        """Long polls on questions held by other replicas: what the change feed must wake."""
        return self._watches

    @property
    def waiting(self) -> int:
        """How many long polls wait in this process now."""
        return len(self._long_polls)

    # --- holding questions (`pending`) ---------------------------------------------------------------------------

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
        pending = self._held.bind(request, record, new=new, stored_delivery=stored_delivery)
        self._told.held(record.id)
        return pending

    async def read_back(self, pending: PendingQuestion, record: QuestionRecord | None = None) -> bool:
        """Whether a question bound from a record read earlier (resumed: read when this replica claimed it) is still
        pending; an end stored between that read and the bind (a person who answered while `serve` was starting)
        is read back now and wakes whoever already waits on it. `record`: the store's, if just read. Raises
        StoreUnavailable.

        Without a change feed the held copy is trusted from the bind on, so this one read is what keeps it true.
        """
        if record is None:
            record = await self.store.get_question(pending.id)
        if record is None or pending.resolved.is_set():
            return not pending.resolved.is_set()
        if record.status == "pending":
            if ahead(stamp(record), stamp(pending.record)):
                pending.touch(record)  # partial answers or approvals stored meanwhile
            return True
        self._held.settle(pending, record)
        return False

    async def hold(self, request: AskUserQuestionRequest) -> PendingQuestion:
        """The question for `request`, recorded on first sight (an in-process ask); release it with `release`."""
        pending = self._held.asked_by(request)
        if pending is None:
            agent = AgentRef.from_agent(request.agent) if request.agent is not None else None
            record = QuestionRecord(
                agent=agent, questions=list(request.questions), origin="local", created_at=self.clock.now()
            )
            started = time.perf_counter()
            await self.store.create_question(record)
            self.observer.asked(record, time.perf_counter() - started)
            pending = self.bind(request, record, new=True)
            await self._announcer.announce("asked", record)
        pending.holders += 1
        return pending

    def close(self) -> None:
        """The program is stopping: long polls return at once, and waiting answerers leave questions pending."""
        self._mode.closing = True
        self._long_polls.cancel_all()

    async def announce(self, record: QuestionRecord, write_seconds: float = 0.0) -> None:
        """Tell watchers about a question created outside `hold` (the HTTP API), whose store write took
        `write_seconds`."""
        self.observer.asked(record, write_seconds)
        await self._announcer.announce("asked", record)
