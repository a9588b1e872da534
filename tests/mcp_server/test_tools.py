"""The MCP tools through the SDK's own client, over streamable HTTP (serve's /mcp) and stdio (`handraise mcp`)."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp_types import CallToolResult, TextContent

from bot.program import Running
from bot.store.records import QuestionRecord
from bot.store.sqlite.store import Store
from core.tool import PARAMETERS
from tests.claude.rig import answer_in_inbox, pending_question, status_of

from .rig import http_client, serve, stdio_client

pytestmark = pytest.mark.anyio

DEPLOY = {
    "questions": [{"id": "env", "question": "Deploy where?", "options": [{"label": "staging"}, {"label": "prod"}]}]
}
Connect = Callable[[Running], AbstractAsyncContextManager[Client]]
TRANSPORTS = [pytest.param(http_client, id="http"), pytest.param(stdio_client, id="stdio")]


def text_of(result: CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, TextContent)
    return content.text


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return result.structured_content


async def test_the_tools_are_listed_with_the_seam_schema_and_an_output_schema(tmp_path: Path) -> None:
    async with serve(tmp_path) as program, http_client(program) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"ask_user_question", "get_answer", "cancel_question"}
    ask = tools["ask_user_question"]
    assert ask.input_schema["properties"]["questions"] == PARAMETERS["properties"]["questions"]
    assert ask.input_schema["properties"]["wait_seconds"]["maximum"] == 300
    assert ask.output_schema is not None and ask.output_schema["required"] == ["status", "handle"]


@pytest.mark.parametrize("connect", TRANSPORTS)
async def test_an_answer_from_the_inbox_comes_back_as_text_and_structured_content(
    tmp_path: Path, connect: Connect
) -> None:
    results: list[Any] = []
    asked: list[QuestionRecord] = []
    async with serve(tmp_path) as program, connect(program) as client, anyio.create_task_group() as group:

        async def ask() -> None:
            results.append(await client.call_tool("ask_user_question", DEPLOY))

        group.start_soon(ask)
        asked.append(await pending_question(program))
        await answer_in_inbox(program, asked[0].id, [("q0", "1")])
    (result,), (record,) = results, asked
    assert structured(result) == {
        "status": "answered",
        "handle": record.id,
        "answers": [{"id": "env", "selected": ["prod"]}],
    }
    assert text_of(result) == '{"answers":[{"id":"env","selected":["prod"]}]}'


async def test_the_agent_is_the_client_by_its_client_info_name_with_the_command_line_labels(tmp_path: Path) -> None:
    async with serve(tmp_path) as program, stdio_client(program, "--label", "team=web") as client:
        handle = structured(await client.call_tool("ask_user_question", {**DEPLOY, "wait_seconds": 0}))["handle"]
        record = await program.installation.store.get_question(handle)
    assert record is not None and record.agent is not None
    assert (record.agent.id, record.agent.name) == ("mcp-claude-desktop", "claude-desktop")
    assert record.agent.labels == {"tool": "mcp", "client": "claude-desktop", "team": "web"}


@pytest.mark.parametrize("connect", TRANSPORTS)
async def test_no_answer_in_time_gives_a_handle_that_get_answer_finishes(tmp_path: Path, connect: Connect) -> None:
    async with serve(tmp_path) as program, connect(program) as client:
        pending = structured(await client.call_tool("ask_user_question", {**DEPLOY, "wait_seconds": 0.3}))
        assert pending["status"] == "pending"
        assert "get_answer" in text_of(
            await client.call_tool("get_answer", {"handle": pending["handle"], "wait_seconds": 0})
        )
        await answer_in_inbox(program, pending["handle"], [("q0", "0")])
        answered = structured(await client.call_tool("get_answer", {"handle": pending["handle"]}))
    assert answered["answers"] == [{"id": "env", "selected": ["staging"]}]


@pytest.mark.parametrize("connect", TRANSPORTS)
async def test_cancel_question_retracts_it(tmp_path: Path, connect: Connect) -> None:
    async with serve(tmp_path) as program, connect(program) as client:
        handle = structured(await client.call_tool("ask_user_question", {**DEPLOY, "wait_seconds": 0}))["handle"]
        cancelled = structured(await client.call_tool("cancel_question", {"handle": handle}))
        after = await client.call_tool("get_answer", {"handle": handle})
        assert status_of(program, handle) == "cancelled"
    assert cancelled == {"status": "cancelled", "handle": handle}
    assert after.is_error and text_of(after) == "Error: the question was cancelled"


@pytest.mark.parametrize("connect", TRANSPORTS)
async def test_progress_is_reported_while_waiting(tmp_path: Path, connect: Connect) -> None:
    seen: list[float] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with serve(tmp_path) as program, connect(program) as client:
        await client.call_tool("ask_user_question", {**DEPLOY, "wait_seconds": 1}, progress_callback=progress)
    assert len(seen) >= 2 and seen == sorted(seen)


@pytest.mark.parametrize("connect", TRANSPORTS)
async def test_a_client_gone_mid_wait_cancels_its_question(tmp_path: Path, connect: Connect) -> None:
    async with serve(tmp_path) as program:
        asked: list[QuestionRecord] = []
        async with anyio.create_task_group() as group:

            async def ask() -> None:
                async with connect(program) as client:
                    await client.call_tool("ask_user_question", {**DEPLOY, "wait_seconds": 60})

            group.start_soon(ask)
            asked.append(await pending_question(program))
            group.cancel_scope.cancel()
        (record,) = asked
        with anyio.fail_after(10):
            while status_of(program, record.id) == "pending":
                await anyio.sleep(0.05)
        assert status_of(program, record.id) == "cancelled"


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"questions": []}, "Error: ask_user_question requires at least one question"),
        ({"questions": [{"question": "no id?"}]}, "Error: invalid arguments: questions.0.id: Field required"),
        ({**DEPLOY, "wait_seconds": 9999}, "Error: invalid arguments: wait_seconds must be a number from 0 to 300"),
    ],
    ids=["empty", "no id", "wait too long"],
)
async def test_refusals_are_tool_errors_with_the_seam_text(
    tmp_path: Path, arguments: dict[str, Any], error: str
) -> None:
    async with serve(tmp_path) as program, http_client(program) as client:
        result = await client.call_tool("ask_user_question", arguments)
    assert result.is_error and text_of(result) == error


@pytest.mark.parametrize("connect", TRANSPORTS)
@pytest.mark.parametrize(
    ("questions", "field"),
    [
        ([{"id": "a", "question": "Colour?"}, {"id": "a", "question": "Size?"}], "questions[1].id: duplicate id"),
        ([{"id": "a", "question": "Go\u0000?"}], "questions[0].question: contains the control character U+0000"),
    ],
    ids=["one id twice", "NUL"],
)
async def test_a_question_the_api_would_refuse_is_refused_over_either_transport(
    tmp_path: Path, connect: Connect, questions: list[dict[str, str]], field: str
) -> None:
    async with serve(tmp_path) as program, connect(program) as client:
        result = await client.call_tool("ask_user_question", {"questions": questions, "wait_seconds": 0})
        assert await program.installation.store.list_questions() == []
    assert result.is_error and field in text_of(result)


async def test_no_route_for_the_client_is_no_provider(tmp_path: Path) -> None:
    extra = '[[web.subscriptions]]\nagents = ["deploy-*"]\n'
    async with serve(tmp_path, extra) as program, http_client(program) as client:
        result = await client.call_tool("ask_user_question", DEPLOY)
    assert result.is_error and text_of(result) == "Error: no user-questions answerer accepted the request"


async def test_an_unknown_handle_is_an_error(tmp_path: Path) -> None:
    async with serve(tmp_path) as program, http_client(program) as client:
        result = await client.call_tool("get_answer", {"handle": "nope"})
    assert result.is_error and text_of(result).startswith("Error: no question nope")


async def test_the_structured_content_is_the_text_answer(tmp_path: Path) -> None:
    async with serve(tmp_path) as program, http_client(program) as client:
        handle = structured(await client.call_tool("ask_user_question", {**DEPLOY, "wait_seconds": 0}))["handle"]
        await answer_in_inbox(program, handle, [("q0", "other"), ("q0.other", "canary first")])
        result = await client.call_tool("get_answer", {"handle": handle})
    assert json.loads(text_of(result))["answers"] == structured(result)["answers"]


async def test_mcp_over_http_needs_the_api_token_when_one_is_configured(tmp_path: Path) -> None:
    async with serve(tmp_path, api_token="s3cret") as program:
        async with httpx2.AsyncClient() as http:
            refused = await http.post(f"{program.base_url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        async with http_client(program, token="s3cret") as client:
            tools = await client.list_tools()
    assert refused.status_code == 401
    assert len(tools.tools) == 3


async def test_the_stdio_server_sends_the_api_token(tmp_path: Path) -> None:
    async with serve(tmp_path, api_token="s3cret") as program, stdio_client(program, token="s3cret") as client:
        result = await client.call_tool("ask_user_question", {**DEPLOY, "wait_seconds": 0})
    assert structured(result)["status"] == "pending"


@pytest.mark.parametrize(
    ("headers", "body", "refused"),
    [
        ({"Host": "evil.example:80"}, b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', {403, 421}),
        ({}, b"{not json", {400}),
    ],
    ids=["another host (DNS rebinding)", "garbage"],
)
async def test_hostile_requests_to_mcp_are_refused(
    tmp_path: Path, headers: dict[str, str], body: bytes, refused: set[int]
) -> None:
    wanted = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers}
    async with serve(tmp_path) as program, httpx2.AsyncClient() as http:
        reply = await http.post(f"{program.base_url}/mcp", content=body, headers=wanted)
        assert reply.status_code in refused, reply.text
        assert await program.installation.store.list_questions() == []


async def test_an_oversize_body_is_refused_before_it_is_read(tmp_path: Path) -> None:
    async with serve(tmp_path) as program:
        host, port = program.base_url.removeprefix("http://").rsplit(":", 1)
        async with await anyio.connect_tcp(host, int(port)) as stream:
            # Only the headers: a server that waited for the 10 MB body would never answer.
            await stream.send(
                f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {10 * 1024 * 1024}\r\nConnection: close\r\n\r\n".encode()
            )
            with anyio.fail_after(10):
                status_line = (await stream.receive()).split(b"\r\n", 1)[0]
    assert status_line == b"HTTP/1.1 413 Request Entity Too Large"


async def test_stopping_serve_keeps_the_questions_of_waiting_calls_pending(tmp_path: Path) -> None:
    asked: list[QuestionRecord] = []
    async with anyio.create_task_group() as group, serve(tmp_path) as program:

        async def call() -> None:
            # The SDK's client fails once its server has gone; only the server side is under test here.
            with contextlib.suppress(Exception):
                async with http_client(program) as client:
                    await client.call_tool("ask_user_question", {**DEPLOY, "wait_seconds": 60})

        group.start_soon(call)
        asked.append(await pending_question(program))
    with Store.open(tmp_path / "handraise.db") as store:
        kept = store.get_question(asked[0].id)
    assert kept is not None and kept.status == "pending"


SESSION_CLIENT = """
import sys, anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def main():
    async with streamable_http_client(sys.argv[1]) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(2):
            result = await session.call_tool("ask_user_question", {"questions": [{"id": "a", "question": "Go?"}],
                                                                   "wait_seconds": 0})
            await session.call_tool("cancel_question", {"handle": result.structured_content["handle"]})

anyio.run(main)
"""


async def test_a_session_client_that_reads_its_results_and_leaves_puts_no_errors_in_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A client on a session protocol (as Cursor and Claude Code speak today) in its own process, as in real use: it
    # drops each result's stream once read, and its GET stream when it leaves.
    async with serve(tmp_path) as program:
        done = await anyio.run_process([sys.executable, "-c", SESSION_CLIENT, f"{program.base_url}/mcp"], check=False)
        assert done.returncode == 0, done.stderr.decode()
        assert [record.status for record in await program.installation.store.list_questions()] == ["cancelled"] * 2
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert errors == []
