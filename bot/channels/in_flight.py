"""Deliveries sent but not yet recorded, so that an event about one is never dropped for arriving too early.

A person who clicks within milliseconds of the post, or an automation, can reach the channel while `deliver` is
still returning or its delivery is still being written: the event's key then matches no delivery yet. The base
counts each channel's deliveries in flight; an event that matches nothing waits for those in flight when it arrived
(and, with replicas, where another process may be the one delivering, reads the store again) before it is called
unmatched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

Found = TypeVar("Found")

STORE_RECHECK_SECONDS = 0.05
"""How often the store is read again for a delivery another replica may be recording."""


class DeliveriesInFlight:
    """One channel's deliveries between "about to send" and "recorded", in the order they began."""

    def __init__(self) -> None:
        self._begun = 0
        self._open: dict[int, None] = {}  # insertion order is ticket order: the first key is the oldest open
        self._changed: anyio.Event | None = None  # made only while someone waits: a delivery costs no event

    def begin(self) -> int:
        """A delivery starts; returns its ticket for `end`."""
        self._begun += 1
        self._open[self._begun] = None
        return self._begun

    def end(self, ticket: int) -> None:
        """The delivery `ticket` is recorded (or failed): whoever waits on it looks again."""
        self._open.pop(ticket, None)
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def newest(self) -> int | None:
        """The ticket of the newest delivery begun, while any is open; None when none is in flight."""
        return self._begun if self._open else None

    async def ended(self, ticket: int) -> None:
        """Return once every delivery begun up to `ticket` has ended; later ones are not waited for, so a steady
        stream of new deliveries cannot keep a waiter waiting."""
        while self._open and next(iter(self._open)) <= ticket:
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()


async def until_recorded(
    in_flight: DeliveriesInFlight, look: Callable[[], Awaitable[Found | None]], *, other_processes: bool
) -> Found | None:
    """Look again (`look`) once the deliveries in flight now are recorded; while `other_processes` may be recording
    it, keep reading the store. Returns None when there is nothing left to wait for; the caller bounds the time."""
    ticket = in_flight.newest()
    if ticket is not None:
        await in_flight.ended(ticket)
        if (found := await look()) is not None:
            return found
    while other_processes:
        await anyio.sleep(STORE_RECHECK_SECONDS)
        if (found := await look()) is not None:
            return found
    return None
