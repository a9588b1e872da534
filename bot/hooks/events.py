"""One hook event from stdin: at most 4 MiB of UTF-8 JSON holding an object, or a one-line reason why not.

Every agent sends its event this way; reading it is the same for all of them. Standard library only.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO

MAX_EVENT_BYTES = 4 * 1024 * 1024
DRAIN_CHUNK = 1 << 16


class BadEvent(ValueError):
    """Stdin is not an event this hook can act on; the message says why, in one line."""


def read_event(stream: BinaryIO) -> dict[str, Any]:
    """The event object on `stream`. Raises BadEvent for too much, undecodable, non-JSON or non-object input."""
    raw = stream.read(MAX_EVENT_BYTES + 1)
    if len(raw) > MAX_EVENT_BYTES:
        # Read the rest unseen: the agent should not meet a broken pipe for sending too much.
        while stream.read(DRAIN_CHUNK):
            pass
        raise BadEvent(f"stdin is over {MAX_EVENT_BYTES} bytes")
    return parse_event(raw)


def parse_event(raw: bytes) -> dict[str, Any]:
    """`raw` as an event object. Raises BadEvent."""
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as error:
        raise BadEvent(f"stdin is not UTF-8 ({error.reason} at byte {error.start})") from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise BadEvent("stdin is JSON nested too deep") from None
    except ValueError as error:  # JSONDecodeError, and integers too long to convert
        raise BadEvent(f"stdin is not JSON ({_one_line(error)})") from None
    if not isinstance(data, dict):
        raise BadEvent("stdin is not a JSON object")
    return data


def text(event: dict[str, Any], name: str) -> str | None:
    """A string field of the event; None when it is missing or not a string."""
    value = event.get(name)
    return value if isinstance(value, str) else None


def required_text(event: dict[str, Any], name: str) -> str:
    """A string field the event cannot do without. Raises BadEvent naming it."""
    value = text(event, name)
    if not value:
        raise BadEvent(f"the event has no {name}")
    return value


def event_name(event: dict[str, Any]) -> str:
    return required_text(event, "hook_event_name")


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())
