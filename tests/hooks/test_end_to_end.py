"""`handraise hook <agent>` as each agent runs it: its documented event on stdin, a running serve, the person's
answer given in the web inbox, and the agent's own answer shape on stdout. Every way it can fail gives the agent's
fallback, one line on stderr, no question left open, and exit code 0.

These hold whether serve decides permissions itself (POST /v1/permissions) or is an older one the hook asks through
POST /v1/questions: they look only at what the person sees and what the agent receives.
"""

from __future__ import annotations

import contextlib
import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from bot.clients.http import ApiClient
from bot.permissions.prompt import ALLOW, ALWAYS, DENY
from tests.bot.program_rig import free_port
from tests.claude.rig import answer_in_inbox, pending_question, serve_with_inbox, status_of

from .rig import AGENTS, HookProcess, HookRun, fixture, run_hook

pytestmark = pytest.mark.anyio

ASK = '{"permission": "ask"}\n'


@dataclass(frozen=True)
class Case:
    agent: str
    event: str
    """The fixture of a shell command's permission prompt."""
    tool: str
    """The tool name the person reads in "Allow <tool>?"."""
    command: str
    fallback: str
    """stdout when handraise has no opinion."""


CASES = {
    "claude": Case("claude", "claude/permission_request_bash", "Bash", "npm run test:unit -- --watch=false", ""),
    "codex": Case("codex", "codex/permission_request_bash", "Bash", "git push origin main", ""),
    "gemini": Case("gemini", "gemini/before_tool_shell", "run_shell_command", "rm -rf dist && npm run build", ""),
    "cursor": Case("cursor", "cursor/before_shell_execution", "Shell", "docker compose down -v", ASK),
}
MCP_EVENTS = {
    "claude": ("claude/permission_request_mcp", "mcp__github__create_issue", "github"),
    "codex": ("codex/permission_request_mcp", "mcp__github__create_issue", "github"),
    "gemini": ("gemini/before_tool_mcp", "mcp_github_create_issue", "github"),
    "cursor": ("cursor/before_mcp_execution", "query", "npx -y @modelcontextprotocol/server-postgres"),
}
WORDS = "not on a Friday; push after the release review"


def allowed(agent: str, output: Any, *, always: bool = False) -> None:
    """The agent's allow, and nothing it would refuse."""
    if agent == "claude":
        decision: dict[str, Any] = {"behavior": "allow"}
        if always:
            decision["updatedPermissions"] = fixture(CASES["claude"].event)["permission_suggestions"]
        assert output == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
    elif agent == "codex":
        decision = output["hookSpecificOutput"]["decision"]
        assert output == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
        assert set(decision) == {"behavior", "message"} and decision["behavior"] == "allow"
        assert decision["message"].startswith("Always allowed" if always else "Allowed")
    elif agent == "gemini":
        assert output == {"decision": "allow"}
    else:
        assert set(output) == {"permission", "agent_message", "user_message"} and output["permission"] == "allow"
        assert output["agent_message"].startswith("Always allowed" if always else "Allowed")


def denied(agent: str, output: Any, message: str) -> None:
    """The agent's deny, carrying `message` to the agent."""
    if agent in ("claude", "codex"):
        decision = {"behavior": "deny", "message": message}
        assert output == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
    elif agent == "gemini":
        assert output == {"decision": "deny", "reason": message}
    else:
        assert output == {"permission": "deny", "agent_message": message, "user_message": f"handraise: {message}"}


def fell_back(case: Case, result: HookRun, *, says: str) -> None:
    assert (result.code, result.stdout) == (0, case.fallback)
    assert len(result.stderr.splitlines()) == 1 and says in result.stderr, result.stderr
    assert result.stderr.startswith(f"handraise hook {case.agent}: ")


async def answered_in_inbox(
    tmp_path: Path, case: Case, fields: list[tuple[str, str]], labels: dict[str, str] | None = None
) -> HookRun:
    labels = labels or {}
    flags = [word for key, value in labels.items() for word in ("--label", f"{key}={value}")]
    async with serve_with_inbox(tmp_path) as program:
        hook = HookProcess(case.agent, fixture(case.event), "--server", program.base_url, *flags)
        record = await pending_question(program)
        await answer_in_inbox(program, record.id, fields)
        result = await hook.finish()
    (question,) = record.questions
    assert question.question == f"Allow {case.tool}?"
    assert question.detail is not None and case.command in question.detail
    assert [option.label for option in question.options or []] == [ALLOW, DENY, ALWAYS]
    assert record.agent is not None and record.agent.id.startswith(f"{case.agent}-")
    assert record.agent.labels == {"tool": case.agent, "project": "billing-api", **labels}
    assert (result.code, result.stderr) == (0, "")
    return result


