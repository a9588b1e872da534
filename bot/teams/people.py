"""Who pressed or replied: a Teams activity names its sender by a Teams id (`29:…`) and an Entra object id, but a
responders list names people by email or UPN too. The sender is looked up among the conversation's members
(`GET …/members/{id}`) and kept for an hour, so that every handle they have can be matched and an answered card can
show their name, never a raw id."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import anyio

from bot.teams.connector import Connector, Member
from bot.teams.parse import thread_root

log = logging.getLogger(__name__)

PEOPLE_KEPT = 10_000
PERSON_SECONDS = 3600.0
"""How long who a Teams id is stays known before it is looked up again."""
LOOKUP_SECONDS = 3.0
"""A member lookup within the 5 s Teams gives an invoke its answer."""


def recorded_as(member: Member) -> str:
    """The handle a person's answers are recorded under: their email, else their UPN, else their object id."""
    return member.email or member.upn or member.aad or member.id


class People:
    """The people the channel has met, by Teams id, and how each is shown (by the handle answers are recorded
    under)."""

    def __init__(self, connector: Connector, *, clock: Any = time.monotonic) -> None:
        self.connector = connector
        self.clock = clock
        self.names: dict[str, str] = {}
        self._met: dict[str, tuple[float, Member]] = {}

    async def sender(self, activity: Mapping[str, Any]) -> Member | None:
        """Who sent `activity` (its service URL already vouched for by its token); None when Teams cannot say in
        time, or does not know them in the conversation. Raises TeamsCallError when Teams refuses."""
        sender = activity.get("from")
        sender_id = sender.get("id") if isinstance(sender, dict) else None
        conversation = activity.get("conversation")
        conversation_id = conversation.get("id") if isinstance(conversation, dict) else None
        if not isinstance(sender_id, str) or not sender_id or not isinstance(conversation_id, str):
            return None
        known = self._met.get(sender_id)
        if known is not None and self.clock() - known[0] < PERSON_SECONDS:
            return known[1]
        with anyio.move_on_after(LOOKUP_SECONDS):
            member = await self.connector.member(activity["serviceUrl"], thread_root(conversation_id)[0], sender_id)
            if member is None:
                return None
            if len(self._met) >= PEOPLE_KEPT:
                self._met.pop(next(iter(self._met)))
            self._met[sender_id] = (self.clock(), member)
            if len(self.names) >= PEOPLE_KEPT:
                self.names.pop(next(iter(self.names)))
            self.names[recorded_as(member)] = member.shown
            return member
        log.warning("teams: looking up who %s is took too long", sender_id[:60])
        return None

    def with_handle(self, entry: str) -> frozenset[str]:
        """The people met who have `entry` (an email, UPN or object id) as one of their handles, as recorded."""
        wanted = entry.strip().casefold()
        return frozenset(
            recorded_as(member)
            for _, member in self._met.values()
            if wanted in (handle.casefold() for handle in member.handles)
        )
