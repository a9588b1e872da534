"""The change feed on a real PostgreSQL: what the triggers stamp and send, hostile ids, and bursts read together."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import anyio
import pytest

from bot.questions.ledger import Ledger
from bot.replicas.feed import FeedTiming
from bot.replicas.postgres_feed import PostgresChangeFeed
from bot.store.postgres.store import PostgresStore
from bot.store.records import QuestionRecord
from core import AskUserQuestionItem
from tests.fake_clock import FakeClock

pytestmark = pytest.mark.anyio

ITEM = AskUserQuestionItem.model_validate({"id": "go", "question": "Deploy?", "options": [{"label": "Yes"}]})


@asynccontextmanager
async def feed_on(url: str, timing: FeedTiming) -> AsyncIterator[tuple[PostgresStore, PostgresChangeFeed, list[str]]]:
    """Another replica's store to write with, and this one's feed with the ids its watchers heard asked."""
    writer = await PostgresStore.open(url, max_connections=8)
    reader = await PostgresStore.open(url, max_connections=2)
    ledger = Ledger(reader, FakeClock())
    asked: list[str] = []

    async def hear(kind: str, record: QuestionRecord) -> None:
        if kind == "asked":
            asked.append(record.id)

    ledger.watch(hear)
    feed = PostgresChangeFeed(reader, ledger, timing)
    try:
        async with anyio.create_task_group() as tasks:
            await tasks.start(feed.run)
            yield writer, feed, asked
            tasks.cancel_scope.cancel()
    finally:
        await writer.close()
        await reader.close()


NOTIFY_ONLY = FeedTiming(catch_up_every=60.0)
CATCH_UP = FeedTiming(catch_up_every=0.2, overlap=2.0)


async def until(predicate: Any) -> None:
    with anyio.fail_after(5):
        while not predicate():
            await anyio.sleep(0.01)


async def changed_at(store: PostgresStore, question_id: str) -> datetime:
    """When the question last changed, as the feed reads it."""
    [(_, stamp, _)] = await store.changed_questions([question_id])
    return stamp


async def test_a_question_is_stamped_when_it_changes_and_when_it_is_delivered(postgres_url: str) -> None:
    store = await PostgresStore.open(postgres_url)
    try:
        record = QuestionRecord(questions=[ITEM])
        await store.create_question(record)
        created = await changed_at(store, record.id)
        await store.add_delivery(record.id, "web", record.id, {})
        delivered = await changed_at(store, record.id)
        await store.resolve(record.id, "cancelled", error_code="ASK_CANCELLED", error_message="no")
        resolved = await changed_at(store, record.id)
    finally:
        await store.close()
    assert created < delivered < resolved


async def test_a_delivery_is_found_by_a_catch_up_after_it_with_the_stamp_a_read_gives(postgres_url: str) -> None:
    store = await PostgresStore.open(postgres_url)
    try:
        record = QuestionRecord(questions=[ITEM])
        await store.create_question(record)
        mark, _ = await store.changed_since(None)
        _, before = await store.changed_since(mark)
        await store.add_delivery(record.id, "web", record.id, {})
        _, after = await store.changed_since(mark)
        read = await changed_at(store, record.id)
    finally:
        await store.close()
    assert before == []
    assert after == [(record.id, read)]


async def test_a_delivery_made_elsewhere_is_heard_at_its_commit(postgres_url: str) -> None:
    async with feed_on(postgres_url, NOTIFY_ONLY) as (writer, feed, asked):
        record = QuestionRecord(questions=[ITEM])
        await writer.create_question(record)
        await until(lambda: asked == [record.id])
        reads = feed.reads
        await writer.add_delivery(record.id, "web", record.id, {})
        await until(lambda: feed.reads > reads)


async def test_a_question_asked_elsewhere_is_heard_at_its_commit(postgres_url: str) -> None:
    async with feed_on(postgres_url, NOTIFY_ONLY) as (writer, _, asked):
        record = QuestionRecord(questions=[ITEM])
        await writer.create_question(record)
        await until(lambda: asked == [record.id])


@pytest.mark.parametrize("question_id", ["q_\x00nul", "q_back\\slash\\0", "q_ünï\u2028code", "q_' OR 1=1; --"])
async def test_hostile_ids_are_heard_exactly(postgres_url: str, question_id: str) -> None:
    async with feed_on(postgres_url, NOTIFY_ONLY) as (writer, _, asked):
        await writer.create_question(QuestionRecord(id=question_id, questions=[ITEM]))
        await until(lambda: asked == [question_id])


async def test_an_id_too_long_for_a_notification_is_still_stored_and_heard_by_catching_up(postgres_url: str) -> None:
    long_id = "q_" + "é" * 5000  # 10,002 bytes: more than NOTIFY's 8,000-byte payload
    async with feed_on(postgres_url, NOTIFY_ONLY) as (writer, _, asked):
        await writer.create_question(QuestionRecord(id=long_id, questions=[ITEM]))
        await until(lambda: asked == [long_id])


async def test_a_burst_of_changes_is_read_in_a_few_queries(postgres_url: str) -> None:
    async with feed_on(postgres_url, NOTIFY_ONLY) as (writer, feed, asked):
        records = [QuestionRecord(questions=[ITEM]) for _ in range(1000)]
        async with anyio.create_task_group() as tasks:
            for record in records:
                tasks.start_soon(writer.create_question, record)
        await until(lambda: len(asked) == 1000)
    assert sorted(asked) == sorted(record.id for record in records)
    assert feed.reads < 400  # 173 in one run: about six changes a read


async def test_the_catch_up_finds_a_change_made_before_the_feed_listened(postgres_url: str) -> None:
    writer = await PostgresStore.open(postgres_url)
    record = QuestionRecord(questions=[ITEM])
    try:
        await writer.create_question(record)
    finally:
        await writer.close()
    async with feed_on(postgres_url, CATCH_UP) as (_, _, asked):
        await until(lambda: asked == [record.id])  # within `overlap` before the first catch-up
