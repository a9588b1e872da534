"""A ready `can_use_tool` callback for the Claude Agent SDK: AskUserQuestion answered through handraise, and every
other tool approved or denied there ("Allow Bash?" with what it will run), as `handraise claude-hook` does for the
Claude Code CLI.

    from claude_agent_sdk import ClaudeAgentOptions
    from bot.claude.agent_sdk import handraise_can_use_tool

    options = ClaudeAgentOptions(can_use_tool=handraise_can_use_tool())

Shapes from the SDK's "Handle approvals and user input" guide: `can_use_tool(tool_name, input, context)` returns
`PermissionResultAllow(updated_input=…)` (for AskUserQuestion, the original `questions` plus `answers` keyed by
question text) or `PermissionResultDeny(message=…)`. Unlike the hook there is no terminal prompt to fall back to, so
anything that goes wrong (no route, no server, the question cancelled) denies, with the reason as the message.

Needs the SDK: `pip install 'handraise[claude]'`.
"""

from __future__ import annotations

import os
from typing import Any

try:
    from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext
    from claude_agent_sdk.types import CanUseTool, PermissionResult
except ImportError as missing:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "bot.claude.agent_sdk needs the Claude Agent SDK: pip install 'handraise[claude]'", name=missing.name
    ) from missing

from bot.claude import translate
from bot.clients.agent import Agent, HandraiseClient
from core import UserQuestionError


def handraise_can_use_tool(client: HandraiseClient | None = None, *, agent: Agent | None = None) -> CanUseTool:
    """The callback. `agent` defaults to the client's, else one named for the working directory's folder
    (labels `tool=claude-agent-sdk`, `project=<folder>`) so subscriptions can route it per project."""
    handraise = client or HandraiseClient()
    project = os.path.basename(os.getcwd().rstrip("/")) or "claude-agent"
    who: Agent = (
        agent
        or handraise.agent
        or {
            "id": f"claude-agent-{project}",
            "name": project,
            "labels": {"tool": "claude-agent-sdk", "project": project},
        }
    )

    async def can_use_tool(
        tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        try:
            if tool_name == translate.ASK_TOOL:
                questions = translate.questions_of(tool_input)
                answer = await handraise.ask_async(questions, agent=who)
                return PermissionResultAllow(updated_input=translate.answered_input(tool_input, answer.to_wire()))
            event = translate.HookEvent("PermissionRequest", tool_name, tool_input, "", os.getcwd())
            answer = await handraise.ask_async([translate.permission_question(event)], agent=who)
        except translate.NotAHookEvent as error:
            return PermissionResultDeny(message=f"handraise could not read the questions: {error}")
        except UserQuestionError as error:
            return PermissionResultDeny(message=f"handraise: {error.message} ({error.code})")
        output = translate.permission_decision(answer.to_wire(), None)
        decision = output["hookSpecificOutput"]["decision"] if output else None
        if decision is None:
            return PermissionResultDeny(message="The person skipped the question in handraise; treat it as no.")
        if decision["behavior"] == "allow":
            return PermissionResultAllow()
        return PermissionResultDeny(message=decision["message"])

    return can_use_tool
