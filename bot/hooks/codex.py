"""`handraise hook codex`: OpenAI Codex's `PermissionRequest`, the approval prompt before a command runs.

Shapes from Codex's hook schemas (codex-rs/hooks/schema/generated/permission-request.command.*.schema.json) and the
pull request that added the event (openai/codex#17563): the input carries `session_id`, `turn_id`, `cwd`, `tool_name`
("Bash" for shell commands and network approvals, `mcp__server__tool` for MCP tools) and `tool_input` (`command`,
`description`). The output is exactly `{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision":
{"behavior": "allow"|"deny", "message": "…"}}}`: Codex fails closed on `updatedInput`, `updatedPermissions` and
`interrupt`, so they are never sent, and never `continue: false`. Fallback: no output (Codex's own approval prompt).
"""

from __future__ import annotations

import argparse
from typing import Any

from bot.hooks import details, runner
from bot.hooks.events import BadEvent, event_name, required_text, text
from bot.hooks.plans import Agent, Output, Plan, identity, mcp_parts, permission_plan, project_of
from bot.permissions.prompt import Decision, Permission, canonical_input

NAME = "codex"
PERMISSION_REQUEST = "PermissionRequest"


def plan(event: dict[str, Any], labels: dict[str, str]) -> Plan:
    """Raises BadEvent for any other event, or one without the tool fields."""
    name = event_name(event)
    if name != PERMISSION_REQUEST:
        raise BadEvent(f"{name} is not an event handraise answers for Codex (only {PERMISSION_REQUEST})")
    tool = required_text(event, "tool_name")
    tool_input = event.get("tool_input")
    if not isinstance(tool_input, dict):
        raise BadEvent("the event's tool_input is not an object")
    project = project_of(text(event, "cwd"), NAME)
    agent = identity(NAME, text(event, "session_id"), project, labels)
    return permission_plan(permission_of(tool, tool_input, project), agent, decided)


def permission_of(tool: str, tool_input: dict[str, Any], project: str) -> Permission:
    command, description = tool_input.get("command"), tool_input.get("description")
    why = description if isinstance(description, str) else None
    if tool == "Bash" and isinstance(command, str) and command:
        return Permission(NAME, project, tool, "shell", command, details.shell(command, why))
    request = canonical_input(tool_input)
    if (parts := mcp_parts(tool)) is not None:
        server, name = parts
        return Permission(NAME, project, tool, "mcp", request, details.mcp(name, server, tool_input), server=server)
    if isinstance(command, str) and command:  # apply_patch and its kin carry their text in `command`
        return Permission(NAME, project, tool, "tool", request, f"{tool}\n\n" + details.shell(command, why))
    return Permission(NAME, project, tool, "tool", request, details.tool(tool, tool_input))


def decided(decision: Decision) -> Output:
    body = {"behavior": decision.behavior, "message": decision.message}
    return {"hookSpecificOutput": {"hookEventName": PERMISSION_REQUEST, "decision": body}}


CODEX = Agent(NAME, fallback=None, fallback_note="Codex will ask in the terminal", plan=plan)


def run(args: argparse.Namespace) -> int:
    return runner.run(args, CODEX)
