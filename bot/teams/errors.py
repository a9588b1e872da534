"""The Teams channel's own error codes, beside `bot.errors.BotErrorCode`'s shared ones: stable, so that logs and
callers can tell its failures apart without matching on message text."""

from __future__ import annotations

from enum import StrEnum


class TeamsErrorCode(StrEnum):
    UNAUTHORIZED = "TEAMS_UNAUTHORIZED"
    """An incoming activity's token is missing, forged, expired or not for this bot; it is refused with 401."""
    KEYS_UNAVAILABLE = "TEAMS_KEYS_UNAVAILABLE"
    """The signing keys (OpenID metadata, JWKS) could not be fetched, so no token can be checked right now."""
    CALL_FAILED = "TEAMS_CALL_FAILED"
    """A Bot Connector call (or the token request) failed; the error names the status and what was said."""
    RENDER = "TEAMS_RENDER"
    """A question cannot be shown as an Adaptive Card within Teams' limits."""
