"""The events a channel is acting on now, so that stopping can let them finish: a click begun is recorded and
acknowledged before the program exits, never cut between the two (the platform would show the person a failure, or
the answer would be acknowledged and lost)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

log = logging.getLogger(__name__)


class InHand:
    """Counts the events being acted on; `stop` marks the channel as stopping (a channel may then turn new events
    away unread, so the platform sends them again) and waits for those begun. `channel` and `noun` name them in the log:
    "telegram: … update(s)", "discord: … event(s)"."""

    def __init__(self, channel: str, noun: str) -> None:
        self.channel = channel
        self.noun = noun
        self.stopping = False
        self._count = 0
        self._idle: anyio.Event | None = None

    @contextmanager
    def one(self) -> Iterator[None]:
        """Around the handling of one event."""
        self._count += 1
        try:
            yield
        finally:
            self._count -= 1
            if self._count == 0 and self._idle is not None:
                self._idle.set()

    async def stop(self, seconds: float) -> None:
        """Mark the channel stopping and wait (at most `seconds`) for the events begun to finish."""
        self.stopping = True
        if self._count == 0:
            return
        log.info("%s: stopping; finishing %d %s(s) begun", self.channel, self._count, self.noun)
        self._idle = anyio.Event()
        with anyio.move_on_after(seconds):
            await self._idle.wait()
        if self._count:
            log.warning(
                "%s: stopped with %d %s(s) still being handled after %gs", self.channel, self._count, self.noun, seconds
            )
