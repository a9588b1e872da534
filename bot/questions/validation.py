"""What the HTTP API and `handraise ask` accept: bounded sizes, unique ids and labels, no control characters.

The seam (`core`) checks what a request means (EMPTY_QUESTIONS, BAD_INTENT) and nothing else, by design. This is the
transport's own door: a request that could never be shown or answered — a duplicate id, a NUL, a megabyte label, JSON
nested a million levels deep — is refused before it is stored, with the field that is wrong and what to do instead.
The limits are documented in docs/api.md#limits; keep the two in step. Standard library only: `handraise ask` runs these
checks before it sends, and it must start without pydantic (tests/bot/test_startup.py). The checks read the decoded
JSON as sent, skipping values of the wrong type, which the API's pydantic model then refuses in its own words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from bot.errors import BotErrorCode, HandraiseError

MAX_BODY_BYTES = 1024 * 1024
MAX_DEPTH = 16
"""A valid body nests 5 levels deep (body → questions → question → options → option); 16 leaves room to grow."""
MAX_QUESTIONS = 50
MAX_OPTIONS = 50
MAX_ID = 64
MAX_QUESTION = 2_000
MAX_HEADER = 200
MAX_DETAIL = 65_536
MAX_LABEL = 200
MAX_DESCRIPTION = 1_000
MAX_AGENT_TEXT = 200
MAX_AGENT_LABELS = 50
MAX_NOTE_TEXT = 4_000
"""A status note's `text` (`POST /v1/notes`); channels show less of it."""

# C0 and C1 controls, DEL, and lone surrogates (JSON's "\ud800" decodes to one, and it cannot be stored as UTF-8).
_CONTROL_IN_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")  # tab, LF and CR allowed


MAPPING = (dict, Mapping)
"""What the checks read as a JSON object: `dict` first, which decoded JSON always is, so the abstract `Mapping`
check (slow) runs only for anything else."""


class RequestRefused(HandraiseError):
    """The request cannot be accepted as sent; `status` is the HTTP answer, the message names the field."""

    code = BotErrorCode.BAD_REQUEST

    def __init__(self, status: int, code: BotErrorCode, message: str) -> None:
        super().__init__(message, code)
        self.status = status


def field_problem(where: str, problem: str) -> RequestRefused:
    return RequestRefused(422, BotErrorCode.BAD_REQUEST, f"{where}: {problem}")


def too_large(size: int | None = None) -> RequestRefused:
    sent = f" ({size:,} bytes)" if size is not None else ""
    return RequestRefused(
        413,
        BotErrorCode.TOO_LARGE,
        f"the request body{sent} is over {MAX_BODY_BYTES:,} bytes; shorten the detail or split it",
    )


def parse_ask_body(raw: bytes) -> Any:
    """The body of `POST /v1/questions`, decoded and checked (see `check_ask_payload`).

    Raises RequestRefused: 400 BAD_JSON, 413 TOO_LARGE or 422 BAD_REQUEST naming the field.
    """
    if len(raw) > MAX_BODY_BYTES:
        raise too_large(len(raw))
    try:
        payload = json.loads(raw)
    except RecursionError:
        raise _too_deep() from None
    except ValueError:  # not UTF-8, not JSON, or an integer longer than Python reads
        raise RequestRefused(400, BotErrorCode.BAD_JSON, "the request body is not JSON; send a JSON object") from None
    # Each level of nesting opens an array or an object, so a body with no more brackets than the limit (a few
    # questions with their options) cannot nest too deeply, and the walk that measures it is skipped.
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _depth(payload) > MAX_DEPTH:
        raise _too_deep()
    _check_fields(payload)
    return payload


def parse_note_body(raw: bytes) -> Any:
    """The body of `POST /v1/notes`: JSON as for an ask, its agent held to the same limits, its `text` to
    MAX_NOTE_TEXT characters with no control characters but tabs and line breaks.

    Raises RequestRefused: 400 BAD_JSON, 413 TOO_LARGE or 422 BAD_REQUEST naming the field.
    """
    payload = parse_ask_body(raw)
    if isinstance(payload, MAPPING):
        _text(payload.get("text"), "", "text", MAX_NOTE_TEXT, multiline=True)
    return payload


def check_ask_payload(payload: Any) -> None:
    """Refuse what the server could not show or answer. Raises RequestRefused (400 BAD_JSON for nesting, 422)."""
    if _depth(payload) > MAX_DEPTH:
        raise _too_deep()
    _check_fields(payload)


def _check_fields(payload: Any) -> None:
    if not isinstance(payload, MAPPING):
        return
    questions = payload.get("questions")
    if isinstance(questions, list):
        _at_most(len(questions), MAX_QUESTIONS, "questions", "questions", "split them over several requests")
        ids: dict[int, str] = {}
        for index, item in enumerate(questions):
            if isinstance(item, MAPPING):
                _check_question(item, f"questions[{index}]")
                if isinstance(question_id := item.get("id"), str):
                    ids[index] = question_id
        _check_unique(ids, "questions[{}].id", "id", "give each question its own id")
    agent = payload.get("agent")
    if isinstance(agent, MAPPING):
        _check_agent(agent)


