"""The Discord channel's own error codes, beside `bot.errors.BotErrorCode`'s shared ones."""

from __future__ import annotations

from enum import StrEnum


class DiscordErrorCode(StrEnum):
    CALL_FAILED = "DISCORD_CALL_FAILED"
    """A Discord REST call failed; the error names Discord's status, code and message."""
    GATEWAY = "DISCORD_GATEWAY"
    """The Gateway closed the session for good (bad token, intents not enabled)."""
    RENDER = "DISCORD_RENDER"
    """A question cannot be shown as a Discord message."""
