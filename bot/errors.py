"""The bot's one error base and its stable codes.

Every failure the bot raises on purpose is a `HandraiseError` with a `code` from `BotErrorCode`, so that the CLI,
the HTTP API and the logs can tell kinds of failure apart without matching on message text. The message is for a
person and says what to do next. A failure that crosses the seam to the agent is a `core.UserQuestionError` too
(`DeliveryError`), so the agent sees it with the same code.
"""

from __future__ import annotations

from enum import StrEnum


class BotErrorCode(StrEnum):
    """Stable codes of the bot's own failures; a `StrEnum`, so `error.code == "BAD_CONFIG"` holds for plain strings.

    A channel's own codes (`SLACK_RENDER`, `IMAP_FAILED`) live in that channel's package, in a `StrEnum` of its own.
    """

    BAD_CONFIG = "BAD_CONFIG"
    """The config file (or an environment variable it names) cannot be used."""
    BAD_INPUT = "BAD_INPUT"
    """A command-line flag or file cannot be used."""
    STORE = "STORE"
    """The store (SQLite or PostgreSQL) cannot do what was asked."""
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
    """The store cannot be read or written right now (a full disk, a database that went away); nothing was recorded."""
    LEASE_LOST = "LEASE_LOST"
    """A replica's lease ran out and another replica took some of its questions: it stops rather than run them twice."""
    STOPPING = "STOPPING"
    """`serve` is stopping and takes no new question."""
    UNKNOWN_QUESTION = "UNKNOWN_QUESTION"
    """No question has that id (a forged or mistyped reference)."""
    BAD_ANSWER = "BAD_ANSWER"
    """An answer does not fit its questions."""
    DELIVERY_FAILED = "DELIVERY_FAILED"
    """A channel could not show a question (also a `UserQuestionError` code the agent sees)."""
    UNREACHABLE = "UNREACHABLE"
    """The handraise server could not be reached."""
    UNREADABLE_REPLY = "UNREADABLE_REPLY"
    """What a person sent cannot be read as an answer."""
    BAD_CHANNEL_KIND = "BAD_CHANNEL_KIND"
    """A channel kind is registered incompletely or twice."""
    BAD_JSON = "BAD_JSON"
    """An ask body is not JSON, or nests too deeply (bot.questions.validation)."""
    TOO_LARGE = "TOO_LARGE"
    """An ask body is over 1 MiB."""
    BAD_REQUEST = "BAD_REQUEST"
    """An ask body breaks a limit or a rule; the message names the field."""
    CANNOT_LISTEN = "CANNOT_LISTEN"
    """`serve` cannot listen on `[server] listen` (the port is taken, or the address is not this machine's)."""


class HandraiseError(Exception):
    """A failure the bot raises on purpose: `code` is stable, `message` says what went wrong and what to do.

    Subclasses set a class-level `code`; a caller may give a more specific one.
    """

    code: str = BotErrorCode.BAD_INPUT

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class BadInput(HandraiseError):
    """A flag or file the user gave cannot be used; the message says which and how to fix it (exit code 2)."""

    code = BotErrorCode.BAD_INPUT
