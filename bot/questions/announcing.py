"""Telling watchers of the changes this process makes to questions, once each.

While a change feed runs, it echoes this process's own writes back (`Ledger.refresh`), sometimes before the write
has returned here: whichever of the two comes first is the news, and the other is dropped.
"""

from __future__ import annotations

from bot.questions.ledger_feed import Told, Watches, ahead, stamp
from bot.questions.ledger_mode import LedgerMode
from bot.questions.pending import HeldQuestions
from bot.questions.watchers import ChangeKind, Watchers
from bot.store.records import QuestionRecord


class Announcer:
    """Says what this process changed to the ledger's watchers, noting it so the feed's echo is not news again."""

    def __init__(self, mode: LedgerMode, held: HeldQuestions, told: Told, watches: Watches, watchers: Watchers) -> None:
        self._mode = mode
        self._held = held
        self._told = told
        self._watches = watches
        self._watchers = watchers

    async def announce(self, kind: ChangeKind, record: QuestionRecord) -> None:
        """Tell watchers that this process asked, moved on or ended `record`, unless the feed told them first."""
        if self._mode.following and not self.noted(kind, record):
            return
        await self._watchers.tell(kind, record)

    def noted(self, kind: ChangeKind, record: QuestionRecord) -> bool:
        """Remember what watchers are told, so that the change feed's echo of it is not news; False when it is not
        news any more (the echo of this process's own write was heard before the write returned)."""
        if kind == "resolved":
            self._watches.wake(record.id)
            return self._told.end(record.id)
        if (pending := self._held.get(record.id)) is None:
            return self._told.move(record)
        now = stamp(record)
        if pending.announced is not None and not ahead(now, pending.announced):
            return False
        pending.announced = now
        return True
