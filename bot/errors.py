"""The bot's one error base and its stable codes.

Every failure the bot raises on purpose is a `HandraiseError` with a `code` from `BotErrorCode`, so that the CLI,
the HTTP API and the logs can tell kinds of failure apart without matching on message text. The message is for a
person and says what to do next. A failure that crosses the seam to the agent is a `core.UserQuestionError` too
(`DeliveryError`), so the agent sees it with the same code.
"""

from __future__ import annotations

from enum import StrEnum


class BotErrorCode(StrEnum):
    """Stable codes of the bot's failures; a `StrEnum`, so `error.code == "BAD_CONFIG"` holds for plain strings."""

    BAD_CONFIG = "BAD_CONFIG"
    """The config file (or an environment variable it names) cannot be used."""
    BAD_INPUT = "BAD_INPUT"
    """A command-line flag or file cannot be used."""
    STORE = "STORE"
    """The SQLite store cannot do what was asked."""
    UNKNOWN_QUESTION = "UNKNOWN_QUESTION"
    """No question has that id (a forged or mistyped reference)."""
    BAD_ANSWER = "BAD_ANSWER"
    """An answer does not fit its questions."""
    BAD_FORM = "BAD_FORM"
    """A web inbox form cannot become an answer as submitted."""
    NOT_A_RESPONDER = "NOT_A_RESPONDER"
    """Someone the route does not allow tried to answer."""
    DELIVERY_FAILED = "DELIVERY_FAILED"
    """A channel could not show a question (also a `UserQuestionError` code the agent sees)."""
    UNREACHABLE = "UNREACHABLE"
    """The handraise server could not be reached."""
    SLACK_CALL_FAILED = "SLACK_CALL_FAILED"
    """A Slack Web API call failed; the error names Slack's own code."""
    SLACK_RENDER = "SLACK_RENDER"
    """A question cannot be shown as a Slack message."""
    SLACK_PAYLOAD = "SLACK_PAYLOAD"
    """A Slack payload is malformed or not about one of our questions."""
    TELEGRAM_CALL_FAILED = "TELEGRAM_CALL_FAILED"
    """A Telegram Bot API call failed; the error names Telegram's description."""
    TELEGRAM_RENDER = "TELEGRAM_RENDER"
    """A question cannot be shown as a Telegram message."""
    UNREADABLE_REPLY = "UNREADABLE_REPLY"
    """What a person sent cannot be read as an answer."""
    IMAP_FAILED = "IMAP_FAILED"
    """The IMAP server refused something or went away."""
    SECRET_TOO_WEAK = "SECRET_TOO_WEAK"
    """A secret is too short to keep tokens unguessable."""
    BAD_CHANNEL_KIND = "BAD_CHANNEL_KIND"
    """A channel kind is registered incompletely or twice."""
    BAD_JSON = "BAD_JSON"
    """An ask body is not JSON, or nests too deeply (bot.validation)."""
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

    code: BotErrorCode = BotErrorCode.BAD_INPUT

    def __init__(self, message: str, code: BotErrorCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
