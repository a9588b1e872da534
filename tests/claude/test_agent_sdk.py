"""The Claude Agent SDK callback, called as the SDK calls it (its own types), answered in the web inbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext

from bot.claude.agent_sdk import handraise_can_use_tool
from bot.clients.agent import HandraiseClient

from . import payloads
from .rig import answer_in_inbox, pending_question, serve_with_inbox

pytestmark = pytest.mark.anyio


async def decide(
    tmp_path: Path, tool: str, tool_input: dict[str, Any], fields: list[tuple[str, str]], extra: str = ""
) -> Any:
    """Run the callback against a serve and answer its question with the inbox form `fields` (none: no question)."""
    results: list[Any] = []
    async with serve_with_inbox(tmp_path, extra) as program, anyio.create_task_group() as group:
        callback = handraise_can_use_tool(HandraiseClient(program.base_url, poll_seconds=1))

        async def call() -> None:
            results.append(await callback(tool, tool_input, ToolPermissionContext(tool_use_id="toolu_1")))

        group.start_soon(call)
        if fields:
            record = await pending_question(program)
            await answer_in_inbox(program, record.id, fields)
    return results[0]


async def test_ask_user_question_is_allowed_with_the_answers_by_question_text(tmp_path: Path) -> None:
    tool_input = payloads.ask_user_question()["tool_input"]
    result = await decide(tmp_path, "AskUserQuestion", tool_input, [("q0", "0"), ("q1", "1")])
    assert isinstance(result, PermissionResultAllow)
    assert result.updated_input == {
        "questions": tool_input["questions"],
        "answers": {
            "Which framework should the dashboard use?": "React (Recommended)",
            "Which checks should run before deploy?": "Lint",
        },
    }


async def test_a_tool_allowed_in_the_inbox_is_allowed(tmp_path: Path) -> None:
    result = await decide(tmp_path, "Bash", payloads.BASH["tool_input"], [("q0", "0")])
    assert result == PermissionResultAllow()


async def test_changes_requested_deny_with_that_message(tmp_path: Path) -> None:
    fields = [("q0", "other"), ("q0.other", "run the tests first")]
    result = await decide(tmp_path, "Write", payloads.WRITE["tool_input"], fields)
    assert result == PermissionResultDeny(message="run the tests first")


async def test_no_route_denies_saying_why(tmp_path: Path) -> None:
    extra = '[[web.subscriptions]]\nlabels = { project = "elsewhere" }\n'
    result = await decide(tmp_path, "Bash", payloads.BASH["tool_input"], [], extra)
    assert isinstance(result, PermissionResultDeny)
    assert result.message == "handraise: no user-questions answerer accepted the request (NO_PROVIDER)"


async def test_unreadable_questions_deny_without_asking(tmp_path: Path) -> None:
    result = await decide(tmp_path, "AskUserQuestion", {"questions": "which?"}, [])
    assert isinstance(result, PermissionResultDeny) and "could not read the questions" in result.message