@pytest.mark.parametrize("agent", AGENTS)
async def test_allow_in_the_inbox_allows(tmp_path: Path, agent: str) -> None:
    result = await answered_in_inbox(tmp_path, CASES[agent], [("q0", "0")])
    allowed(agent, result.output())


@pytest.mark.parametrize("agent", AGENTS)
async def test_always_allow_allows_and_only_claude_hears_of_its_own_suggestions(tmp_path: Path, agent: str) -> None:
    result = await answered_in_inbox(tmp_path, CASES[agent], [("q0", "2")], {"team": "billing"})
    allowed(agent, result.output(), always=True)


@pytest.mark.parametrize("agent", AGENTS)
async def test_the_persons_words_deny_and_reach_the_agent(tmp_path: Path, agent: str) -> None:
    result = await answered_in_inbox(tmp_path, CASES[agent], [("q0", "other"), ("q0.other", WORDS)])
    denied(agent, result.output(), WORDS)


@pytest.mark.parametrize("agent", AGENTS)
async def test_deny_without_words_says_it_was_denied(tmp_path: Path, agent: str) -> None:
    # What the inbox's Deny… button sends with its reason field left empty.
    result = await answered_in_inbox(tmp_path, CASES[agent], [("q0.other", ""), ("q0", "other")])
    output = result.output()
    message = json.dumps(output)
    assert "Denied" in message and "through handraise" in message
    denied(agent, output, _said_to_agent(agent, output))


def _said_to_agent(agent: str, output: Any) -> str:
    if agent in ("claude", "codex"):
        return output["hookSpecificOutput"]["decision"]["message"]
    return output["reason"] if agent == "gemini" else output["agent_message"]


@pytest.mark.parametrize("agent", AGENTS)
async def test_an_mcp_call_names_the_tool_and_its_server(tmp_path: Path, agent: str) -> None:
    event, tool, server = MCP_EVENTS[agent]
    async with serve_with_inbox(tmp_path) as program:
        hook = HookProcess(agent, fixture(event), "--server", program.base_url)
        record = await pending_question(program)
        await answer_in_inbox(program, record.id, [("q0", "0")])
        result = await hook.finish()
    (question,) = record.questions
    assert question.question == f"Allow {tool}?"
    assert question.detail is not None and server in question.detail and "MCP tool" in question.detail
    assert result.code == 0 and result.stdout.strip()


@pytest.mark.parametrize("agent", AGENTS)
async def test_no_answer_in_time_cancels_the_question_and_falls_back(tmp_path: Path, agent: str) -> None:
    case = CASES[agent]
    async with serve_with_inbox(tmp_path) as program:
        result = await run_hook(agent, json.dumps(fixture(case.event)), "--server", program.base_url, "--timeout", "1s")
        (record,) = await program.installation.store.list_questions()
        assert status_of(program, record.id) == "cancelled"
    fell_back(case, result, says="no answer")


@pytest.mark.parametrize("agent", AGENTS)
async def test_no_answer_in_time_denies_with_on_timeout_deny(tmp_path: Path, agent: str) -> None:
    case = CASES[agent]
    async with serve_with_inbox(tmp_path) as program:
        args = ("--server", program.base_url, "--timeout", "1s", "--on-timeout", "deny")
        result = await run_hook(agent, json.dumps(fixture(case.event)), *args)
        (record,) = await program.installation.store.list_questions()
        assert status_of(program, record.id) == "cancelled"
    assert result.code == 0 and "--on-timeout deny" in result.stderr
    denied(agent, result.output(), "No answer through handraise within 1s; denied.")


@pytest.mark.parametrize("agent", AGENTS)
async def test_the_agent_ending_the_hook_cancels_the_question(tmp_path: Path, agent: str) -> None:
    case = CASES[agent]
    async with serve_with_inbox(tmp_path) as program:
        hook = HookProcess(agent, fixture(case.event), "--server", program.base_url)
        record = await pending_question(program)
        hook.signal()
        result = await hook.finish()
        assert status_of(program, record.id) == "cancelled"
    fell_back(case, result, says="SIGTERM")


