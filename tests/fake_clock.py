"""A clock the tests drive by hand: escalation, expiry and reminder tests run in microseconds, not minutes."""

from __future__ import annotations

import heapq
import itertools
from datetime import UTC, datetime, timedelta

import anyio
import anyio.lowlevel


class FakeClock:
    """A `bot.questions.clock.Clock` that moves only when `advance()` is called."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
        self._sleepers: list[tuple[datetime, int, anyio.Event]] = []
        self._order = itertools.count()

    def now(self) -> datetime:
        return self._now

    async def sleep_until(self, deadline: datetime) -> None:
        if deadline <= self._now:
            await anyio.lowlevel.checkpoint()
            return
        event = anyio.Event()
        heapq.heappush(self._sleepers, (deadline, next(self._order), event))
        await event.wait()

    @property
    def sleepers(self) -> int:
        return sum(1 for _, _, event in self._sleepers if not event.is_set())

    async def advance(self, by: timedelta) -> None:
        """Move time forward and wake every sleeper whose deadline has come, then let them run."""
        self._now += by
        while self._sleepers and self._sleepers[0][0] <= self._now:
            heapq.heappop(self._sleepers)[2].set()
        for _ in range(20):
            await anyio.lowlevel.checkpoint()
