"""The ntfy channel's own error codes, beside `bot.errors.BotErrorCode`'s shared ones."""

from __future__ import annotations

from enum import StrEnum


class NtfyErrorCode(StrEnum):
    PUBLISH_FAILED = "NTFY_PUBLISH_FAILED"
    """The ntfy server refused a publish or could not be reached; the error names its status and message."""