@pytest.mark.parametrize("agent", AGENTS)
async def test_an_unreachable_server_falls_back_at_once(agent: str) -> None:
    case = CASES[agent]
    result = await run_hook(agent, json.dumps(fixture(case.event)), "--server", f"http://127.0.0.1:{free_port()}")
    fell_back(case, result, says="cannot reach handraise")
    assert result.seconds < 3.0  # Cursor's limit; every agent meets it


@pytest.mark.parametrize("agent", AGENTS)
async def test_input_it_cannot_act_on_falls_back_and_asks_nothing(tmp_path: Path, agent: str) -> None:
    case = CASES[agent]
    unknown = fixture(f"{agent}/unanswered")
    inputs = {
        "garbage": (b"\x00\xffnot json at all", "stdin is not UTF-8"),
        "not an object": (b'["rm", "-rf", "/"]', "not a JSON object"),
        "oversize": (b"x" * (5 * 1024 * 1024), "over"),
        "unknown event": (json.dumps(unknown).encode(), "" if agent == "claude" else unknown["hook_event_name"]),
    }
    async with serve_with_inbox(tmp_path) as program:
        for stdin, says in inputs.values():
            result = await run_hook(agent, stdin, "--server", program.base_url)
            fell_back(case, result, says=says)
        assert await program.installation.store.list_questions() == []


async def serve_decides_permissions(base_url: str) -> bool:
    """Whether this serve has POST /v1/permissions (an older one answers 404 and learns nothing)."""
    reply = await anyio.to_thread.run_sync(lambda: ApiClient(base_url).call("POST", "/v1/permissions", {}))
    return reply.status != 404


@pytest.mark.parametrize("agent", AGENTS)
async def test_always_allow_is_remembered_for_the_identical_request(tmp_path: Path, agent: str) -> None:
    case = CASES[agent]
    runs: list[HookRun] = []
    async with serve_with_inbox(tmp_path) as program:
        if await serve_decides_permissions(program.base_url):
            hook = HookProcess(agent, fixture(case.event), "--server", program.base_url)
            record = await pending_question(program)
            await answer_in_inbox(program, record.id, [("q0", "2")])
            runs.append(await hook.finish())
            event = json.dumps(fixture(case.event))
            runs.append(await run_hook(agent, event, "--server", program.base_url, "--timeout", "5s"))
            assert [question.id for question in await program.installation.store.list_questions()] == [record.id]
    if not runs:  # skipped out here: a skip raised inside serve's task group reaches pytest wrapped
        pytest.skip("this serve has no POST /v1/permissions, so it learns nothing")
    first, again = runs
    allowed(agent, first.output(), always=True)
    assert (again.code, again.stderr) == (0, "")
    allowed(agent, again.output())


@pytest.mark.parametrize("agent", AGENTS)
async def test_plain_allow_is_not_remembered(tmp_path: Path, agent: str) -> None:
    case = CASES[agent]
    async with serve_with_inbox(tmp_path) as program:
        for _ in range(2):
            hook = HookProcess(agent, fixture(case.event), "--server", program.base_url)
            record = await pending_question(program)
            await answer_in_inbox(program, record.id, [("q0", "0")])
            allowed(agent, (await hook.finish()).output())
            while record.id in [
                question.id for question in await program.installation.store.list_questions(status="pending")
            ]:
                await anyio.sleep(0.02)
        assert len(await program.installation.store.list_questions()) == 2


async def test_cursor_hears_ask_within_3_seconds_from_a_server_that_never_takes_the_connection() -> None:
    # A listening socket whose queue is full: the kernel drops further connection attempts, as a dead host would.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        queued = [socket.socket() for _ in range(4)]
        for waiting in queued:
            waiting.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                waiting.connect(server.getsockname())
        try:
            url = "http://{}:{}".format(*server.getsockname())
            result = await run_hook("cursor", json.dumps(fixture(CASES["cursor"].event)), "--server", url)
        finally:
            for waiting in queued:
                waiting.close()
    fell_back(CASES["cursor"], result, says="cannot reach handraise")
    assert result.seconds < 3.0
