"""Who people are in Slack: the identity an approval counts under, and who belongs to a user group named among the
responders."""

from __future__ import annotations

import logging

import anyio

from bot.slack.transport import SlackCallError, SlackTransport

log = logging.getLogger(__name__)

AUTHORISE_SECONDS = 2
"""How long a user-group lookup may take before the click is refused (Slack wants an ack within 3 s)."""


async def identity(transport: SlackTransport, person: str) -> str:
    """The user's email address when the app may read it (users:read.email), so that approving in Slack and by email
    counts once; else the user id."""
    return await transport.user_email(person) or person


async def members(transport: SlackTransport, entry: str) -> frozenset[str] | None:
    """A user group's members (`S…` responders); an unreadable group holds nobody, so the reply is refused."""
    if not entry.startswith("S"):
        return None
    try:
        with anyio.fail_after(AUTHORISE_SECONDS):
            return await transport.group_members(entry)
    except (SlackCallError, TimeoutError) as failure:
        log.warning("slack: cannot read user group %s (%s); refusing its members for now", entry, failure)
        return frozenset()
