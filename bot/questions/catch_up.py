"""Catching up with what other replicas changed, as the change feed reads it from the store: holders and long polls
here wake, and watchers hear of it once, as if this process had made the change."""

from __future__ import annotations

from collections.abc import Iterable

from bot.questions.announcing import Announcer
from bot.questions.ledger_feed import Stored, Told, Watches, ahead, stamp
from bot.questions.pending import HeldQuestions
from bot.questions.watchers import Watchers


class CatchUp:
    """`Ledger.refresh`: the feed's reads, turned into wake-ups and news."""

    def __init__(
        self, held: HeldQuestions, told: Told, watches: Watches, watchers: Watchers, announcer: Announcer
    ) -> None:
        self._held = held
        self._told = told
        self._watches = watches
        self._watchers = watchers
        self._announcer = announcer

    async def refresh(self, changes: Iterable[Stored]) -> None:
        """Catch up with questions as the store has them now (the change feed's reads; other replicas wrote them).

        Ended: local holders and long polls wake, watchers hear "resolved". Moved on: holders are touched, watchers
        hear "partial". Never seen: "asked", and shown listeners hear of each channel showing it. Idempotent: what
        this process already announced (its own writes come back through the feed) is not announced again.
        """
        self._told.forget_old_ends()
        for stored in changes:
            record = stored.record
            pending = self._held.get(record.id)
            if record.status != "pending":
                self._watches.wake(record.id)
                if pending is not None and not pending.resolved.is_set():
                    self._held.settle(pending, record)
                elif pending is not None or self._told.ended(record.id):
                    continue  # this process ended it, or heard of it already
                self._announcer.noted("resolved", record)
                await self._watchers.tell("resolved", record)
            elif pending is not None:
                # The owner shows it itself: only the record can have moved (a partial answer, an approval).
                now = stamp(record)
                if not pending.resolved.is_set() and ahead(now, pending.announced or stamp(pending.record)):
                    pending.touch(record)
                    pending.announced = now
                    await self._watchers.tell("partial", record)
            elif not self._told.ended(record.id):
                await self._refresh_unheld(stored)

    async def _refresh_unheld(self, stored: Stored) -> None:
        record = stored.record
        new, moved, shown = self._told.read(stored)
        if new or moved:
            await self._watchers.tell("asked" if new else "partial", record)
        for channel in shown:
            await self._watchers.tell_shown(channel, record)
