"""A replica whose lease ran out (PostgreSQL away longer than a lease, or the process stalled): it claims nothing
while dead, takes its lease again when nobody took its questions, and a claim in flight decides before it does."""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import pytest

from bot.replicas.postgres import PostgresReplica
from bot.replicas.replica import LeaseLost
from bot.store.postgres.schema import CLAIM_LOCK
from bot.store.postgres.store import PostgresStore
from bot.store.records import QuestionRecord
from core import AskUserQuestionItem, AskUserQuestionOption

from .replicas_rig import started_replicas

pytestmark = pytest.mark.anyio

LEASE = 60
"""Seconds: nothing here waits for a lease; the tests end leases in the database."""

QUESTION = AskUserQuestionItem(
    id="go", question="Deploy v2?", options=[AskUserQuestionOption(label="Yes"), AskUserQuestionOption(label="No")]
)


async def ask(store: PostgresStore) -> str:
    record = QuestionRecord(agent=None, questions=[QUESTION], origin="api", created_at=datetime.now(UTC))
    await store.create_question(record)
    return record.id


async def expire(store: PostgresStore, *replicas: PostgresReplica) -> None:
    async with store.transaction() as db:
        for replica in replicas:
            await db.execute("UPDATE replicas SET alive_until = now() - interval '1 s' WHERE id = %s", (replica.id,))


async def test_a_replica_whose_lease_ran_out_claims_nothing_until_it_takes_its_lease_again(postgres_url: str) -> None:
    async with started_replicas(postgres_url, LEASE) as [(x, store), (y, theirs)]:
        question_id = await ask(theirs)
        await expire(store, x, y)
        while_dead = await x.claim()
        await x.renew([])
        after = await x.claim()
    assert while_dead == []
    assert [record.id for record in after] == [question_id]


async def test_the_orphan_loop_claims_nothing_within_a_lease_of_its_replica_taking_its_own_lease_again(
    postgres_url: str,
) -> None:
    # Replicas back from the same outage: each gets a lease to take its own lease again before another claims.
    async with started_replicas(postgres_url, LEASE) as [(x, store), (y, theirs)]:
        question_id = await ask(theirs)
        await expire(store, x, y)
        await x.renew([])
        assert await x.claim_when_due() == []
        assert [record.id for record in await x.claim()] == [question_id]


async def test_a_lease_retake_waits_for_a_claim_in_flight_and_stops_when_it_took_a_question(postgres_url: str) -> None:
    async with started_replicas(postgres_url, LEASE) as [(x, store), (y, other)]:
        question_id = await ask(store)
        await expire(store, x)
        outcome: list[LeaseLost] = []

        async def retake() -> None:
            try:
                await x.renew([question_id])
            except LeaseLost as lost:
                outcome.append(lost)

        async with anyio.create_task_group() as group, store.transaction() as claim:
            await claim.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", CLAIM_LOCK)  # y's claim, in flight
            group.start_soon(retake)
            with anyio.fail_after(5):
                while not await _waiting_for_claim_lock(other):  # x's re-take waits for the claim to commit
                    await anyio.sleep(0.02)
            await claim.execute("UPDATE questions SET owner = %s WHERE id = %s", (y.id, question_id))
    assert len(outcome) == 1 and "another replica took 1 of its questions" in outcome[0].message


async def _waiting_for_claim_lock(store: PostgresStore) -> bool:
    async with store.transaction() as db:
        cursor = await db.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        row = await cursor.fetchone()
    return row is not None and row[0] > 0
