"""serve's /mcp loads the MCP SDK on its first request (`McpOnFirstUse`): clients whose first requests arrive together
share the one endpoint that loads; a request that comes before the program has entered its lifetime is served; a
load that failed is tried again; once stopped, /mcp answers 503."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient, TestServer

from bot.mcp_server.on_first_use import McpOnFirstUse
from bot.mcp_server.relay import QuestionRelay
from bot.store.records import AgentRef
from core import AskUserQuestionItem, UserQuestionError

from .rig import http_client, serve

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class NoQuestions:
    """A relay for tests that never ask: the handshake and the tool list do not reach it."""

    async def ask(self, questions: list[AskUserQuestionItem], agent: AgentRef) -> str:
        raise UserQuestionError("not in this test", "NO_PROVIDER")

    async def wait(self, question_id: str, seconds: float) -> dict[str, Any]:
        raise UserQuestionError("not in this test", "NOT_FOUND")

    async def cancel(self, question_id: str) -> dict[str, Any]:
        raise UserQuestionError("not in this test", "NOT_FOUND")


async def initialize(client: TestClient[web.Request, web.Application]) -> ClientResponse:
    response = await client.post("/mcp", data=json.dumps(INITIALIZE), headers=HEADERS)
    await response.read()
    return response


async def test_clients_arriving_together_on_a_fresh_serve_are_all_served(tmp_path: Any) -> None:
    listed: list[set[str]] = []

    async with serve(tmp_path) as program:

        async def list_tools(name: str) -> None:
            async with http_client(program, name=name) as client:
                listed.append({tool.name for tool in (await client.list_tools()).tools})

        async with anyio.create_task_group() as group:
            for name in ("cursor", "zed", "cline"):
                group.start_soon(list_tools, name)
    assert listed == [{"ask_user_question", "get_answer", "cancel_question"}] * 3


async def test_a_failed_load_is_tried_again_and_a_stopped_endpoint_answers_503() -> None:
    attempts: list[int] = []

    def relay() -> QuestionRelay:
        attempts.append(len(attempts))
        if len(attempts) == 1:
            raise RuntimeError("the first load fails")
        return NoQuestions()

    mcp = McpOnFirstUse(relay, host="127.0.0.1")
    app = web.Application()
    mcp.add_routes(app)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        async with mcp.running():
            assert (await initialize(client)).status == 500
            assert not mcp.loaded
            assert (await initialize(client)).status == 200
            assert mcp.loaded and attempts == [0, 1]
        stopped = await initialize(client)
        assert stopped.status == 503
        assert (await stopped.json())["error"]["code"] == "SHUTTING_DOWN"


async def test_a_request_before_the_lifetime_begins_is_served_and_stopped_with_it() -> None:
    """serve listens before it enters /mcp's lifetime: a client that comes in between is served all the same."""
    mcp = McpOnFirstUse(NoQuestions, host="127.0.0.1")
    app = web.Application()
    mcp.add_routes(app)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        assert (await initialize(client)).status == 200
        async with mcp.running():
            assert (await initialize(client)).status == 200
        assert (await initialize(client)).status == 503
