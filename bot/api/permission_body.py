"""`POST /v1/permissions`'s body and answers, as pydantic models and as the OpenAPI document describes them.

The body is what a coding agent's hook sends (`bot.permissions.prompt.Permission.to_wire`, and the agent); the
limits keep every field showable, and the question it may become within the limits of `POST /v1/questions`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from bot.permissions.prompt import Permission
from bot.questions.validation import MAX_AGENT_TEXT, MAX_BODY_BYTES, MAX_DETAIL
from bot.store.records import AgentRef

MAX_PROJECT = 100
"""Characters of a project (folder) name: the question's header is the agent's name and this, at most 200."""

_CONTROL_IN_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")  # tab, LF and CR allowed


def _one_line(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty; it must have visible text")
    if found := _CONTROL_IN_LINE.search(value):
        raise ValueError(f"contains the control character U+{ord(found[0]):04X}; it must be one line of plain text")
    return value


def _text(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty; it must have visible text")
    if found := _CONTROL_IN_TEXT.search(value):
        raise ValueError(f"contains the control character U+{ord(found[0]):04X}; only tab and line breaks are allowed")
    return value


Line = Annotated[str, Field(max_length=MAX_AGENT_TEXT), AfterValidator(_one_line)]


class PermissionWire(BaseModel):
    """One tool call an agent wants to make (`bot.permissions.prompt.Permission`)."""

    model_config = ConfigDict(extra="forbid")

    agent: Literal["claude", "codex", "gemini", "cursor"]
    project: Annotated[str, Field(max_length=MAX_PROJECT), AfterValidator(_one_line)]
    tool: Line
    kind: Literal["shell", "mcp", "tool"]
    request: Annotated[str, Field(max_length=MAX_BODY_BYTES), AfterValidator(_text)]
    """The command verbatim for a shell tool; the tool input as canonical JSON otherwise."""
    detail: Annotated[str, Field(max_length=MAX_DETAIL), AfterValidator(_text)]
    """What the person sees, verbatim."""
    server: Line | None = None

    def permission(self) -> Permission:
        return Permission(**self.model_dump())


class PermissionBody(BaseModel):
    """`POST /v1/permissions`: the tool call, and the agent asking (routed by its labels as `/v1/questions` is)."""

    model_config = ConfigDict(extra="forbid")

    permission: PermissionWire
    agent: AgentRef | None = None


RULE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "tool": {"type": "string"},
        "match": {"type": "string"},
        "decision": {"enum": ["allow", "deny"]},
        "source": {"enum": ["config", "learned"]},
    },
    "required": ["id", "tool", "match", "decision", "source"],
}
DECIDED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "behavior": {"enum": ["allow", "deny"]},
        "message": {"type": "string", "description": "says which rule decided"},
        "rule": {"$ref": "#/components/schemas/Rule"},
    },
    "required": ["behavior", "message", "rule"],
}
