"""What the inbox shows: the questions this process put there, how many are waiting, and the live feed that tells
open pages of every change.

The count is kept as changes come rather than read from the store each time (counting grows with the backlog). This
process counts its own changes as it goes; another replica's change only asks for a recount, done by `recount`.
"""

from __future__ import annotations

import anyio

from bot.channels.base import Channel
from bot.questions.ledger import ChangeKind, Ledger
from bot.store.errors import StoreUnavailable
from bot.store.records import Delivery, QuestionRecord
from bot.web.live import LiveFeed


class ShownQuestions:
    """The inbox `channel`'s questions on show, watched on `ledger`; `close` stops watching."""

    def __init__(self, channel: Channel, ledger: Ledger) -> None:
        self.channel = channel
        self.feed = LiveFeed()
        self.waiting: int | None = None
        """Questions waiting in the inbox, for open pages; read from the store when first needed."""
        self._showing: set[str] = set()
        """Questions this process put in the inbox that have not ended: their changes need no look in the store."""
        self._unwatch = ledger.watch(self._changed)
        self._unwatch_shown = ledger.watch_shown(self._shown_elsewhere)
        self._recount = anyio.Event()
        self._count_stale = False
        """Other replicas' changes went uncounted while no page listened."""

    async def show(self, record: QuestionRecord) -> None:
        """`record` is now in the inbox: count it, and tell open pages. Showing it again while it waits changes
        nothing (a showing that failed after the inbox showed it is tried again by the question's task)."""
        if record.id in self._showing:
            return
        if self.waiting is not None:
            self.waiting += 1
        else:
            # A first count includes this question only when its delivery was stored with it (an API ask); else
            # the delivery is stored once `deliver` returns.
            counted = await self.channel.ledger.store.has_delivery(record.id, self.channel.name)
            self.waiting = await self.count_waiting() + (0 if counted else 1)
        self._showing.add(record.id)
        self.feed.publish({"kind": "asked", "id": record.id, "waiting": self.waiting})

    def held(self, question_id: str) -> tuple[QuestionRecord, Delivery] | None:
        """An answer's question and its delivery here without reading the store, when this process showed it in the
        inbox and holds it (its record is the ledger's, kept current: no change feed runs).

        Only while its route still names the inbox: the delivery's stored part (who could answer and how many
        approvals, as they were when it was shown) counts only once the route is gone, and then it is read. The
        delivery's key is the question id. Anything else (another replica's question, a feed, a stopping ledger)
        is looked up in the store.
        """
        replies = self.channel.replies
        ledger = replies.ledger
        pending = ledger.get(question_id)
        if pending is None or question_id not in self._showing or ledger.following or ledger.closing:
            return None
        record = pending.record
        if replies.router.route(self.channel.name, record.agent) is None:
            return None
        return record, Delivery(question_id=question_id, channel=self.channel.name, key=question_id)

    async def count_waiting(self) -> int:
        return await self.channel.ledger.store.count_questions("pending", channel=self.channel.name)

    def stream_opened(self) -> None:
        """A page started listening: count again if changes went uncounted while none did."""
        if self._count_stale:
            self._count_stale = False
            self._recount.set()

    async def recount(self) -> None:
        """Count the waiting questions again after other replicas' changes, a burst of them at once: this process
        counts its own as it goes, but cannot tell how another replica's change moved the count. Runs until
        cancelled."""
        while True:
            await self._recount.wait()
            self._recount = anyio.Event()
            if not self.feed.subscribers:
                # Nobody shows the count now, and counting grows with the backlog: the next page counts it afresh,
                # and an event stream that opens meanwhile asks for a recount.
                self._count_stale = True
                continue
            try:
                self.waiting = await self.count_waiting()
            except StoreUnavailable:
                continue  # the next change counts again
            self.feed.publish({"kind": "waiting", "waiting": self.waiting})

    def close(self) -> None:
        """End the open event streams and stop watching the ledger."""
        self.feed.close()
        self._unwatch()
        self._unwatch_shown()

    async def _shown_elsewhere(self, channel: str, record: QuestionRecord) -> None:
        # Another replica delivered it here: open pages add its card; the count follows.
        if channel == self.channel.name:
            self.feed.publish({"kind": "asked", "id": record.id})
            self._recount.set()

    async def _changed(self, kind: ChangeKind, record: QuestionRecord) -> None:
        # "asked" comes from the channel's `deliver` instead: only then is it known to be the inbox's question.
        if kind == "asked":
            return
        ours = record.id in self._showing or await self.channel.ledger.store.has_delivery(record.id, self.channel.name)
        if not ours:
            return
        if kind == "partial":
            self.feed.publish({"kind": "partial", "id": record.id})
        else:
            self._showing.discard(record.id)
            # A first count is taken after the question ended, so it already leaves it out.
            waiting = self.waiting
            self.waiting = max(0, waiting - 1) if waiting is not None else await self.count_waiting()
            self.feed.publish({"kind": "resolved", "id": record.id, "status": record.status, "waiting": self.waiting})
            if self.channel.ledger.following:
                self._recount.set()  # it may have ended before this process counted it
