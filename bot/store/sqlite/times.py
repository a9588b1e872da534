"""Times as the SQLite store writes them: UTC, fixed width (`2026-12-06T23:07:42.280786+00:00`), so that the text
order of a column is its time order in ORDER BY and comparisons."""

from __future__ import annotations

from datetime import UTC, datetime

_second: tuple[int, str] = (-1, "")
"""The last second formatted, and its text up to the seconds: an ask writes the same second two or three times, and
`isoformat` costs more than the rest of a stamp. One tuple, read and replaced whole, so threads never mix two."""


def time_text(value: datetime) -> str:
    """`value` (aware; a naive one is taken as local time) as the store's text for it."""
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    global _second
    key = (value.toordinal() * 24 + value.hour) * 3600 + value.minute * 60 + value.second
    second = _second
    if second[0] != key:
        second = _second = (key, value.replace(microsecond=0, tzinfo=None).isoformat())
    return f"{second[1]}.{value.microsecond:06d}+00:00"
