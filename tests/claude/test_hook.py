"""`handraise claude-hook` as Claude Code runs it: the documented payloads on stdin, a running serve, answers given
in the web inbox; and every way it can fail leaves the session alone (exit 0, no output, one line on stderr)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.bot.program_rig import free_port

from . import payloads
from .rig import HookProcess, HookRun, answer_in_inbox, pending_question, run_hook, serve_with_inbox, status_of

pytestmark = pytest.mark.anyio


async def test_ask_user_question_is_answered_from_the_web_inbox(tmp_path: Path) -> None:
    event = payloads.ask_user_question()
    async with serve_with_inbox(tmp_path) as program:
        hook = HookProcess(payloads.text(event), "--server", program.base_url, "--label", "team=billing")
        record = await pending_question(program)
        await answer_in_inbox(program, record.id, [("q0", "1"), ("q1", "0"), ("q1", "2")])
        result = await hook.finish()
    assert (result.code, result.stderr) == (0, "")
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and output["permissionDecision"] == "allow"
    assert output["updatedInput"] == {
        "questions": event["tool_input"]["questions"],
        "answers": {
            "Which framework should the dashboard use?": "Vue",
            "Which checks should run before deploy?": "Unit tests, Load test",
        },
    }
    assert [question.id for question in record.questions] == ["q1", "q2"]
    assert record.agent is not None
    assert (record.agent.id, record.agent.name) == (f"claude-{payloads.SESSION}", "billing-api")
    assert record.agent.labels == {"tool": "claude", "project": "billing-api", "team": "billing"}


async def test_a_permission_prompt_allowed_in_the_inbox_allows(tmp_path: Path) -> None:
    async with serve_with_inbox(tmp_path) as program:
        hook = HookProcess(payloads.text(payloads.BASH), "--server", program.base_url)
        record = await pending_question(program)
        await answer_in_inbox(program, record.id, [("q0", "0")])
        result = await hook.finish()
    assert json.loads(result.stdout) == {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    }
    question = record.questions[0]
    assert question.question == "Allow Bash?"
    assert question.detail is not None and "rm -rf build && make release" in question.detail


async def test_changes_requested_in_the_inbox_deny_with_that_reason(tmp_path: Path) -> None:
    async with serve_with_inbox(tmp_path) as program:
        hook = HookProcess(payloads.text(payloads.EDIT), "--server", program.base_url)
        record = await pending_question(program)
        await answer_in_inbox(program, record.id, [("q0", "other"), ("q0.other", "keep DEBUG on in dev")])
        result = await hook.finish()
    decision = json.loads(result.stdout)["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "deny", "message": "keep DEBUG on in dev"}


async def test_an_unreachable_server_leaves_the_prompt_to_claude_code() -> None:
    result = await run_hook(payloads.text(payloads.BASH), "--server", f"http://127.0.0.1:{free_port()}")
    assert (result.code, result.stdout) == (0, "")
    assert len(result.stderr.splitlines()) == 1 and "cannot reach handraise" in result.stderr


async def test_no_route_for_the_project_leaves_the_prompt_to_claude_code(tmp_path: Path) -> None:
    async with serve_with_inbox(tmp_path, '[[web.subscriptions]]\nlabels = { project = "other" }\n') as program:
        result = await run_hook(payloads.text(payloads.BASH), "--server", program.base_url)
        assert await program.installation.store.list_questions() == []
    assert (result.code, result.stdout) == (0, "")
    assert result.stderr.startswith("handraise claude-hook: NO_PROVIDER: ") and len(result.stderr.splitlines()) == 1


async def test_no_answer_in_time_cancels_the_question(tmp_path: Path) -> None:
    async with serve_with_inbox(tmp_path) as program:
        result = await run_hook(payloads.text(payloads.BASH), "--server", program.base_url, "--timeout", "1s")
        (record,) = await program.installation.store.list_questions()
        assert status_of(program, record.id) == "cancelled"
    assert (result.code, result.stdout) == (0, "")
    assert "no answer" in result.stderr and "cancelled it" in result.stderr


async def test_claude_code_ending_the_hook_cancels_the_question(tmp_path: Path) -> None:
    async with serve_with_inbox(tmp_path) as program:
        hook = HookProcess(payloads.text(payloads.BASH), "--server", program.base_url)
        record = await pending_question(program)
        hook.signal()
        result = await hook.finish()
        assert status_of(program, record.id) == "cancelled"
    assert (result.code, result.stdout) == (0, "")
    assert "SIGTERM" in result.stderr


async def test_a_question_cancelled_elsewhere_leaves_the_prompt_to_claude_code(tmp_path: Path) -> None:
    async with serve_with_inbox(tmp_path) as program:
        hook = HookProcess(payloads.text(payloads.BASH), "--server", program.base_url)
        record = await pending_question(program)
        await program.remote.cancel(record.id)
        result = await hook.finish()
    assert (result.code, result.stdout) == (0, "")
    assert "cancelled" in result.stderr


@pytest.mark.parametrize(
    "stdin",
    [
        "",
        "not json at all",
        '{"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion", "tool_input": {"questions": []}}',
        json.dumps({**payloads.BASH, "tool_input": ["rm"]}),
    ],
    ids=["empty", "garbage", "no questions", "input not an object"],
)
async def test_malformed_stdin_leaves_the_session_alone(stdin: str) -> None:
    result = await run_hook(stdin, "--server", f"http://127.0.0.1:{free_port()}")
    assert (result.code, result.stdout) == (0, "")
    assert len(result.stderr.splitlines()) == 1


async def test_oversize_stdin_leaves_the_session_alone() -> None:
    result = await run_hook("x" * (5 * 1024 * 1024), "--server", f"http://127.0.0.1:{free_port()}")
    assert (result.code, result.stdout) == (0, "")
    assert "over" in result.stderr


async def test_events_it_does_not_answer_pass_silently(tmp_path: Path) -> None:
    post_tool_use = {**payloads.BASH, "hook_event_name": "PostToolUse"}
    async with serve_with_inbox(tmp_path) as program:
        result = await run_hook(json.dumps(post_tool_use), "--server", program.base_url)
        assert await program.installation.store.list_questions() == []
    assert (result.code, result.stdout, result.stderr) == (0, "", "")


async def test_the_server_and_token_come_from_the_environment(tmp_path: Path) -> None:
    async with serve_with_inbox(tmp_path, api_token="s3cret") as program:
        env = {"HANDRAISE_SERVER": program.base_url, "HANDRAISE_API_TOKEN": "s3cret"}
        results: list[HookRun] = []
        async with anyio.create_task_group() as group:

            async def hook() -> None:
                results.append(await run_hook(payloads.text(payloads.WEBFETCH), env=env))

            group.start_soon(hook)
            record = await pending_question(program)
            await answer_in_inbox(program, record.id, [("q0", "0")])
    assert json.loads(results[0].stdout)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


async def test_a_wrong_token_leaves_the_prompt_to_claude_code(tmp_path: Path) -> None:
    async with serve_with_inbox(tmp_path, api_token="s3cret") as program:
        env = {"HANDRAISE_API_TOKEN": "wrong"}
        result = await run_hook(payloads.text(payloads.BASH), "--server", program.base_url, env=env)
    assert (result.code, result.stdout) == (0, "")
    assert "UNAUTHORIZED" in result.stderr
