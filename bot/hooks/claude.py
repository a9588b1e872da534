"""`handraise hook claude` (alias `handraise claude-hook`): Claude Code's questions and permission prompts.

Shapes from Claude Code's Hooks reference (code.claude.com/docs/en/hooks):
- `AskUserQuestion` in `PreToolUse` or `PermissionRequest`: its questions are asked as they are, and the answers go
  back in `updatedInput` (bot/claude/translate.py).
- `PermissionRequest` for any other tool: the permission prompt (Allow / Deny… / Always allow), answered with
  `hookSpecificOutput.decision` {behavior, message}. "Always allow" also returns the event's
  `permission_suggestions`, unchanged, as `decision.updatedPermissions`: Claude Code's own "don't ask again".
- Every other event (PreToolUse of other tools, PostToolUse, …) is left to Claude Code without a word.
Fallback: no output at all, so Claude Code asks in the terminal.
"""

from __future__ import annotations

import argparse
from typing import Any

from bot.claude import translate
from bot.hooks import details, runner
from bot.hooks.events import BadEvent
from bot.hooks.plans import Agent, Output, Plan, identity, mcp_parts, permission_plan, project_of
from bot.permissions.prompt import Decision, Permission, canonical_input

NAME = "claude"
PRE_TOOL_USE, PERMISSION_REQUEST = "PreToolUse", "PermissionRequest"


def plan(event: dict[str, Any], labels: dict[str, str]) -> Plan | None:
    """Raises BadEvent for an event without the tool fields, or an AskUserQuestion that is not its documented shape."""
    try:
        hook = translate.event_of(event)
        questions = translate.questions_of(hook.tool_input) if hook.tool_name == translate.ASK_TOOL else []
    except translate.NotAHookEvent as error:
        raise BadEvent(str(error)) from None
    project = project_of(hook.cwd, NAME)
    agent = identity(NAME, hook.session_id, project, labels)
    asked = hook.tool_input
    if hook.tool_name == translate.ASK_TOOL and hook.event == PRE_TOOL_USE:
        return Plan(agent, questions, lambda answer, by: translate.pre_tool_use_answer(asked, answer), _refuse)
    if hook.tool_name == translate.ASK_TOOL and hook.event == PERMISSION_REQUEST:
        return Plan(agent, questions, lambda answer, by: translate.permission_answer(asked, answer), decided)
    if hook.event == PERMISSION_REQUEST:
        suggestions = event.get("permission_suggestions")
        return permission_plan(permission_of(hook, project), agent, lambda decision: decided(decision, suggestions))
    return None


def permission_of(hook: translate.HookEvent, project: str) -> Permission:
    """Bash is a shell command, `mcp__server__tool` an MCP call, anything else a tool with its input."""
    if hook.tool_name == "Write":  # the whole text to be written, not only its head as the Agent SDK shows it
        detail = details.tool(hook.tool_name, hook.tool_input)
    else:
        detail = translate.describe_tool(hook.tool_name, hook.tool_input)
    command = hook.tool_input.get("command")
    if hook.tool_name == "Bash" and isinstance(command, str) and command:
        return Permission(NAME, project, hook.tool_name, "shell", command, detail)
    request = canonical_input(hook.tool_input)
    if (parts := mcp_parts(hook.tool_name)) is not None:
        return Permission(NAME, project, hook.tool_name, "mcp", request, detail, server=parts[0])
    return Permission(NAME, project, hook.tool_name, "tool", request, detail)


def decided(decision: Decision, suggestions: object = None) -> Output:
    """PermissionRequest's `decision`; with "Always allow", Claude Code's own suggestions as `updatedPermissions`."""
    body: dict[str, Any] = {"behavior": decision.behavior}
    if decision.behavior == "deny":
        body["message"] = decision.message
    if decision.always and isinstance(suggestions, list):
        body["updatedPermissions"] = suggestions
    return {"hookSpecificOutput": {"hookEventName": PERMISSION_REQUEST, "decision": body}}


def _refuse(decision: Decision) -> Output:
    # Only a timeout with `--on-timeout deny` decides an AskUserQuestion without its answers.
    return {
        "hookSpecificOutput": {
            "hookEventName": PRE_TOOL_USE,
            "permissionDecision": "deny",
            "permissionDecisionReason": decision.message,
        }
    }


CLAUDE = Agent(NAME, fallback=None, fallback_note="Claude Code will ask in the terminal", plan=plan)


def run(args: argparse.Namespace) -> int:
    return runner.run(args, CLAUDE)
