"""`handraise hook cursor`: Cursor's `beforeShellExecution` and `beforeMCPExecution`.

Shapes from Cursor's hooks documentation (cursor.com/docs/agent/hooks) as quoted by the hook kits built on it: every
event carries `conversation_id`, `generation_id`, `hook_event_name` and `workspace_roots`; `beforeShellExecution` adds
`command` and `cwd`; `beforeMCPExecution` adds `tool_name`, `tool_input` (a JSON string in some versions, an object
in others: both are read) and the server's `url` or `command`. The output is `{"permission": "allow"|"deny",
"agent_message": "…", "user_message": "…"}`. Fallback: `{"permission": "ask"}`, always said out loud (an empty
answer is not "ask"), so Cursor asks the person in the editor.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bot.hooks import details, runner
from bot.hooks.events import BadEvent, event_name, required_text, text
from bot.hooks.plans import Agent, Output, Plan, identity, permission_plan, project_of
from bot.permissions.prompt import Decision, Permission, canonical_input

NAME = "cursor"
SHELL_EVENT, MCP_EVENT = "beforeShellExecution", "beforeMCPExecution"
SHELL_TOOL = "Shell"
"""The tool name a person reads for a shell command ("Allow Shell?"); Cursor's event names none."""


def plan(event: dict[str, Any], labels: dict[str, str]) -> Plan:
    """Raises BadEvent for any other event, or one without its fields."""
    name = event_name(event)
    if name not in (SHELL_EVENT, MCP_EVENT):
        raise BadEvent(f"{name} is not an event handraise answers for Cursor (only {SHELL_EVENT}, {MCP_EVENT})")
    project = project_of(text(event, "cwd") or _first_root(event), NAME)
    agent = identity(NAME, text(event, "conversation_id"), project, labels)
    if name == SHELL_EVENT:
        command = required_text(event, "command")
        detail = details.shell(command, where=text(event, "cwd"))
        permission = Permission(NAME, project, SHELL_TOOL, "shell", command, detail)
    else:
        tool = required_text(event, "tool_name")
        tool_input = _tool_input(event.get("tool_input"))
        server = text(event, "url") or text(event, "command")
        detail = details.mcp(tool, server, tool_input)
        permission = Permission(NAME, project, tool, "mcp", canonical_input(tool_input), detail, server=server)
    return permission_plan(permission, agent, decided)


def decided(decision: Decision) -> Output:
    return {
        "permission": decision.behavior,
        "agent_message": decision.message,
        "user_message": f"handraise: {decision.message}",
    }


def _tool_input(raw: object) -> object:
    """The MCP call's arguments: a JSON string decoded, an object as it is, anything else kept as given."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            return raw
    return {} if raw is None else raw


def _first_root(event: dict[str, Any]) -> str | None:
    roots = event.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0]
    return None


CURSOR = Agent(NAME, fallback={"permission": "ask"}, fallback_note="Cursor will ask in the editor", plan=plan)


def run(args: argparse.Namespace) -> int:
    return runner.run(args, CURSOR)
