"""The web inbox's own error codes, beside `bot.errors.BotErrorCode`'s shared ones: stable, so that logs and
callers can tell its failures apart without matching on message text."""

from __future__ import annotations

from enum import StrEnum


class WebErrorCode(StrEnum):
    BAD_FORM = "BAD_FORM"
    """A web inbox form cannot become an answer as submitted."""
    NOT_A_RESPONDER = "NOT_A_RESPONDER"
    """Someone the route does not allow tried to answer."""
