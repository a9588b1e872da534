"""The store's failures, the same from either backend, so that callers catch one `StoreError` whichever database
is behind it."""

from __future__ import annotations

from bot.errors import BotErrorCode, HandraiseError


class StoreError(HandraiseError):
    """The store cannot do what was asked: an unreadable or foreign file, an unknown question, a failed write."""

    code = BotErrorCode.STORE


class StoreUnavailable(StoreError):
    """The store's file cannot be written or read right now (disk full, read-only, I/O error, a corrupt page).

    Nothing was recorded; the same call may work once the operator fixes the disk.
    """

    code = BotErrorCode.STORE_UNAVAILABLE


def key_taken(channel: str, key: str) -> StoreError:
    """The refusal of a delivery whose `key` another question already has on `channel` (both backends say it)."""
    return StoreError(f"{channel} delivery key {key!r} is already used by another question")
