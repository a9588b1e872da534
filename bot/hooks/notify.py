"""`handraise hook claude --notify` and `handraise hook codex --notify`: tell the people who answer an agent's
questions that it has finished, or that it waits for them, in the same thread (`POST /v1/notes`).

Claude Code runs it for its `Notification` and `Stop` hook events, one JSON object on stdin (Hooks reference,
code.claude.com/docs/en/hooks). Codex runs the `notify` program of its config.toml after every turn, with the event
JSON as the program's last argument (`type: "agent-turn-complete"`, `thread-id`, `cwd`, `last-assistant-message`;
Codex's docs/config.md). A note is a courtesy nobody waits on: whatever goes wrong (garbage, an event it does not post,
no server, no route) it prints nothing on stdout, says why in one line on stderr and exits 0, and the whole POST is
cut off after `POST_SECONDS`.

Standard library only: it runs at the end of every turn of every session.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
from collections.abc import Sequence
from typing import Any

from bot.clients.http import ApiClient, Unreachable

DEFAULT_SERVER = "http://127.0.0.1:8765"
MAX_EVENT_BYTES = 1024 * 1024
"""An event larger than this is not one the agents send (a Stop with a long last message is well under it)."""
DETAIL_CHARS = 500
"""The agent's own words sent under the note: enough to see where it stands, never its whole answer."""
MAX_ID_CHARS = 150
"""A session or thread id longer than this is garbage (the server takes agent ids of up to 200 characters)."""
MAX_NAME_CHARS = 200
POST_SECONDS = 3.0
"""The whole POST, connecting included; the agent's turn has ended, nobody should wait for a note."""

WAITING_TYPES = frozenset({"permission_prompt", "idle_prompt", "elicitation_dialog"})
"""Claude Code's notifications that mean it waits for a person: a permission prompt, the idle prompt after a finished
turn, an MCP server's question."""
CODEX_TURN_COMPLETE = "agent-turn-complete"

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
"""What the server refuses in a note's text, but tab and line feed (a carriage return becomes a space)."""


class NotANote(ValueError):
    """The input cannot become a note; the message says why, in one line."""


def run_notify(args: argparse.Namespace) -> int:
    """Post the note the agent's event makes. Always 0 (nothing the agent does depends on it).

    `args`: `agent` ("claude" or "codex"), `server` (None: $HANDRAISE_SERVER, else the default), `label` (key=value
    strings) and, for Codex, `payload` (the program's extra arguments, the event JSON last).
    """
    agent = str(getattr(args, "agent", ""))
    try:
        labels = parse_labels(getattr(args, "label", None) or [])
        if agent == "claude":
            body = claude_note(read_stdin(), labels)
        elif agent == "codex":
            payload: Sequence[str] = getattr(args, "payload", None) or []
            body = codex_note(payload[-1] if payload else "", labels)
        else:
            raise NotANote(f"no notes for {agent!r}; use claude or codex")
    except NotANote as problem:
        return _say(agent, str(problem))
    server = getattr(args, "server", None) or os.environ.get("HANDRAISE_SERVER") or DEFAULT_SERVER
    problem = post_note(server, os.environ.get("HANDRAISE_API_TOKEN"), body)
    return _say(agent, problem) if problem is not None else 0


# --- the agents' events --------------------------------------------------------------------------------------------


def claude_note(raw: str, labels: dict[str, str]) -> dict[str, Any]:
    """The note body for a Claude Code `Notification` (one that waits for a person) or `Stop` event.

    Raises NotANote for garbage, another event, or a notification that is not about waiting.
    """
    event = _json_object(raw, "stdin")
    name = event.get("hook_event_name")
    if name == "Stop":
        kind, text = "finished", event.get("last_assistant_message")
    elif name == "Notification":
        notification_type = event.get("notification_type")
        if notification_type not in WAITING_TYPES:
            raise NotANote(f"a {_shown(notification_type)} notification is not one handraise posts")
        kind, text = "waiting", event.get("message")
    else:
        raise NotANote(f"{_shown(name)} is not an event handraise posts a note for (Notification, Stop)")
    session = _identifier(event, "session_id")
    return note_body("claude", f"claude-{session}", event.get("cwd"), labels, kind, text)


