"""The events the notify hook reads, as the agents send them: built by hand from Claude Code's "Hooks reference"
(code.claude.com/docs/en/hooks: Notification's `message`, `title`, `notification_type`; Stop's `stop_hook_active`,
`last_assistant_message`) and Codex's docs/config.md (`notify`: the JSON as the program's last argument), not
recorded."""

from __future__ import annotations

import json
from typing import Any

SESSION = "8a1f9c2e-1b7d-4c55-9e0a-3f6d2b7c9e11"
THREAD = "b5f6c1c2-1111-2222-3333-444455556666"
CWD = "/home/dev/projects/billing-api"


def claude(event: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": f"/home/dev/.claude/projects/billing-api/{SESSION}.jsonl",
        "cwd": CWD,
        "permission_mode": "default",
        "hook_event_name": event,
    } | fields


def permission_prompt() -> dict[str, Any]:
    return claude(
        "Notification",
        message="Claude needs your permission to use Bash",
        title="Permission needed",
        notification_type="permission_prompt",
    )


def idle_prompt() -> dict[str, Any]:
    return claude(
        "Notification",
        message="Claude is waiting for your input",
        title="Claude Code",
        notification_type="idle_prompt",
    )


def stop(last: str | None = "Renamed `foo` to `bar`; all 112 tests pass.") -> dict[str, Any]:
    fields: dict[str, Any] = {"stop_hook_active": False}
    if last is not None:
        fields["last_assistant_message"] = last
    return claude("Stop", **fields)


def codex_turn_complete(**fields: Any) -> dict[str, Any]:
    return {
        "type": "agent-turn-complete",
        "thread-id": THREAD,
        "turn-id": "12345",
        "cwd": CWD,
        "input-messages": ["Rename `foo` to `bar` and update the callsites."],
        "last-assistant-message": "Rename complete and verified `cargo build` succeeds.",
    } | fields


def text(event: object) -> str:
    return json.dumps(event)
