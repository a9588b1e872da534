"""Stopping the server ends waiting calls with their handle and leaves the questions open (as /v1 does on restart)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult

from bot.mcp_server.tools import QuestionTools, Timing
from bot.store.records import AgentRef
from core import AskUserQuestionItem

pytestmark = pytest.mark.anyio


class NobodyAnswers:
    """A relay whose questions stay pending; it records what was asked and cancelled."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.cancelled: list[str] = []

    async def ask(self, questions: list[AskUserQuestionItem], agent: AgentRef) -> str:
        self.asked.set()
        return "q_waiting"

    async def wait(self, question_id: str, seconds: float) -> dict[str, Any]:
        await anyio.sleep(seconds)
        return {"id": question_id, "status": "pending"}

    async def cancel(self, question_id: str) -> dict[str, Any]:
        self.cancelled.append(question_id)
        return {"id": question_id, "status": "cancelled"}


async def test_stop_answers_waiting_calls_pending_without_cancelling_their_questions() -> None:
    relay = NobodyAnswers()
    tools = QuestionTools(relay, timing=Timing(default_wait=300, progress_every=300))
    results: list[CallToolResult] = []
    async with Client(tools.server()) as client, anyio.create_task_group() as group:

        async def call() -> None:
            results.append(await client.call_tool("ask_user_question", {"questions": [{"id": "a", "question": "?"}]}))

        group.start_soon(call)
        await relay.asked.wait()
        await anyio.wait_all_tasks_blocked()
        tools.stop()
    assert results[0].structured_content == {"status": "pending", "handle": "q_waiting"}
    assert relay.cancelled == []


async def test_a_call_cancelled_by_its_client_cancels_the_question() -> None:
    relay = NobodyAnswers()
    tools = QuestionTools(relay, timing=Timing(default_wait=300, progress_every=300))
    async with Client(tools.server()) as client:
        with anyio.move_on_after(0.2):
            await client.call_tool("ask_user_question", {"questions": [{"id": "a", "question": "?"}]})
        with anyio.fail_after(10):
            while not relay.cancelled:
                await anyio.sleep(0.02)
    assert relay.cancelled == ["q_waiting"]
