"""The configuration's one error, below everything that reads the config (the channels raise it for a missing
secret), so that a channel needs nothing of the loader above it."""

from __future__ import annotations

from bot.errors import BotErrorCode, HandraiseError


class ConfigError(HandraiseError):
    """A configuration the bot refuses to run with; `str()` is one line: `path:line: key: what is wrong; what to do`."""

    code = BotErrorCode.BAD_CONFIG

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None, line: int | None = None):
        super().__init__(message)
        self.path = path
        self.key = key
        self.line = line

    def __str__(self) -> str:
        where = self.path or ""
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        return ": ".join(part for part in (where, self.key, self.message) if part)
