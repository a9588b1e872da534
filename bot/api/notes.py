"""Status notes from agents (`POST /v1/notes`): shown by every channel that takes the agent's questions, at most one
per agent and event per interval.

An agent's hook repeats itself (Claude Code says "waiting for your input" again after every idle minute, and may send
Notification and Stop together), so the same note from the same agent within `NOTE_INTERVAL` is held back rather
than posted twice. The memory is this process's own: behind several replicas a repeat may get through once per
replica, which is harmless for a note.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime, timedelta

import anyio

from bot.questions.clock import Clock
from bot.questions.ledger import Answering, Ledger
from bot.questions.status_note import NoteEvent, StatusNote

NOTE_INTERVAL = timedelta(seconds=10)
AGENTS_REMEMBERED = 10_000
"""Agents whose last notes are remembered for the interval; the oldest are forgotten first."""


class NoteThrottle:
    """Lets one note per (agent, event) through per `interval`."""

    def __init__(self, clock: Clock, interval: timedelta = NOTE_INTERVAL) -> None:
        self.clock = clock
        self.interval = interval
        self._last: OrderedDict[tuple[str, NoteEvent], datetime] = OrderedDict()

    def allow(self, agent: str, event: NoteEvent) -> bool:
        """Whether a note of `event` from `agent` may be posted now (and if so, remember that it was)."""
        now = self.clock.now()
        key = (agent, event)
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            return False
        self._last[key] = now
        self._last.move_to_end(key)
        while len(self._last) > AGENTS_REMEMBERED:
            self._last.popitem(last=False)
        return True


class StatusNotes:
    """Posts notes through the channels installed with `ledger`, as the agent's questions would be routed."""

    def __init__(self, ledger: Ledger, *, interval: timedelta = NOTE_INTERVAL) -> None:
        self.ledger = ledger
        self.throttle = NoteThrottle(ledger.clock, interval)

    async def post(self, note: StatusNote) -> list[str] | None:
        """The names of the channels that showed `note`, in waterfall order (empty when none takes this agent's
        questions or none shows notes); None when it was held back as a repeat."""
        if not self.throttle.allow(note.agent.id, note.event):
            return None
        answerers = list(self.ledger.answerers)
        shown: set[str] = set()

        async def post_one(answerer: Answering) -> None:
            if await answerer.post_note(note):
                shown.add(answerer.name)

        # Finished even when the agent's hook hangs up first (it gives up after a few seconds).
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for answerer in answerers:
                    group.start_soon(post_one, answerer)
        return [answerer.name for answerer in answerers if answerer.name in shown]
