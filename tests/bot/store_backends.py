"""The two store backends behind one test interface, and the records the store contract tests write."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.store.interface import AsyncStore
from bot.store.postgres.store import PostgresStore
from bot.store.records import AgentRef, QuestionRecord
from bot.store.sqlite.async_store import SqliteStore
from core import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
)

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)

Opener = Callable[[], Awaitable[AsyncStore]]
"""Opens another store on the same database (another process, another replica)."""


@asynccontextmanager
async def store_opener(request: pytest.FixtureRequest, path: Path) -> AsyncIterator[Opener]:
    """For a fixture parametrized by backend ("sqlite" or "postgres"): opens stores on one database, the SQLite file
    at `path` or the test's PostgreSQL database, and closes every store it opened at the end."""
    opened: list[AsyncStore] = []
    url = str(request.getfixturevalue("postgres_url")) if request.param == "postgres" else None

    async def open_one() -> AsyncStore:
        store = SqliteStore.open(path) if url is None else await PostgresStore.open(url, wait_seconds=2)
        opened.append(store)
        return store

    try:
        yield open_one
    finally:
        for store in opened:
            await store.close()


def two_questions() -> list[AskUserQuestionItem]:
    return [
        AskUserQuestionItem(
            id="deploy",
            question="Ship the plan?",
            detail="1. migrate\n2. deploy",
            header="Plan review",
            options=[AskUserQuestionOption(label="Approve", description="go ahead"), AskUserQuestionOption(label="No")],
            intent=AskUserQuestionIntent(kind="plan-review", approve="Approve"),
        ),
        AskUserQuestionItem(
            id="regions",
            question="Which regions?",
            options=[AskUserQuestionOption(label="eu"), AskUserQuestionOption(label="us")],
            multi_select=True,
        ),
    ]


def record(**overrides: Any) -> QuestionRecord:
    fields: dict[str, Any] = {
        "agent": AgentRef(id="builder-1", name="Builder", labels={"team": "infra", "env": "prod"}),
        "questions": two_questions(),
    }
    return QuestionRecord(**(fields | overrides))


def answer(label: str = "Approve") -> AskUserQuestionAnswer:
    return AskUserQuestionAnswer(
        answers=[
            AskUserQuestionAnswerItem(id="deploy", selected=[label]),
            AskUserQuestionAnswerItem(id="regions", selected=["eu"], custom="and ap-south"),
        ]
    )


async def kinds_of(store: AsyncStore, question_id: str) -> list[str]:
    return [event.kind for event in await store.history(question_id=question_id)]
