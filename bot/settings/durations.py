"""Human-written durations ("30s", "30m", "2h", "1d", "1h30m") for the config file.

A bare number is rejected on purpose: in a timeout, "90" could mean seconds or minutes, and guessing wrong either
pesters people or leaves an agent waiting for a day.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer

from bot.settings.duration_text import EXAMPLES, format_duration, parse_duration, quote_value

__all__ = ("Duration", "format_duration", "parse_duration")


def _coerce_duration(value: Any) -> timedelta:
    # Numbers are refused before pydantic sees them, because pydantic would read them as seconds.
    if isinstance(value, str):
        return parse_duration(value)
    if isinstance(value, timedelta):
        if value <= timedelta(0):
            raise ValueError(f"{value} is not a positive duration; {EXAMPLES}")
        return value
    raise ValueError(f"{quote_value(value)} is not a duration; {EXAMPLES}")


Duration = Annotated[
    timedelta,
    BeforeValidator(_coerce_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
"""A positive timedelta that a config file writes as "30m"; also accepts a timedelta from Python."""
