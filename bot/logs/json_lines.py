"""`log_format = "json"`: every line `serve` writes on stderr is one JSON object, for a log stack.

Each object has `time` (ISO 8601, UTC, milliseconds), `level`, `message`, `logger`, and the `question_id`, `channel`
and `agent` of what the line is about where there are any (`bot.logs.context`); a traceback is the `exception`
field of its line, never lines of its own. Everything that would write to stderr is routed here: the root logger
(so handraise's and every library's loggers: mcp, aiohttp, slack-bolt, psycopg, …), warnings, and the hooks that
print uncaught exceptions of the main thread, of other threads and of objects being finalised.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, TextIO

from bot.logs.context import current_context

SERVE_LOGGER = "handraise.serve"
"""The logger of what `serve` itself says: its start banner and its one-line errors."""


class JsonLines(logging.Formatter):
    """A log record as one line of JSON (any newline inside is escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "message": record.getMessage(),
            "logger": record.name,
        }
        line |= current_context(record)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def json_handler(stream: TextIO) -> logging.Handler:
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    return handler


def log_json(level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """Make every line on `stream` (default stderr) JSON: the root logger's only handler, warnings, and the hooks
    for uncaught exceptions. Idempotent."""
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(json_handler(stream or sys.stderr))
    root.setLevel(level)
    logging.captureWarnings(True)
    # A record that cannot be formatted is dropped rather than reported as a plain-text traceback.
    logging.raiseExceptions = False
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_thread_exception
    sys.unraisablehook = _log_unraisable


def logs_json() -> bool:
    """Whether `log_json` has made stderr JSON (the one-line errors of `serve` are then logged, not printed)."""
    return any(isinstance(handler.formatter, JsonLines) for handler in logging.getLogger().handlers)


def banner_line(text: str) -> str:
    """A line of `serve`'s start banner (its address, the inbox's link) as a JSON object, the text in `message`."""
    record = logging.LogRecord(SERVE_LOGGER, logging.INFO, __file__, 0, text, None, None)
    return JsonLines().format(record)


def _log_uncaught(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
    logging.getLogger(SERVE_LOGGER).critical("uncaught %s: %s", kind.__name__, error, exc_info=(kind, error, trace))


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    error = args.exc_value
    name = args.thread.name if args.thread is not None else "a thread"
    exc_info = (args.exc_type, error, args.exc_traceback) if error is not None else None
    logging.getLogger(SERVE_LOGGER).error("uncaught in %s: %s", name, error, exc_info=exc_info)


def _log_unraisable(unraisable: Any) -> None:
    error: BaseException | None = unraisable.exc_value
    exc_info = (type(error), error, error.__traceback__) if error is not None else None
    logging.getLogger(SERVE_LOGGER).error(
        "%s: %r", unraisable.err_msg or "Exception ignored in", unraisable.object, exc_info=exc_info
    )
