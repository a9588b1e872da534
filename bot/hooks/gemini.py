"""`handraise hook gemini`: Gemini CLI's `BeforeTool`, before a tool runs.

Shapes from Gemini CLI's hooks reference (docs/hooks/reference.md) and its types (packages/core/src/hooks/types.ts):
the input carries `session_id`, `cwd`, `hook_event_name`, `tool_name` (`run_shell_command`, `write_file`, `replace`,
`web_fetch`, MCP tools), `tool_input`, and `mcp_context` (`server_name`, `tool_name`) for MCP tools. The output is
`{"decision": "allow"}` or `{"decision": "deny", "reason": "…"}`, the reason required and sent to the model.
Fallback: no output, so Gemini CLI goes on as if there were no hook (its own policy and prompt).

Gemini CLI applies its own approval policy after a hook's allow: in its default mode it may still ask in the terminal
(see docs/agents.md).
"""

from __future__ import annotations

import argparse
from typing import Any

from bot.hooks import details, runner
from bot.hooks.events import BadEvent, event_name, required_text, text
from bot.hooks.plans import Agent, Output, Plan, identity, permission_plan, project_of
from bot.permissions.prompt import Decision, Permission, canonical_input

NAME = "gemini"
BEFORE_TOOL = "BeforeTool"
SHELL_TOOL = "run_shell_command"


def plan(event: dict[str, Any], labels: dict[str, str]) -> Plan:
    """Raises BadEvent for any other event, or one without the tool fields."""
    name = event_name(event)
    if name != BEFORE_TOOL:
        raise BadEvent(f"{name} is not an event handraise answers for Gemini CLI (only {BEFORE_TOOL})")
    tool = required_text(event, "tool_name")
    tool_input = event.get("tool_input")
    if not isinstance(tool_input, dict):
        raise BadEvent("the event's tool_input is not an object")
    project = project_of(text(event, "cwd"), NAME)
    agent = identity(NAME, text(event, "session_id"), project, labels)
    return permission_plan(permission_of(tool, tool_input, event.get("mcp_context"), project), agent, decided)


def permission_of(tool: str, tool_input: dict[str, Any], mcp_context: object, project: str) -> Permission:
    command, description = tool_input.get("command"), tool_input.get("description")
    if tool == SHELL_TOOL and isinstance(command, str) and command:
        why = description if isinstance(description, str) else None
        folder = text(tool_input, "dir_path") or text(tool_input, "directory")  # the older name
        return Permission(NAME, project, tool, "shell", command, details.shell(command, why, folder))
    request = canonical_input(tool_input)
    if isinstance(mcp_context, dict):
        server, original = mcp_context.get("server_name"), mcp_context.get("tool_name")
        server = server if isinstance(server, str) and server else None
        shown = original if isinstance(original, str) and original else tool
        detail = details.mcp(shown, server, tool_input)
        return Permission(NAME, project, tool, "mcp", request, detail, server=server)
    return Permission(NAME, project, tool, "tool", request, details.tool(tool, tool_input))


def decided(decision: Decision) -> Output:
    if decision.behavior == "allow":
        return {"decision": "allow"}
    return {"decision": "deny", "reason": decision.message or "Denied through handraise."}


GEMINI = Agent(NAME, fallback=None, fallback_note="Gemini CLI will decide as if there were no hook", plan=plan)


def run(args: argparse.Namespace) -> int:
    return runner.run(args, GEMINI)
