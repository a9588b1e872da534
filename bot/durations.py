"""Human-written durations ("30s", "30m", "2h", "1d", "1h30m") for the config file.

A bare number is rejected on purpose: in a timeout, "90" could mean seconds or minutes, and guessing wrong either
pesters people or leaves an agent waiting for a day.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer

__all__ = ("Duration", "format_duration", "parse_duration")

_DURATION = re.compile(r"(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s)?")
_EXAMPLES = 'write e.g. "30s", "30m", "2h", "1d" or "1h30m"'
_UNIT_SECONDS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}


def parse_duration(text: str) -> timedelta:
    """Parse units largest first, each at most once ("1h30m", never "30m1h").

    Raises ValueError, worded for the person editing the file, when the text is not that form or is zero.
    """
    match = _DURATION.fullmatch(text.strip())
    if match is None or not any(match.groupdict().values()):
        raise ValueError(f"{_quote(text)} is not a duration; {_EXAMPLES}")
    seconds = sum(int(count) * _UNIT_SECONDS[unit] for unit, count in match.groupdict().items() if count)
    if seconds == 0:
        raise ValueError(f"{_quote(text)} is not a positive duration; {_EXAMPLES}")
    return timedelta(seconds=seconds)


def format_duration(duration: timedelta) -> str:
    """The inverse of parse_duration for whole seconds ("1h30m"); sub-second parts are dropped.

    Raises ValueError for a negative duration, which has no written form.
    """
    remaining = int(duration.total_seconds())
    if remaining < 0:
        raise ValueError(f"{duration!r} is negative and has no written form")
    parts: list[str] = []
    for unit, size in _UNIT_SECONDS.items():
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def _coerce_duration(value: Any) -> timedelta:
    # Numbers are refused before pydantic sees them, because pydantic would read them as seconds.
    if isinstance(value, str):
        return parse_duration(value)
    if isinstance(value, timedelta):
        if value <= timedelta(0):
            raise ValueError(f"{value} is not a positive duration; {_EXAMPLES}")
        return value
    raise ValueError(f"{_quote(value)} is not a duration; {_EXAMPLES}")


def _quote(value: object) -> str:
    # TOML and the examples use double quotes; repr() would show single ones.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if isinstance(value, str) else str(value)


Duration = Annotated[
    timedelta,
    BeforeValidator(_coerce_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
"""A positive timedelta that a config file writes as "30m"; also accepts a timedelta from Python."""
