"""What a log line is about, taken from the task that logs it: a question's waterfall or background task sets its
question, channel and agent once, and every line logged under it (by handraise or a library) carries them."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

LogContext = dict[str, str]

_about: ContextVar[LogContext | None] = ContextVar("handraise_log_context", default=None)
FIELDS = ("question_id", "channel", "agent")


def log_about(*, question_id: str | None = None, channel: str | None = None, agent: str | None = None) -> None:
    """Add what the current task is about to its log lines (and its child tasks'); None leaves a field as it is.

    A context variable belongs to the task that sets it: a task started later copies it, the task that started this
    one never sees it.
    """
    current = _about.get()
    about = dict(current) if current is not None else {}
    # Field by field rather than through a dict of what was given: it runs twice for every question asked.
    if question_id is not None:
        about["question_id"] = question_id
    if channel is not None:
        about["channel"] = channel
    if agent is not None:
        about["agent"] = agent
    _about.set(about)


def current_context(record: Any = None) -> LogContext:
    """The context of the current task, with the fields a log call gave as `extra` taking precedence."""
    about = dict(_about.get() or {})
    if record is not None:
        for key in FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                about[key] = str(value)
    return about
