"""Builders shared by the web inbox's tests."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient
from anyio.abc import TaskGroup

from bot.store.records import AgentRef, QuestionRecord
from bot.store.sqlite.store import Store
from core import (
    AbortController,
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    Context,
    UserQuestionError,
    UserQuestionService,
)

TOKEN = "test-token-for-the-web-inbox"
Client = TestClient[web.Request, web.Application]
Form = Sequence[tuple[str, str]]


def make_context() -> Context:
    ctx = Context()
    ctx.plugin(AgentRegistry)
    ctx.plugin(UserQuestionService)
    return ctx


def item(id: str = "q1", **fields: Any) -> AskUserQuestionItem:
    return AskUserQuestionItem.model_validate({"id": id, "question": f"Question {id}?", **fields})


def options(*labels: str) -> list[dict[str, str]]:
    return [{"label": label} for label in labels]


def choice(id: str = "env", *, multi: bool = False) -> AskUserQuestionItem:
    return item(
        id,
        question="Which environment?",
        header="Target",
        options=[{"label": "staging", "description": "safe to break"}, {"label": "production"}],
        multi_select=multi,
    )


def plan(id: str = "plan") -> AskUserQuestionItem:
    return item(
        id,
        question="Ship the migration plan?",
        header="Plan review",
        detail="## Steps\n\n1. Add the column\n2. Backfill in batches\n\n`ALTER TABLE users ADD email_verified`",
        options=options("Approve", "Reject"),
        intent={"kind": "plan-review", "approve": "Approve"},
    )


PLAN_REVIEW: dict[str, Any] = {
    "id": "plan",
    "question": "Ship the migration plan?",
    "header": "Plan review",
    "detail": "1. Add the column\n2. Backfill",
    "options": [{"label": "Approve"}, {"label": "Request changes"}],
    "intent": {"kind": "plan-review", "approve": "Approve"},
}
"""A plan review as an agent posts it to `/v1/questions`: approving is one click, asking for changes needs words."""


def web_question(store: Store, *questions: AskUserQuestionItem, agent: AgentRef | None = None) -> QuestionRecord:
    """A question on show in the inbox, put straight into the store (no one waits on it)."""
    record = QuestionRecord(questions=list(questions) or [choice()], agent=agent)
    store.create_question(record)
    store.add_delivery(record.id, "web", record.id, {})
    return record


@dataclass
class Asking:
    """An `ask()` running in a task; `done` is set once it returned or raised."""

    controller: AbortController = field(default_factory=AbortController)
    answer: AskUserQuestionAnswer | None = None
    error: UserQuestionError | None = None
    done: anyio.Event = field(default_factory=anyio.Event)

    async def result(self) -> AskUserQuestionAnswer:
        with anyio.fail_after(5):
            await self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.answer is not None
        return self.answer


async def start_ask(tasks: TaskGroup, ctx: Context, *questions: AskUserQuestionItem) -> Asking:
    """Start asking `questions` through the seam, and return once the question waits for a human."""
    asking = Asking()
    service = ctx.user_questions
    assert service is not None
    request = AskUserQuestionRequest(questions=list(questions), signal=asking.controller.signal)

    async def run() -> None:
        try:
            asking.answer = await service.ask(request)
        except UserQuestionError as error:
            asking.error = error
        finally:
            asking.done.set()

    tasks.start_soon(run)
    await anyio.wait_all_tasks_blocked()
    return asking


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None, "the page has no form with a CSRF token"
    return found[1]


async def answer(client: Client, question_id: str, fields: Form, *, csrf: str | None = None) -> ClientResponse:
    """Post the answer form as a browser would, with the CSRF token of a freshly loaded inbox unless one is given."""
    if csrf is None:
        csrf = csrf_of(await (await client.get("/")).text())
    return await client.post(f"/questions/{question_id}/answer", data=[("csrf", csrf), *fields], allow_redirects=False)
