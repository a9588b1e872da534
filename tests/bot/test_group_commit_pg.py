"""Group commit on PostgreSQL (`bot.store.postgres.groups`): concurrent writes of one kind share one statement and one
commit, and each still behaves as its own — it fails alone, the first answer wins, and it is made even when its
caller is cancelled. Commits are counted by the server: every transaction that writes takes a transaction id."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psycopg
import pytest

from bot.store.errors import StoreError
from bot.store.postgres.groups import split_on
from bot.store.postgres.store import PostgresStore
from bot.store.records import Resolution

from .store_backends import answer, kinds_of, record

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(postgres_url: str) -> AsyncIterator[PostgresStore]:
    opened = await PostgresStore.open(postgres_url, wait_seconds=2)
    yield opened
    await opened.close()


def transaction_ids(url: str) -> int:
    """The next transaction id, taking one: the writes between two calls are the difference less one."""
    with psycopg.connect(url, autocommit=True) as db:
        row = db.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()
    assert row is not None
    return int(row[0])


async def test_concurrent_asks_share_one_commit(store: PostgresStore, postgres_url: str) -> None:
    records = [record() for _ in range(8)]
    before = transaction_ids(postgres_url)
    await asyncio.gather(*(store.create_question(each) for each in records))
    assert transaction_ids(postgres_url) - before - 1 == 1
    for each in records:
        assert await store.get_question(each.id) == each
        assert await kinds_of(store, each.id) == ["asked"]


async def test_concurrent_deliveries_share_one_commit(store: PostgresStore, postgres_url: str) -> None:
    records = [record() for _ in range(8)]
    await asyncio.gather(*(store.create_question(each) for each in records))
    before = transaction_ids(postgres_url)
    await asyncio.gather(*(store.add_delivery(each.id, "slack", f"C1:{each.id}", {"n": 1}) for each in records))
    assert transaction_ids(postgres_url) - before - 1 == 1
    for each in records:
        delivery = await store.find_delivery("slack", f"C1:{each.id}")
        assert delivery is not None and delivery.question_id == each.id and delivery.ref == {"n": 1}
        assert await kinds_of(store, each.id) == ["asked", "delivered"]


async def test_concurrent_answers_to_different_questions_share_one_commit(
    store: PostgresStore, postgres_url: str
) -> None:
    records = [record() for _ in range(8)]
    await asyncio.gather(*(store.create_question(each) for each in records))
    before = transaction_ids(postgres_url)
    outcomes = await asyncio.gather(
        *(store.resolve(each.id, "answered", answer=answer(), by="ana", via="web", seen=each) for each in records)
    )
    assert transaction_ids(postgres_url) - before - 1 == 1
    assert all(outcome.won for outcome in outcomes)
    for each in records:
        stored = await store.get_question(each.id)
        assert stored is not None and stored.status == "answered" and stored.answered_by == "ana"


async def test_concurrent_replies_are_looked_up_in_one_query(store: PostgresStore) -> None:
    records = [record() for _ in range(6)]
    await asyncio.gather(*(store.create_question(each) for each in records))
    await asyncio.gather(*(store.add_delivery(each.id, "web", each.id, {}) for each in records))
    before = store._grouped_replies.groups  # pyright: ignore[reportPrivateUsage]
    found = await asyncio.gather(
        *(store.find_delivery_with_question("web", each.id) for each in records),
        store.find_delivery_with_question("web", "q_unknown"),
    )
    # The first alone, at once; the others asked for while it ran, together.
    assert store._grouped_replies.groups == before + 2  # pyright: ignore[reportPrivateUsage]
    assert found[-1] is None
    for each, reply in zip(records, found, strict=False):
        assert reply is not None
        question, delivery = reply
        assert question == each and delivery.question_id == each.id and delivery.key == each.id


async def test_an_existing_question_in_a_group_of_asks_fails_alone(store: PostgresStore) -> None:
    taken, fresh = record(), record()
    await store.create_question(taken)
    outcomes = await asyncio.gather(store.create_question(fresh), store.create_question(taken), return_exceptions=True)
    assert outcomes[0] is None
    assert isinstance(outcomes[1], StoreError) and "already exists" in str(outcomes[1])
    assert await store.get_question(fresh.id) == fresh
    assert await kinds_of(store, taken.id) == ["asked"]


async def test_failing_deliveries_in_a_group_fail_alone_and_the_others_are_made(store: PostgresStore) -> None:
    one, two, three = record(), record(), record()
    for each in (one, two, three):
        await store.create_question(each)
    await store.add_delivery(one.id, "slack", "C1:taken", {})
    outcomes = await asyncio.gather(
        store.add_delivery(two.id, "slack", "C1:two", {}),
        store.add_delivery("q_missing", "slack", "C1:missing", {}),  # no such question
        store.add_delivery(three.id, "slack", "C1:taken", {}),  # another question's key
        return_exceptions=True,
    )
    assert not isinstance(outcomes[0], BaseException) and outcomes[0].question_id == two.id
    assert isinstance(outcomes[1], StoreError) and "q_missing" in str(outcomes[1])
    assert isinstance(outcomes[2], StoreError) and "already used" in str(outcomes[2])
    assert await kinds_of(store, two.id) == ["asked", "delivered"]
    assert await kinds_of(store, three.id) == ["asked"]
    assert await store.get_delivery(three.id, "slack") is None


async def test_first_answer_asked_for_wins_among_concurrent_answers_to_one_question(store: PostgresStore) -> None:
    original = record()
    await store.create_question(original)
    outcomes = await asyncio.gather(
        *(
            store.resolve(original.id, "answered", answer=answer(), by=f"person-{n}", via="web", seen=original)
            for n in range(5)
        )
    )
    assert [isinstance(outcome, Resolution) and outcome.won for outcome in outcomes] == [True] + [False] * 4
    stored = await store.get_question(original.id)
    assert stored is not None and stored.answered_by == "person-0"
    assert await kinds_of(store, original.id) == ["asked", "answered"] + ["duplicate"] * 4


async def test_a_write_is_made_even_when_its_caller_is_cancelled_after_asking(
    store: PostgresStore, postgres_url: str
) -> None:
    first, second = record(), record()
    callers = [asyncio.create_task(store.create_question(each)) for each in (first, second)]
    await asyncio.sleep(0)  # both have asked for their write; the group's statement has not returned yet
    for caller in callers:
        caller.cancel()
    for caller in callers:
        with pytest.raises(asyncio.CancelledError):
            await caller
    await store.close()  # makes the writes asked for
    other = await PostgresStore.open(postgres_url, wait_seconds=2)
    try:
        assert await other.get_question(first.id) == first
        assert await other.get_question(second.id) == second
    finally:
        await other.close()


def test_a_group_is_made_again_write_by_write_for_what_one_row_can_cause_only() -> None:
    row_errors = [
        psycopg.errors.UniqueViolation(),
        psycopg.errors.DeadlockDetected(),
        psycopg.errors.ForeignKeyViolation(),
    ]
    assert all(split_on(error, 2) for error in row_errors)
    assert not split_on(psycopg.errors.UniqueViolation(), 1)  # alone: its own error
    assert not split_on(psycopg.OperationalError("the server closed the connection"), 2)
    assert not split_on(psycopg.errors.AdminShutdown(), 2)


async def test_no_caller_waits_for_ever_when_the_group_itself_is_cancelled(store: PostgresStore) -> None:
    caller = asyncio.create_task(store.create_question(record()))
    await asyncio.sleep(0)  # asked for: the group's task is due
    grouped = store._grouped_creates._running  # pyright: ignore[reportPrivateUsage]
    assert grouped is not None
    grouped.cancel()  # as the event loop does to every task left when it closes
    with pytest.raises(asyncio.CancelledError):
        await caller
