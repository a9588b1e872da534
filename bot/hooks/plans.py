"""What an agent's hook module hands the runner: who asks, what to ask, and how an answer becomes the agent's output.

Each agent module (claude, codex, gemini, cursor) reads its own event and builds a Plan; the runner
(bot/hooks/runner.py) does the asking, the waiting and the giving up, the same for all of them. Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.permissions.prompt import Decision, Permission, decision_of, question

Output = dict[str, Any]
"""One JSON object for the agent's stdout."""
Answered = Callable[[dict[str, Any], "str | None"], "Output | None"]
"""The answer (wire JSON) and who gave it → the output, or None for no opinion (the agent's fallback)."""
Respond = Callable[[Decision], Output]
"""A decision made without a reading of the answer (a rule, or a timeout with `--on-timeout deny`) → the output."""


@dataclass(frozen=True)
class Plan:
    """One event's question. With `permission`, serve is asked through POST /v1/permissions (rules, "Always allow");
    without it (Claude Code's AskUserQuestion), `questions` go to POST /v1/questions as they are."""

    agent: dict[str, Any]
    questions: list[dict[str, Any]]
    answered: Answered
    respond: Respond
    permission: Permission | None = None


@dataclass(frozen=True)
class Agent:
    """One coding agent as the runner sees it."""

    name: str
    """The `tool` label and the sub-command: claude, codex, gemini, cursor."""
    fallback: Output | None
    """What to print when handraise has no opinion (None: print nothing), so the agent asks in its own way."""
    fallback_note: str
    """The end of the stderr line on a fallback: what the agent does next, e.g. "Codex will ask in the terminal"."""
    plan: Callable[[dict[str, Any], dict[str, str]], Plan | None]
    """The event and the `--label`s → the plan; None for an event left alone without a word. Raises BadEvent."""


def permission_plan(permission: Permission, agent: dict[str, Any], respond: Respond) -> Plan:
    """A permission prompt: the one question of bot.permissions.prompt, its answer read by decision_of."""

    def answered(answer: dict[str, Any], resolved_by: str | None) -> Output | None:
        decision = decision_of(answer, resolved_by)
        return None if decision is None else respond(decision)

    return Plan(agent, [question(permission)], answered, respond, permission)


def identity(agent: str, session: str | None, project: str, labels: dict[str, str]) -> dict[str, Any]:
    """The asking agent for routing: one per session (or conversation), named for its project folder.

    The `--label`s come last, so they override `tool` and `project`.
    """
    return {
        "id": f"{agent}-{session or 'unknown'}",
        "name": project,
        "labels": {"tool": agent, "project": project, **labels},
    }


def project_of(cwd: str | None, agent: str) -> str:
    """The folder name of the agent's working directory; the agent's name when it sent none."""
    return os.path.basename((cwd or "").rstrip("/\\")) or agent


def mcp_parts(name: str) -> tuple[str, str] | None:
    """`mcp__server__tool` (Claude Code's and Codex's names for MCP tools) → (server, tool); None for other names."""
    if not name.startswith("mcp__"):
        return None
    server, _, tool = name[len("mcp__") :].partition("__")
    return (server, tool) if server and tool else None
