"""The Email channel's own error codes, beside `bot.errors.BotErrorCode`'s shared ones: stable, so that logs and
callers can tell its failures apart without matching on message text."""

from __future__ import annotations

from enum import StrEnum


class EmailErrorCode(StrEnum):
    IMAP_FAILED = "IMAP_FAILED"
    """The IMAP server refused something or went away."""
    SECRET_TOO_WEAK = "SECRET_TOO_WEAK"
    """A secret is too short to keep tokens unguessable."""