def _check_question(item: Mapping[str, Any], where: str) -> None:
    # The optional texts are checked only when sent (most asks leave them out): it runs for every question asked.
    _text(item.get("id"), where, ".id", MAX_ID, required=True)
    _text(item.get("question"), where, ".question", MAX_QUESTION, required=True, multiline=True)
    if (header := item.get("header")) is not None:
        _text(header, where, ".header", MAX_HEADER)
    if (detail := item.get("detail")) is not None:
        _text(detail, where, ".detail", MAX_DETAIL, multiline=True)
    intent = item.get("intent")
    if isinstance(intent, MAPPING):
        _text(intent.get("approve"), where, ".intent.approve", MAX_LABEL)
        _text(intent.get("reject"), where, ".intent.reject", MAX_LABEL)
    options = item.get("options")
    if not isinstance(options, list):
        return
    _at_most(len(options), MAX_OPTIONS, f"{where}.options", "options", "offer fewer, or ask a free-text question")
    labels: dict[int, str] = {}
    for index, option in enumerate(options):
        if isinstance(option, MAPPING):
            label = option.get("label")
            at = f"{where}.options[{index}]"
            _text(label, at, ".label", MAX_LABEL, required=True)
            if (description := option.get("description")) is not None:
                _text(description, at, ".description", MAX_DESCRIPTION, multiline=True)
            if isinstance(label, str):
                labels[index] = label
    # A reply like "yes" must pick one option, so labels may not differ only in case or surrounding spaces.
    _check_unique(labels, f"{where}.options[{{}}].label", "label", "give each option its own label", _same_reply)


def _check_agent(agent: Mapping[str, Any]) -> None:
    _text(agent.get("id"), "agent", ".id", MAX_AGENT_TEXT, required=True)
    _text(agent.get("name"), "agent", ".name", MAX_AGENT_TEXT)
    labels = agent.get("labels")
    if not isinstance(labels, MAPPING):
        return
    _at_most(len(labels), MAX_AGENT_LABELS, "agent.labels", "labels", "keep the ones routing needs")
    for key, value in labels.items():
        _text(key, "agent.labels key ", json.dumps(str(key)[:MAX_AGENT_TEXT]), MAX_AGENT_TEXT, required=True)
        _text(value, "agent.labels.", str(key), MAX_AGENT_TEXT)


def _text(
    value: object, where: str, field: str, limit: int, *, required: bool = False, multiline: bool = False
) -> None:
    """Check one text; a refusal names the field as `where + field` (joined only then: most texts are fine)."""
    if not isinstance(value, str):
        return  # absent, or of the wrong type: the model's validation says so
    if required and not value.strip():
        raise field_problem(where + field, "is empty; it must have visible text")
    if len(value) > limit:
        raise field_problem(where + field, f"is {len(value):,} characters long; the limit is {limit:,}")
    control = (_CONTROL_IN_TEXT if multiline else _CONTROL_IN_LINE).search(value)
    if control is not None:
        allowed = "only tab and line breaks are allowed" if multiline else "it must be one line of plain text"
        raise field_problem(where + field, f"contains the control character U+{ord(control[0]):04X}; {allowed}")


def _at_most(count: int, limit: int, where: str, noun: str, advice: str) -> None:
    if count > limit:
        raise field_problem(where, f"has {count:,} {noun}; the limit is {limit}; {advice}")


def _check_unique(
    values: dict[int, str], where: str, noun: str, advice: str, key: Callable[[str], str] | None = None
) -> None:
    seen: dict[str, int] = {}
    for index, value in values.items():
        seen_as = value if key is None else key(value)
        first = seen.setdefault(seen_as, index)
        if first != index:
            raise field_problem(
                where.format(index), f"duplicate {noun} {json.dumps(value)} (as {where.format(first)}); {advice}"
            )


def _same_reply(label: str) -> str:
    return label.strip().casefold()


def _depth(payload: Any) -> int:
    """How deeply arrays and objects nest (counting past MAX_DEPTH stops), walked one level at a time without
    recursion, so hostile nesting cannot overflow the stack."""
    depth = 0
    level: list[Any] = [payload]
    while True:
        below: list[Any] = []
        nested = False
        for value in level:
            if isinstance(value, dict):
                below.extend(value.values())
                nested = True
            elif isinstance(value, list):
                below.extend(value)
                nested = True
        if not nested:
            return depth
        depth += 1
        if depth > MAX_DEPTH:
            return depth
        level = below


def _too_deep() -> RequestRefused:
    return RequestRefused(
        400, BotErrorCode.BAD_JSON, f"the request body nests deeper than {MAX_DEPTH} levels; flatten it"
    )


def field_path(loc: tuple[int | str, ...]) -> str:
    """pydantic's ("questions", 0, "question") as "questions[0].question", the way the other messages name fields."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text
