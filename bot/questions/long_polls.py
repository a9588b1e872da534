"""Agents' long polls: waiting for a question to end, here or (while a change feed runs) on another replica, until
a deadline or until the program stops."""

from __future__ import annotations

import anyio

from bot.questions.ledger_feed import Watches
from bot.questions.ledger_mode import LedgerMode
from bot.questions.lookup import QuestionLookup
from bot.questions.pending import HeldQuestions
from bot.store.records import QuestionRecord


class LongPolls:
    """The long polls waiting now, each one cancel scope, so that stopping can end them all at once."""

    def __init__(self, mode: LedgerMode, held: HeldQuestions, watches: Watches, lookup: QuestionLookup) -> None:
        self._mode = mode
        self._held = held
        self._watches = watches
        self._lookup = lookup
        self._waiters: set[anyio.CancelScope] = set()

    def __len__(self) -> int:
        """How many long polls wait now."""
        return len(self._waiters)

    async def wait(self, question_id: str, seconds: float) -> QuestionRecord:
        """The question's record once it resolves, or as it is after `seconds`. Raises UnknownQuestion.

        While a change feed runs, this works for a question another replica holds too (agents long-poll any replica):
        the feed wakes it. Without one, a question this process does not hold cannot end meanwhile: it returns at once.
        """
        mode = self._mode
        # Watching before reading: an end the feed hears of during the read still wakes this wait.
        watch = self._watches.add(question_id) if mode.following and seconds > 0 and not mode.closing else None
        try:
            record = await self._lookup.existing(question_id)
            pending = self._held.get(question_id)
            latch = pending.resolved if pending is not None else watch.latch if watch is not None else None
            if record.status == "pending" and latch is not None and seconds > 0 and not mode.closing:
                # One cancel scope and no tasks per waiter: thousands of agents long-poll at once (bench/flood.py).
                with anyio.move_on_after(seconds) as waiting:
                    self._waiters.add(waiting)
                    try:
                        await latch.wait()
                    finally:
                        self._waiters.discard(waiting)
                record = await self._lookup.existing(question_id)
            return record
        finally:
            if watch is not None:
                self._watches.discard(question_id, watch)

    def cancel_all(self) -> None:
        """The program is stopping: every long poll returns at once, with the question as it is."""
        for waiting in list(self._waiters):
            waiting.cancel()
