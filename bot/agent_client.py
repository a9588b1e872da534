"""The documented import path of the agent client, kept for the Python agents that use it:
`from bot.agent_client import HandraiseClient`. The client itself is `bot.clients.agent`."""

from __future__ import annotations

from bot.clients.agent import HandraiseClient as HandraiseClient

__all__ = ("HandraiseClient",)
