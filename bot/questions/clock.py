"""Time as a dependency: escalation and expiry sleep on a clock that tests can drive by hand (`tests/fake_clock.py`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

import anyio


class Clock(Protocol):
    def now(self) -> datetime: ...

    async def sleep_until(self, deadline: datetime) -> None: ...


class SystemClock:
    """Wall-clock time; sleeps are anyio sleeps, so cancellation works as usual."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep_until(self, deadline: datetime) -> None:
        delay = (deadline - self.now()).total_seconds()
        if delay > 0:
            await anyio.sleep(delay)
