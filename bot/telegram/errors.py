"""The Telegram channel's own error codes, beside `bot.errors.BotErrorCode`'s shared ones: stable, so that logs and
callers can tell its failures apart without matching on message text."""

from __future__ import annotations

from enum import StrEnum


class TelegramErrorCode(StrEnum):
    CALL_FAILED = "TELEGRAM_CALL_FAILED"
    """A Telegram Bot API call failed; the error names Telegram's description."""
    RENDER = "TELEGRAM_RENDER"
    """A question cannot be shown as a Telegram message."""
