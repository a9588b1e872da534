"""Events Slack delivers again: when an acknowledgement was slow, Slack sends the same event once more (same
`event_id`, `X-Slack-Retry-Num`), possibly after a restart. Each is acted on once, its id kept in the store."""

from __future__ import annotations

from bot.channels.base import Channel

MAX_KEY_CHARS = 300
"""Longer than any id Slack sends: such a key is not Slack's, so there is nothing to recognise it by."""


async def first_sight(channel: Channel, key: str) -> bool:
    """Whether Slack sends this event for the first time (kept in the store, so also true across restarts)."""
    if not key or len(key) > MAX_KEY_CHARS:
        return True  # not an id Slack would send: nothing to recognise it by
    return await channel.ledger.store.first_sight(channel.name, key)
