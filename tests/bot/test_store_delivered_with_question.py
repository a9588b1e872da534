"""A question stored with its first delivery (`create_question(record, delivery)`), on both backends: the same rows and
audit events as a question and then its delivery, in one write; refused as a whole when either part is refused."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import anyio
import psycopg
import pytest

from bot.questions.ledger import Ledger
from bot.replicas.feed import FeedTiming
from bot.replicas.postgres_feed import PostgresChangeFeed
from bot.store.errors import StoreError
from bot.store.interface import AsyncStore
from bot.store.postgres.store import PostgresStore
from bot.store.records import NewDelivery, QuestionRecord, asked_detail, key_detail
from bot.store.sqlite.async_store import SqliteStore
from tests.fake_clock import FakeClock

from .store_backends import kinds_of, record

pytestmark = pytest.mark.anyio

REF = {"responders": ["alice"], "approvals": 1}


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncStore]:
    if request.param == "sqlite":
        opened: AsyncStore = SqliteStore.open(tmp_path / "handraise.db")
    else:
        opened = await PostgresStore.open(cast(str, request.getfixturevalue("postgres_url")), wait_seconds=2)
    yield opened
    await opened.close()


def shown(question: QuestionRecord, key: str | None = None) -> NewDelivery:
    return NewDelivery("web", key or question.id, REF)


async def test_a_question_stored_with_its_delivery_has_both_and_both_events_in_order(store: AsyncStore) -> None:
    question = record()
    await store.create_question(question, shown(question))
    assert await store.get_question(question.id) == question
    delivery = await store.find_delivery("web", question.id)
    assert delivery is not None and (delivery.question_id, delivery.ref) == (question.id, REF)
    asked, delivered = await store.history(question_id=question.id)
    assert (asked.kind, asked.channel, asked.detail) == (
        "asked",
        None,
        {"agent": "builder-1", "questions": ["deploy", "regions"]},
    )
    assert (delivered.kind, delivered.channel, delivered.detail) == ("delivered", "web", {"key": question.id})
    assert asked.seq < delivered.seq


async def test_a_delivery_key_another_question_holds_refuses_the_whole_ask(store: AsyncStore) -> None:
    first, second = record(), record()
    await store.create_question(first, shown(first))
    with pytest.raises(StoreError, match="already used"):
        await store.create_question(second, shown(second, key=first.id))
    assert await store.get_question(second.id) is None
    assert await store.history(question_id=second.id) == []


async def test_an_existing_question_is_left_alone_with_the_delivery_given_again(store: AsyncStore) -> None:
    question = record()
    await store.create_question(question)
    with pytest.raises(StoreError, match="already exists"):
        await store.create_question(question, shown(question))
    assert await store.deliveries(question.id) == []
    assert await kinds_of(store, question.id) == ["asked"]


@pytest.mark.parametrize(
    ("agent", "ids"), [(None, []), ("a", ["x"]), ('"\\\x00\n\u2028é😀', ['"', "\\", "\x00\x1f", "ü" * 1000])]
)
def test_the_asked_detail_is_what_json_dumps_makes(agent: str | None, ids: list[str]) -> None:
    built = asked_detail(agent, ids)
    assert built == json.dumps({"agent": agent, "questions": ids})
    assert json.loads(built) == {"agent": agent, "questions": ids}


@pytest.mark.parametrize("key", ["", "C1:1.0", '"}, {"x": 1', "\x00\\\ud800"])
def test_the_delivered_detail_is_what_json_dumps_makes(key: str) -> None:
    assert key_detail(key) == json.dumps({"key": key})


# -- PostgreSQL: one group, one transaction, and the feed ---------------------------------------------------------


def transaction_ids(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as db:
        row = db.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()
    assert row is not None
    return int(row[0])


async def test_concurrent_asks_with_their_deliveries_share_one_commit(postgres_url: str) -> None:
    store = await PostgresStore.open(postgres_url, wait_seconds=2)
    try:
        questions = [record() for _ in range(8)]
        before = transaction_ids(postgres_url)
        await asyncio.gather(*(store.create_question(each, shown(each)) for each in questions))
        assert transaction_ids(postgres_url) - before - 1 == 1
        for each in questions:
            assert await kinds_of(store, each.id) == ["asked", "delivered"]
            assert [delivery.key for delivery in await store.deliveries(each.id)] == [each.id]
    finally:
        await store.close()


async def test_an_ask_whose_delivery_key_is_taken_fails_alone_in_its_group(postgres_url: str) -> None:
    store = await PostgresStore.open(postgres_url, wait_seconds=2)
    try:
        taken = record()
        await store.create_question(taken, shown(taken))
        questions = [record() for _ in range(3)]
        keys = [questions[0].id, taken.id, questions[2].id]
        made = await asyncio.gather(
            *(store.create_question(each, shown(each, key)) for each, key in zip(questions, keys, strict=True)),
            return_exceptions=True,
        )
        assert [made[0], made[2]] == [None, None]
        assert isinstance(made[1], StoreError) and "already used" in made[1].message
        assert await store.get_question(questions[1].id) is None
        assert await kinds_of(store, questions[2].id) == ["asked", "delivered"]
    finally:
        await store.close()


async def test_another_replica_hears_a_question_stored_with_its_delivery_once_and_shown(postgres_url: str) -> None:
    writer = await PostgresStore.open(postgres_url, max_connections=4)
    reader = await PostgresStore.open(postgres_url, max_connections=2)
    ledger = Ledger(reader, FakeClock())
    heard: list[tuple[str, str]] = []

    async def hear(kind: str, question: QuestionRecord) -> None:
        heard.append((kind, question.id))

    async def see(channel: str, question: QuestionRecord) -> None:
        heard.append((f"shown on {channel}", question.id))

    ledger.watch(hear)
    ledger.watch_shown(see)
    feed = PostgresChangeFeed(reader, ledger, FeedTiming(catch_up_every=60.0))
    question = record()
    try:
        async with anyio.create_task_group() as tasks:
            await tasks.start(feed.run)
            await writer.create_question(question, shown(question))
            with anyio.fail_after(5):
                while len(heard) < 2:
                    await anyio.sleep(0.01)
            tasks.cancel_scope.cancel()
    finally:
        await writer.close()
        await reader.close()
    assert heard == [("asked", question.id), ("shown on web", question.id)]
