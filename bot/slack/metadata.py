"""The message metadata handraise puts on each question it posts, and finding that post again in a conversation's
history: a replica that died between `chat.postMessage` and recording the delivery leaves the next owner to look
before posting again. Pure.

History is other people's and other apps' messages too: only a message posted by this app's own bot, with metadata
of exactly our shape naming the question, counts; anything else is ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

EVENT_TYPE = "handraise_question"
MAX_ID_LENGTH = 200


def question_metadata(question_id: str) -> dict[str, Any]:
    """The `metadata` argument of the question's `chat.postMessage`."""
    return {"event_type": EVENT_TYPE, "event_payload": {"question_id": question_id}}


def posted_question(messages: Iterable[object], question_id: str, bot_id: str) -> str | None:
    """The ts of the message in `messages` (history items) that our bot posted for `question_id`, or None."""
    for message in messages:
        if not isinstance(message, dict) or message.get("bot_id") != bot_id:  # pyright: ignore[reportUnknownMemberType]
            continue
        metadata: object = message.get("metadata")  # pyright: ignore[reportUnknownMemberType]
        ts: object = message.get("ts")  # pyright: ignore[reportUnknownMemberType]
        if _names(metadata) == question_id and isinstance(ts, str) and 0 < len(ts) <= 40:
            return ts
    return None


def _names(metadata: object) -> str | None:
    """The question id our metadata names, or None for anything not of our shape."""
    if not isinstance(metadata, dict) or metadata.get("event_type") != EVENT_TYPE:  # pyright: ignore[reportUnknownMemberType]
        return None
    payload: object = metadata.get("event_payload")  # pyright: ignore[reportUnknownMemberType]
    if not isinstance(payload, dict):
        return None
    question_id: object = payload.get("question_id")  # pyright: ignore[reportUnknownMemberType]
    return question_id if isinstance(question_id, str) and 0 < len(question_id) <= MAX_ID_LENGTH else None
