"""What is pushed for a question: the JSON the service worker shows (pure).

`{"id", "title", "body", "actions": [{"action", "title"}], "answer_url", "answer_token", "url"}`: the question's
text in the body, at most two buttons (the first two options a tap can answer; none when the question needs words,
and the worker then opens the question at `url`), and what a button posts back with. Everything fits one push
record: the body is trimmed, never the buttons or the token.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from bot.store.records import QuestionRecord
from bot.web.push.encryption import MAX_PLAINTEXT
from core import AskUserQuestionItem

MAX_ACTIONS = 2
"""Chromium shows two notification buttons (`Notification.maxActions`); Firefox shows two as well."""
MAX_TITLE = 120
MAX_ACTION_TITLE = 40
CUT = "…"
ANSWER_PATH = "/push/answer/"
_ACTION = re.compile(r"o(0|[1-9][0-9]{0,2})", re.ASCII)
WORDS = frozenset({"other", "request changes", "something else"})
"""Option labels that stand for the person's own words (the inbox shows them as a text box)."""


def action_id(option: int) -> str:
    return f"o{option}"


def option_of(action: str) -> int | None:
    """The option index an action id names, or None when it names none."""
    found = _ACTION.fullmatch(action)
    return int(found[1]) if found else None


def needs_words(question: AskUserQuestionItem, label: str) -> bool:
    """Whether choosing `label` asks for words too: the plan review's reject option ("Deny…", "Request changes"),
    "Other…", or any label that trails off."""
    if question.intent is not None and label == question.intent.reject:
        return True
    stripped = label.strip()
    return stripped.endswith(("…", "...")) or stripped.strip(" .…").casefold() in WORDS


def tappable_options(record: QuestionRecord) -> list[int]:
    """The options a tap answers, at most two: none unless the record is one single-choice question."""
    if len(record.questions) != 1:
        return []
    question = record.questions[0]
    if question.multi_select or not question.options:
        return []
    return [n for n, option in enumerate(question.options) if not needs_words(question, option.label)][:MAX_ACTIONS]


def question_url(question_id: str) -> str:
    """The question's card in the inbox, relative to the inbox (the worker opens it on the inbox's origin)."""
    return "/#card-" + quote(question_id, safe="")


def answer_url(question_id: str) -> str:
    return ANSWER_PATH + quote(question_id, safe="")


def title_of(record: QuestionRecord) -> str:
    first = record.questions[0] if record.questions else None
    agent = (record.agent.name or record.agent.id) if record.agent is not None else None
    text = first.header if first is not None and first.header else (f"{agent} asks" if agent else "A question for you")
    return _cut(text, MAX_TITLE)


def body_of(record: QuestionRecord) -> str:
    parts = [question.question for question in record.questions]
    if len(parts) > 1:
        parts = [f"{number}) {part}" for number, part in enumerate(parts, 1)]
    return "\n".join(parts)


def render_notification(record: QuestionRecord, answer_token: str, base_url: str = "") -> bytes:
    """The push payload for `record` (UTF-8 JSON within one record). `answer_token` is the device's own token; with
    no button it is still sent (the worker ignores it). `base_url` (`[server] public_url`) makes the links absolute;
    without it they are relative to the inbox, which the worker resolves against its own origin."""
    options = record.questions[0].options or [] if record.questions else []
    actions = [
        {"action": action_id(n), "title": _cut(options[n].label, MAX_ACTION_TITLE)} for n in tappable_options(record)
    ]
    message: dict[str, Any] = {
        "id": record.id,
        "title": title_of(record),
        "body": "",
        "actions": actions,
        "answer_url": base_url + answer_url(record.id),
        "answer_token": answer_token,
        "url": base_url + question_url(record.id),
    }
    room = MAX_PLAINTEXT - len(_encode(message))
    message["body"] = _fit(body_of(record), room)
    return _encode(message)


def _encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _fit(text: str, room: int) -> str:
    """`text`, cut with "…" so that its JSON string takes at most `room` bytes (escapes counted)."""

    def size(candidate: str) -> int:
        return len(json.dumps(candidate, ensure_ascii=False).encode("utf-8")) - 2

    if size(text) <= room:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest start that fits with the mark
        middle = (low + high + 1) // 2
        if size(text[:middle] + CUT) <= room:
            low = middle
        else:
            high = middle - 1
    return text[:low] + CUT if low or room >= size(CUT) else ""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + CUT
