"""A permission request as the hook sends it to `serve`, the question a person sees, and the decision read back.

Standard library only: the hook imports this on every tool call of every agent.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

PERMISSION_ID = "permission"
ALLOW = "Allow"
DENY = "Deny…"
ALWAYS = "Always allow"
"""The label of the option that allows now and learns a rule; its description says what will be allowed."""
AGENTS = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "cursor": "Cursor"}
"""The agents a hook speaks for, by the `tool` label they carry, with the name a person reads."""
Kind = Literal["shell", "mcp", "tool"]
SHORT_COMMAND = 60
"""Characters of a command quoted in the "Always allow" description before it is cut with an ellipsis."""


class BadPermission(ValueError):
    """A permission body that is not the documented shape; the message names the field."""


@dataclass(frozen=True)
class Permission:
    """One tool call an agent wants to make, as rules and "Always allow" see it.

    `request` is what "the identical request" compares: the command itself for a shell call, the tool input as
    canonical JSON otherwise.
    """

    agent: str
    project: str
    tool: str
    kind: Kind
    request: str
    detail: str
    server: str | None = None

    @property
    def command(self) -> str | None:
        return self.request if self.kind == "shell" else None

    def to_wire(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}

    @classmethod
    def from_wire(cls, data: object) -> Permission:
        if not isinstance(data, dict):
            raise BadPermission("permission must be an object")
        fields: dict[str, Any] = {}
        for name in ("agent", "project", "tool", "kind", "request", "detail"):
            value = data.get(name)
            if not isinstance(value, str):
                raise BadPermission(f"permission.{name} must be a string")
            fields[name] = value
        if fields["agent"] not in AGENTS:
            raise BadPermission(f"permission.agent must be one of {', '.join(AGENTS)}")
        if fields["kind"] not in ("shell", "mcp", "tool"):
            raise BadPermission("permission.kind must be shell, mcp or tool")
        if not fields["tool"] or not fields["request"]:
            raise BadPermission("permission.tool and permission.request must not be empty")
        server = data.get("server")
        if server is not None and not isinstance(server, str):
            raise BadPermission("permission.server must be a string")
        return cls(server=server, **fields)


def canonical_input(tool_input: object) -> str:
    """A tool input as one stable text: the same input always gives the same text, whatever its key order."""
    return json.dumps(tool_input, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def always_description(permission: Permission) -> str:
    """What "Always allow" will allow, said plainly: the same request, by the same agent, in the same project."""
    if permission.kind == "shell":
        what = permission.request
        what = what if len(what) <= SHORT_COMMAND else what[: SHORT_COMMAND - 1] + "…"
        what = f"`{what}`"
    else:
        what = f"{permission.tool} with this input"
    return f"{what} from {AGENTS[permission.agent]} in {permission.project}, from now on without asking"


def question(permission: Permission) -> dict[str, Any]:
    """The one question a person sees: "Allow Bash?", the request verbatim in `detail`, three options, "Deny…"
    being the one that asks for the person's words."""
    return {
        "id": PERMISSION_ID,
        "question": f"Allow {permission.tool}?",
        "header": f"{AGENTS[permission.agent]} · {permission.project}",
        "detail": permission.detail,
        "options": [
            {"label": ALLOW, "description": "just this once"},
            {"label": DENY, "description": "the agent is told no, with your reason when you give one"},
            {"label": ALWAYS, "description": always_description(permission)},
        ],
        # "Deny…" is each channel's words path (Slack's modal, Telegram's prompt, the inbox's field): no separate
        # "Request changes…", and the words typed come back as `custom`, which decision_of reads as the reason.
        "intent": {"kind": "plan-review", "approve": ALLOW, "reject": DENY},
    }


@dataclass(frozen=True)
class Decision:
    """How a person (or a rule) decided. `message` is said to the agent: the person's words, or who denied."""

    behavior: Literal["allow", "deny"]
    message: str = ""
    always: bool = False


def decision_of(answer: dict[str, Any], resolved_by: str | None) -> Decision | None:
    """The answer's decision; None for a skipped question (the agent's own prompt decides)."""
    items = answer.get("answers") or []
    item = next((i for i in items if isinstance(i, dict) and i.get("id") == PERMISSION_ID), {})
    custom, selected = item.get("custom"), list(item.get("selected") or [])
    if custom:
        return Decision("deny", str(custom))
    if ALWAYS in selected:
        return Decision("allow", f"Always allowed{_by(resolved_by)} through handraise.", always=True)
    if ALLOW in selected:
        return Decision("allow", f"Allowed{_by(resolved_by)} through handraise.")
    if DENY in selected:
        return Decision("deny", f"Denied{_by(resolved_by)} through handraise.")
    return None


def _by(who: str | None) -> str:
    return f" by {who}" if who else ""
