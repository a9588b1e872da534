"""Hook events as Claude Code sends them: the documented stdin shapes.

Built by hand from the fields in Claude Code's "Hooks reference" (code.claude.com/docs/en/hooks), not recorded.
"""

from __future__ import annotations

import json
from typing import Any

SESSION = "8a1f9c2e-1b7d-4c55-9e0a-3f6d2b7c9e11"
CWD = "/home/dev/projects/billing-api"

FRAMEWORK = {
    "question": "Which framework should the dashboard use?",
    "header": "Framework",
    "multiSelect": False,
    "options": [
        {"label": "React (Recommended)", "description": "the team knows it"},
        {"label": "Vue", "description": "smaller bundle"},
    ],
}
CHECKS = {
    "question": "Which checks should run before deploy?",
    "header": "Checks",
    "multiSelect": True,
    "options": [{"label": "Unit tests"}, {"label": "Lint"}, {"label": "Load test"}],
}


def common(event: str) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": f"/home/dev/.claude/projects/billing-api/{SESSION}.jsonl",
        "cwd": CWD,
        "permission_mode": "default",
        "hook_event_name": event,
    }


def ask_user_question(*questions: dict[str, Any]) -> dict[str, Any]:
    return {
        **common("PreToolUse"),
        "tool_name": "AskUserQuestion",
        "tool_use_id": "toolu_01ABCdef",
        "tool_input": {"questions": list(questions) or [FRAMEWORK, CHECKS]},
    }


def permission_request(tool_name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {**common("PermissionRequest"), "tool_name": tool_name, "tool_input": tool_input}


BASH = permission_request("Bash", {"command": "rm -rf build && make release", "description": "Rebuild the release"})
EDIT = permission_request(
    "Edit", {"file_path": f"{CWD}/app/settings.py", "old_string": "DEBUG = True", "new_string": "DEBUG = False"}
)
WRITE = permission_request(
    "Write", {"file_path": f"{CWD}/notes.md", "content": "\n".join(f"line {n}" for n in range(1, 101))}
)
WEBFETCH = permission_request("WebFetch", {"url": "https://example.org/spec", "prompt": "Summarise the API"})
MCP = permission_request("mcp__github__create_issue", {"repo": "acme/billing", "title": "Flaky deploy"})
OTHER = permission_request("NotebookEdit", {"notebook_path": f"{CWD}/a.ipynb", "new_source": "print(1)"})


def text(payload: dict[str, Any]) -> str:
    return json.dumps(payload)
