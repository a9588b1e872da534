"""One place per agent in a chat (a thread, a forum topic), so that an agent's questions stay together: remembered
once known, else found again after a restart from the agent's recent deliveries in the store."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any, Generic, TypeVar

import anyio

from bot.questions.ledger import Ledger

RECENT_QUESTIONS_SCANNED = 50

Place = TypeVar("Place")


class AgentPlaces(Generic[Place]):
    """Each agent's place per destination in one channel (`channel` is its name in the store)."""

    def __init__(self, channel: str, place_of: Callable[[dict[str, Any], str], Place | None]) -> None:
        """`place_of(ref, destination)`: where a delivery with that ref went at `destination`; None if elsewhere."""
        self.channel = channel
        self._place_of = place_of
        self._known: dict[tuple[str, str], Place] = {}
        self._locks: dict[tuple[str, str], anyio.Lock] = {}

    def lock(self, agent: str | None, destination: str) -> AbstractAsyncContextManager[object]:
        """Held while a question finds or opens its agent's place: concurrent questions from one agent wait for the
        first, so that they all land in the one place it opens."""
        if agent is None:
            return nullcontext()
        return self._locks.setdefault((agent, destination), anyio.Lock())

    async def find(self, ledger: Ledger, agent: str, destination: str, *, besides: str | None = None) -> Place | None:
        """`agent`'s place at `destination` from memory, else from its recent deliveries (question `besides` left
        out: the one being sent)."""
        known = self._known.get((agent, destination))
        if known is not None:
            return known
        store = ledger.store
        for earlier in await store.list_questions(agent_id=agent, channel=self.channel, limit=RECENT_QUESTIONS_SCANNED):
            delivery = await store.get_delivery(earlier.id, self.channel) if earlier.id != besides else None
            place = self._place_of(delivery.ref, destination) if delivery is not None else None
            if place is not None:
                self._known[(agent, destination)] = place
                return place
        return None

    def remember(self, agent: str, destination: str, place: Place) -> None:
        """A question just sent: its place is the agent's there unless the agent already had one."""
        self._known.setdefault((agent, destination), place)

    def replace(self, agent: str, destination: str, place: Place) -> None:
        """The agent's place there is gone (someone deleted the thread): `place`, just opened, is its place now (and,
        after a restart, is found first: the newest delivery names it)."""
        self._known[(agent, destination)] = place
