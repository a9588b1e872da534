"""Group commit in the embedded store: the first write of a turn of the event loop is made at once; the writes asked
for after it in the same turn share one transaction (and while they come several a turn, the first joins them too).

Each write still behaves as its own: it is undone alone when it fails, its caller resumes only once the group is
committed, and a caller cancelled before the commit leaves nothing behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.store.errors import StoreError, StoreUnavailable
from bot.store.records import QuestionRecord, Resolution
from bot.store.sqlite.async_store import SqliteStore
from bot.store.sqlite.store import Store

from .store_backends import answer, kinds_of, record

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = SqliteStore.open(tmp_path / "handraise.db")
    yield opened
    await opened.close()


def committed_elsewhere(store: SqliteStore, id: str) -> QuestionRecord | None:
    """The question as another process reading the file sees it: only what is committed."""
    with Store.open(store.path) as other:
        return other.get_question(id)


async def test_the_writes_after_the_first_of_a_turn_share_one_commit(store: SqliteStore) -> None:
    records = [record() for _ in range(8)]
    before = store.sync.commits
    await asyncio.gather(*(store.create_question(each) for each in records))
    assert store.sync.commits == before + 2
    assert all(committed_elsewhere(store, each.id) == each for each in records)


async def test_a_write_alone_is_committed_at_once_without_yielding(store: SqliteStore) -> None:
    original = record()
    before = store.sync.commits
    writing = store.create_question(original).__await__()
    with pytest.raises(StopIteration):  # finished in one step: it never waited for the loop
        next(writing)
    assert store.sync.commits == before + 1
    assert committed_elsewhere(store, original.id) == original


async def test_while_writes_come_several_a_turn_the_first_of_the_next_turn_joins_their_group(
    store: SqliteStore,
) -> None:
    await asyncio.gather(*(store.create_question(record()) for _ in range(4)))  # one at once, a group of three
    records = [record() for _ in range(4)]
    before = store.sync.commits
    await asyncio.gather(*(store.create_question(each) for each in records))
    assert store.sync.commits == before + 1
    assert all(committed_elsewhere(store, each.id) == each for each in records)


async def test_after_a_group_of_one_a_write_alone_is_made_at_once_again(store: SqliteStore) -> None:
    await asyncio.gather(*(store.create_question(record()) for _ in range(4)))
    await store.create_question(record())  # the load is over: a group of its own, of one
    writing = store.create_question(record()).__await__()
    with pytest.raises(StopIteration):
        next(writing)


async def first_write_of_the_turn(store: SqliteStore) -> None:
    """Made at once: what the test gathers after it is grouped."""
    await store.create_question(record())


async def test_writes_of_different_kinds_in_one_turn_each_return_their_own_result(store: SqliteStore) -> None:
    first, second = record(), record()
    await store.create_question(first)
    _, created, fired, delivery = await asyncio.gather(
        first_write_of_the_turn(store),
        store.create_question(second),
        store.fire_once(first.id, "escalate:slack"),
        store.add_delivery(first.id, "web", first.id, {"shown": True}),
    )
    assert created is None and fired is True
    assert delivery.question_id == first.id and delivery.ref == {"shown": True}
    assert await store.get_question(second.id) == second


async def test_a_write_that_fails_in_a_group_is_undone_alone(store: SqliteStore) -> None:
    taken, fresh = record(), record()
    await store.create_question(taken)
    _, *outcomes = await asyncio.gather(
        first_write_of_the_turn(store),
        store.create_question(fresh),
        store.create_question(taken),  # already exists
        store.fire_once("q_missing", "escalate:slack"),  # no such question
        return_exceptions=True,
    )
    assert outcomes[0] is None
    assert isinstance(outcomes[1], StoreError) and "already exists" in str(outcomes[1])
    assert isinstance(outcomes[2], StoreError) and "q_missing" in str(outcomes[2])
    assert committed_elsewhere(store, fresh.id) == fresh
    # The failed create left no second `asked` behind it.
    assert await kinds_of(store, taken.id) == ["asked"]


async def test_when_the_groups_transaction_ends_under_it_every_write_fails_and_none_is_recorded(
    store: SqliteStore,
) -> None:
    first, second = record(), record()

    def end_the_transaction() -> None:
        # Stands in for SQLite rolling the whole transaction back on a disk error (SQLITE_FULL, SQLITE_IOERR).
        store.sync.connection.execute("ROLLBACK")

    _, *outcomes = await asyncio.gather(
        first_write_of_the_turn(store),
        store.create_question(first),
        store._write(end_the_transaction),  # pyright: ignore[reportPrivateUsage]
        store.create_question(second),
        return_exceptions=True,
    )
    assert all(isinstance(outcome, StoreUnavailable) for outcome in outcomes), outcomes
    assert committed_elsewhere(store, first.id) is None and committed_elsewhere(store, second.id) is None
    # The store goes on working.
    await store.create_question(first)
    assert committed_elsewhere(store, first.id) == first


async def test_a_write_is_made_even_when_its_caller_is_cancelled_before_the_commit(store: SqliteStore) -> None:
    leading, following = record(), record()
    first = asyncio.create_task(first_write_of_the_turn(store))
    leader = asyncio.create_task(store.create_question(leading))
    follower = asyncio.create_task(store.create_question(following))
    await asyncio.sleep(0)  # both have asked for their write; the group is not committed yet
    leader.cancel()
    follower.cancel()
    for task in (leader, follower):
        with pytest.raises(asyncio.CancelledError):
            await task
    await first
    # As a synchronous call would have: what was asked for is recorded (a message sent is never forgotten).
    assert committed_elsewhere(store, leading.id) == leading
    assert committed_elsewhere(store, following.id) == following


async def test_first_answer_wins_among_answers_in_one_group(store: SqliteStore) -> None:
    original = record()
    await store.create_question(original)
    answering = [store.resolve(original.id, "answered", answer=answer(), by=f"person-{n}", via="web") for n in range(5)]
    _, *outcomes = await asyncio.gather(first_write_of_the_turn(store), *answering)
    assert [isinstance(outcome, Resolution) and outcome.won for outcome in outcomes] == [
        True,
        False,
        False,
        False,
        False,
    ]
    stored = await store.get_question(original.id)
    assert stored is not None and stored.answered_by == "person-0"


def test_write_together_returns_each_writes_result_or_error_in_order(tmp_path: Path) -> None:
    with Store.open(tmp_path / "handraise.db") as sync:
        taken = record()
        sync.create_question(taken)
        fresh = record()
        outcomes = sync.write_together(
            [
                lambda: sync.create_question(taken),
                lambda: sync.create_question(fresh),
                lambda: sync.fire_once(fresh.id, "x"),
            ]
        )
        assert outcomes[0][0] is None and isinstance(outcomes[0][1], StoreError)
        assert outcomes[1] == (None, None) and outcomes[2] == (True, None)
        assert sync.get_question(fresh.id) == fresh


async def test_writes_queued_when_the_store_closes_are_made_first(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "handraise.db")
    first, queued = record(), record()
    writes = [asyncio.create_task(store.create_question(each)) for each in (first, queued)]
    await asyncio.sleep(0)  # the first is made, the second queued for the group
    await store.close()
    await asyncio.gather(*writes)
    with Store.open(tmp_path / "handraise.db") as other:
        assert other.get_question(first.id) == first and other.get_question(queued.id) == queued