def codex_note(raw: str, labels: dict[str, str]) -> dict[str, Any]:
    """The note body for Codex's `notify` payload (an `agent-turn-complete`: the turn finished).

    Raises NotANote for garbage, no payload, or another type of notification.
    """
    if not raw:
        raise NotANote("no notification JSON; Codex passes it as the last argument")
    if len(raw.encode("utf-8", errors="replace")) > MAX_EVENT_BYTES:
        raise NotANote(f"the notification is over {MAX_EVENT_BYTES} bytes")
    event = _json_object(raw, "the notification")
    if event.get("type") != CODEX_TURN_COMPLETE:
        raise NotANote(f"a {_shown(event.get('type'))} notification is not one handraise posts")
    thread = _identifier(event, "thread-id")
    text = event.get("last-assistant-message")
    return note_body("codex", f"codex-{thread}", event.get("cwd"), labels, "finished", text)


def note_body(
    tool: str, agent_id: str, cwd: object, labels: dict[str, str], event: str, text: object
) -> dict[str, Any]:
    """`POST /v1/notes`'s body: the agent as its questions name it (routed alike), the event, a short detail."""
    folder = os.path.basename(cwd.rstrip("/\\")) if isinstance(cwd, str) else ""
    project = _CONTROL.sub("", folder.replace("\r", "")).replace("\n", " ").replace("\t", " ")[:MAX_NAME_CHARS]
    project = project.strip() or tool
    body: dict[str, Any] = {
        "agent": {"id": agent_id, "name": project, "labels": {"tool": tool, "project": project, **labels}},
        "event": event,
    }
    detail = shorten(text)
    if detail is not None:
        body["text"] = detail
    return body


def shorten(text: object) -> str | None:
    """The agent's words as a note shows them: no control characters, no blank runs, at most DETAIL_CHARS."""
    if not isinstance(text, str):
        return None
    cleaned = _CONTROL.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n"))
    cleaned = re.sub(r"\n\s*\n+", "\n", cleaned).strip()
    if len(cleaned) > DETAIL_CHARS:
        cleaned = cleaned[: DETAIL_CHARS - 1].rstrip() + "…"
    return cleaned or None


# --- input and output ----------------------------------------------------------------------------------------------


def read_stdin() -> str:
    """The hook event on stdin. Raises NotANote when it is oversize or not UTF-8."""
    raw = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    if len(raw) > MAX_EVENT_BYTES:
        while sys.stdin.buffer.read(1 << 16):  # read the rest unseen: the agent should not meet a broken pipe
            pass
        raise NotANote(f"stdin is over {MAX_EVENT_BYTES} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NotANote("stdin is not UTF-8") from None


def parse_labels(pairs: Sequence[str]) -> dict[str, str]:
    """`--label key=value` flags. Raises NotANote for a malformed one."""
    labels: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise NotANote(f"--label {pair!r}: write it as key=value")
        labels[key] = value
    return labels


def post_note(server: str, token: str | None, body: dict[str, Any]) -> str | None:
    """POST the note, all of it within POST_SECONDS; None once the server took it, else what went wrong."""
    outcome: list[str | None] = []

    def send() -> None:
        try:
            # The client's own timeout lies beyond the join below, so a silent server is always told the same way.
            reply = ApiClient(server, token, timeout=POST_SECONDS + 1).call("POST", "/v1/notes", body)
        except Unreachable as error:
            outcome.append(f"{error}; is `handraise serve` running?")
            return
        error = reply.body.get("error") if reply.status not in (200, 202) else None
        if reply.status in (200, 202):
            outcome.append(None)
        elif isinstance(error, dict):
            outcome.append(f"{error.get('code', reply.status)}: {error.get('message', '')}")
        else:
            outcome.append(f"the server answered HTTP {reply.status}")

    # A daemon thread: one still stuck in a connect when the time is up does not keep the process alive.
    worker = threading.Thread(target=send, daemon=True)
    worker.start()
    worker.join(POST_SECONDS)
    if not outcome:
        return f"handraise at {server} did not take the note within {POST_SECONDS:g} s"
    return outcome[0]


def _json_object(raw: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise NotANote(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise NotANote(f"{what} is not a JSON object")
    return value


def _identifier(event: dict[str, Any], field: str) -> str:
    value = event.get(field)
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_CHARS or _CONTROL.search(value):
        raise NotANote(f"the event has no usable {field}")
    return value


def _shown(value: object) -> str:
    """Some of an unexpected value, for the stderr line."""
    return json.dumps(value)[:60] if value is not None else "missing"


def _say(agent: str, reason: str) -> int:
    print(f"handraise hook {agent} --notify: {reason}; no note posted", file=sys.stderr)
    return 0
