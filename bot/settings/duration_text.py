"""Human-written durations ("30s", "30m", "2h", "1d", "1h30m"): parsing and writing, standard library only.

Kept apart from `bot.settings.durations` (the pydantic field type) so that `handraise ask --timeout` and the hooks parse
a duration without importing pydantic.
"""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ("EXAMPLES", "format_duration", "parse_duration", "quote_value")

_DURATION = re.compile(r"(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s)?")
EXAMPLES = 'write e.g. "30s", "30m", "2h", "1d" or "1h30m"'
_UNIT_SECONDS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}


def parse_duration(text: str) -> timedelta:
    """Parse units largest first, each at most once ("1h30m", never "30m1h").

    Raises ValueError, worded for the person editing the file, when the text is not that form or is zero.
    """
    match = _DURATION.fullmatch(text.strip())
    if match is None or not any(match.groupdict().values()):
        raise ValueError(f"{quote_value(text)} is not a duration; {EXAMPLES}")
    seconds = sum(int(count) * _UNIT_SECONDS[unit] for unit, count in match.groupdict().items() if count)
    if seconds == 0:
        raise ValueError(f"{quote_value(text)} is not a positive duration; {EXAMPLES}")
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


def quote_value(value: object) -> str:
    # TOML and the examples use double quotes; repr() would show single ones.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if isinstance(value, str) else str(value)
