"""Slack payloads shaped like the real ones (trimmed to what handraise reads, plus some noise it must ignore)."""

from __future__ import annotations

import itertools
from typing import Any

from bot.slack.ids import ModalRef

TEAM = {"id": "T0TEAM", "domain": "example"}
_SERIAL = itertools.count(1)
"""Slack gives every event its own `event_id` and every click its own `action_ts`; so do these payloads."""


def action_ts() -> str:
    return f"1700000300.{next(_SERIAL):06d}"


def option(value: int | str, text: str = "x") -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": text, "emoji": True}, "value": str(value)}


def button(action_id: str, value: str, *, at: str | None = None) -> dict[str, Any]:
    """A button click; give `at` (its action_ts) to send the same click again."""
    return {"type": "button", "action_id": action_id, "block_id": "b", "value": value, "action_ts": at or action_ts()}


def radio(action_id: str, value: int) -> dict[str, Any]:
    choice = {"type": "radio_buttons", "action_id": action_id, "block_id": "b", "selected_option": option(value)}
    return choice | {"action_ts": action_ts()}


def held(question: int, *values: int, kind: str = "checkboxes") -> dict[str, Any]:
    """One entry of `state.values`: question `question`'s held selection."""
    if kind in ("radio_buttons", "static_select"):
        entry = {"type": kind, "selected_option": option(values[0]) if values else None}
    else:
        entry = {"type": kind, "selected_options": [option(v) for v in values]}
    return {f"hr.q{question}.choice": {f"hr.hold.{question}": entry}}


def block_actions(
    action: dict[str, Any],
    *,
    user: str = "U0ALICE",
    channel: str = "C0DEPLOY",
    ts: str = "1700000000.000100",
    thread_ts: str | None = None,
    state: dict[str, Any] | None = None,
    response_url: str = "https://hooks.slack.com/actions/T0TEAM/1/abc",
) -> dict[str, Any]:
    container: dict[str, Any] = {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": False}
    message: dict[str, Any] = {"type": "message", "ts": ts, "text": "…", "blocks": []}
    if thread_ts is not None:
        container["thread_ts"] = thread_ts
        message["thread_ts"] = thread_ts
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": TEAM["id"]},
        "api_app_id": "A0APP",
        "token": "legacy-verification-token",
        "container": container,
        "trigger_id": "1234.5678.abcdef",
        "team": TEAM,
        "channel": {"id": channel, "name": "deploys"},
        "message": message,
        "state": {"values": state or {}},
        "response_url": response_url,
        "actions": [action],
    }


def text_entry(value: str | None) -> dict[str, Any]:
    return {"text": {"type": "plain_text_input", "value": value}}


def view_submission(
    ref: ModalRef, values: dict[str, Any], *, user: str = "U0ALICE", callback_id: str = "hr.answer"
) -> dict[str, Any]:
    return {
        "type": "view_submission",
        "team": TEAM,
        "user": {"id": user, "username": user.lower(), "team_id": TEAM["id"]},
        "api_app_id": "A0APP",
        "trigger_id": "9.9.9",
        "view": {
            "id": "V0VIEW",
            "type": "modal",
            "callback_id": callback_id,
            "private_metadata": ref.dump(),
            "state": {"values": values},
            "hash": "h",
        },
    }


def message_event(
    text: str,
    *,
    user: str = "U0ALICE",
    channel: str = "C0DEPLOY",
    thread_ts: str | None,
    ts: str = "1700000100.000200",
    event_id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A message event; give `event_id` to deliver the same event again, as Slack retries."""
    event: dict[str, Any] = {"type": "message", "user": user, "text": text, "ts": ts, "channel": channel}
    event["channel_type"] = "channel"
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM["id"],
        "api_app_id": "A0APP",
        "type": "event_callback",
        "event_id": event_id or f"Ev{next(_SERIAL):08d}",
        "event_time": 1700000100,
        "event": event | extra,
        "authorizations": [{"team_id": TEAM["id"], "user_id": "U0BOT", "is_bot": True}],
    }
