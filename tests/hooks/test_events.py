"""Reading one event from stdin: the size cap (with the rest drained), UTF-8, JSON, an object; else one line why."""

from __future__ import annotations

import io

import pytest

from bot.hooks.events import MAX_EVENT_BYTES, BadEvent, parse_event, read_event


class CountingStream(io.BytesIO):
    """Stdin that remembers whether it was read to the end."""

    def drained(self) -> bool:
        return self.tell() == len(self.getbuffer())


def test_an_object_is_read() -> None:
    assert read_event(io.BytesIO(b'{"hook_event_name": "BeforeTool", "n": 1}')) == {
        "hook_event_name": "BeforeTool",
        "n": 1,
    }


def test_an_event_at_the_cap_is_read() -> None:
    padding = MAX_EVENT_BYTES - len(b'{"pad": ""}')
    event = b'{"pad": "' + b"x" * padding + b'"}'
    assert len(event) == MAX_EVENT_BYTES
    assert read_event(io.BytesIO(event))["pad"] == "x" * padding


def test_an_oversize_event_is_refused_and_the_rest_drained() -> None:
    stream = CountingStream(b"x" * (MAX_EVENT_BYTES * 2 + 7))
    with pytest.raises(BadEvent, match="over 4194304 bytes"):
        read_event(stream)
    assert stream.drained()


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"", "not JSON"),
        (b"   \n", "not JSON"),
        (b"garbage", "not JSON"),
        (b'{"a": 1', "not JSON"),
        (b'{"a": 1} {"b": 2}', "not JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b'{"a": "\xc3"}', "not UTF-8"),
        (b"[1, 2]", "not a JSON object"),
        (b'"PreToolUse"', "not a JSON object"),
        (b"null", "not a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
        (b'{"n": ' + b"9" * 5_000 + b"}", "not JSON"),
        (b"NaN", "not a JSON object"),
    ],
    ids=[
        "empty",
        "blank",
        "garbage",
        "cut short",
        "two objects",
        "UTF-16 mark",
        "broken UTF-8",
        "list",
        "string",
        "null",
        "deep nesting",
        "huge number",
        "NaN",
    ],
)
def test_what_is_not_an_event_is_refused_in_one_line(raw: bytes, says: str) -> None:
    with pytest.raises(BadEvent) as refused:
        parse_event(raw)
    assert says in str(refused.value) and "\n" not in str(refused.value)
