"""Replicas on one PostgreSQL database, in one event loop: each pending question is run by one live replica, a
stopped replica's questions are taken over, and timers act once across the takeover."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskStatus

from bot.channels.base import Sent
from bot.config import Config
from bot.program import Running, running
from bot.questions.clock import Clock
from bot.questions.routing import Route
from bot.replicas.replica import LeaseLost
from bot.store.interface import AsyncStore
from bot.store.postgres.store import PostgresStore
from bot.store.records import AgentRef, AuditKind, QuestionRecord
from bot.store.sqlite.async_store import SqliteStore
from core import AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionOption
from tests.fake_clock import FakeClock

from .fakes import RecordingChannel
from .program_rig import config_for, program

pytestmark = pytest.mark.anyio

LEASE = 1.5
"""Seconds: short, so a takeover happens within a test; long enough for a loaded 2-core machine's stalls."""

QUESTION = AskUserQuestionItem(
    id="go",
    question="Deploy v2?",
    options=[AskUserQuestionOption(label="Yes"), AskUserQuestionOption(label="No")],
)


class Replica:
    """One `program.running` in a task of its own, on its own connection pool, stoppable on its own."""

    def __init__(self, running: Running, channel: RecordingChannel, store: PostgresStore) -> None:
        self.running = running
        self.channel = channel
        self.store = store
        self.lost: LeaseLost | None = None
        self.stopped = anyio.Event()
        self._stop = anyio.Event()

    @property
    def id(self) -> str:
        return self.running.replica.id

    async def ask(self) -> str:
        record = await self.running.remote.ask([QUESTION], AgentRef(id="deployer"))
        await until_recorded(self.store, record.id, "delivered")
        return record.id

    async def stop(self) -> None:
        self._stop.set()
        await self.stopped.wait()


async def _run_replica(
    config: Config, url: str, clock: Clock | None, *, task_status: TaskStatus[Replica] = anyio.TASK_STATUS_IGNORED
) -> None:
    store = await PostgresStore.open(url)
    one: Replica | None = None
    try:
        channel = RecordingChannel("web")
        async with running(config, clock=clock, channels=[channel], store=store) as started:
            one = Replica(started, channel, store)
            task_status.started(one)
            await one._stop.wait()
    except LeaseLost as lost:
        assert one is not None
        one.lost = lost
    finally:
        await store.close()
        if one is not None:
            one.stopped.set()


@asynccontextmanager
async def replicas(
    tmp_path: Path, url: str, count: int, *, extra: str = "", clock: Clock | None = None
) -> AsyncIterator[list[Replica]]:
    async with anyio.create_task_group() as group:
        started: list[Replica] = []
        for index in range(count):
            (tmp_path / f"r{index}").mkdir()
            config = config_for(tmp_path / f"r{index}", f"lease_seconds = {LEASE}\n{extra}")
            started.append(await group.start(_run_replica, config, url, clock))
        try:
            yield started
        finally:
            for one in started:
                await one.stop()


async def owner_of(store: PostgresStore, question_id: str) -> str | None:
    async with store.transaction() as db:
        cursor = await db.execute("SELECT owner FROM questions WHERE id = %s", (question_id,))
        row = await cursor.fetchone()
    assert row is not None
    return row[0]


async def until_held(by: Replica, question_id: str) -> None:
    """Until `by` runs the question's waterfall (it claimed and resumed it)."""
    with anyio.fail_after(5 * LEASE):
        while (held := by.running.installation.ledger.get(question_id)) is None or not held.holders:
            await anyio.sleep(0.05)


async def kinds(store: AsyncStore, question_id: str) -> list[AuditKind]:
    return [event.kind for event in await store.history(question_id=question_id)]


async def until_recorded(store: AsyncStore, question_id: str, kind: AuditKind, count: int = 1) -> None:
    with anyio.fail_after(5):
        while (await kinds(store, question_id)).count(kind) < count:
            await anyio.sleep(0.02)


async def test_a_question_is_owned_by_the_replica_that_asked_it_and_run_only_there(
    tmp_path: Path, postgres_url: str
) -> None:
    async with replicas(tmp_path, postgres_url, 2) as (a, b):
        question_id = await a.ask()
        assert await owner_of(a.store, question_id) == a.id
        assert await b.running.replica.claim() == []
        assert b.running.installation.ledger.get(question_id) is None
        assert [question.id for question, _ in a.channel.delivered] == [question_id]
        assert b.channel.delivered == []


async def test_each_replica_has_its_own_id(tmp_path: Path, postgres_url: str) -> None:
    async with replicas(tmp_path, postgres_url, 3) as started:
        ids = {one.id for one in started}
    assert len(ids) == 3 and all(name.startswith("r-") for name in ids)


async def test_a_stopped_replicas_question_is_taken_over_delivered_once_and_answered_once(
    tmp_path: Path, postgres_url: str
) -> None:
    async with replicas(tmp_path, postgres_url, 3) as (a, b, c):
        question_id = await a.ask()
        await a.stop()
        survivor = b if await _claimed_by(question_id, b, c) == b.id else c
        await until_held(survivor, question_id)
        item = AskUserQuestionAnswerItem(id="go", selected=["Yes"])
        await survivor.running.installation.ledger.submit(question_id, {"go": item}, by="bob", via="web")
        record = await survivor.store.get_question(question_id)
        events = await kinds(survivor.store, question_id)
    assert record is not None and (record.status, record.answered_by) == ("answered", "bob")
    assert b.channel.delivered == [] and c.channel.delivered == []  # the new owner found A's delivery
    assert (events.count("delivered"), events.count("answered")) == (1, 1)


async def _claimed_by(question_id: str, *candidates: Replica) -> str:
    with anyio.fail_after(5 * LEASE):
        while True:
            owner = await owner_of(candidates[0].store, question_id)
            if owner in {one.id for one in candidates}:
                return owner
            await anyio.sleep(0.05)


async def test_reminder_escalation_and_expiry_each_fire_once_across_a_takeover(
    tmp_path: Path, postgres_url: str
) -> None:
    clock = FakeClock()
    extra = '[[web.subscriptions]]\nremind_every = "25m"\nremind_max = 1\nescalate_after = "30m"\nexpire_after = "1h"\n'
    async with replicas(tmp_path, postgres_url, 2, extra=extra, clock=clock) as (a, b):
        question_id = await a.ask()
        await clock.advance(timedelta(minutes=30))
        await until_recorded(a.store, question_id, "reminded")
        await until_recorded(a.store, question_id, "escalated")
        await a.stop()
        await until_held(b, question_id)
        await clock.advance(timedelta(minutes=30))
        with anyio.fail_after(5):
            while (record := await b.store.get_question(question_id)) is None or record.status == "pending":
                await anyio.sleep(0.02)
        events = await kinds(b.store, question_id)
    assert record.status == "expired"
    assert [events.count(kind) for kind in ("delivered", "reminded", "escalated", "expired")] == [1, 1, 1, 1]
    assert b.channel.delivered == []


async def test_a_local_question_of_a_stopped_replica_is_cancelled_and_a_live_ones_is_left_alone(
    tmp_path: Path, postgres_url: str
) -> None:
    async with replicas(tmp_path, postgres_url, 2) as (a, b):
        now = a.running.installation.ledger.clock.now()
        mine = QuestionRecord(agent=None, questions=[QUESTION], origin="local", created_at=now)
        theirs = QuestionRecord(agent=None, questions=[QUESTION], origin="local", created_at=now)
        await a.store.create_question(theirs)
        await b.store.create_question(mine)
        await a.stop()
        await _claimed_by(theirs.id, b)
        with anyio.fail_after(5):
            while (record := await b.store.get_question(theirs.id)) is None or record.status == "pending":
                await anyio.sleep(0.02)
        kept = await b.store.get_question(mine.id)
    assert (record.status, record.error_message) == ("cancelled", "the asking process ended")
    assert kept is not None and kept.status == "pending"


async def test_a_replica_whose_lease_ran_out_carries_on_when_nobody_took_its_questions(
    tmp_path: Path, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with replicas(tmp_path, postgres_url, 1) as (a,):
        question_id = await a.ask()
        await expire_lease(a)
        await until_logged(caplog, "nobody took its questions; carrying on", 1)
        item = AskUserQuestionAnswerItem(id="go", selected=["Yes"])
        await a.running.installation.ledger.submit(question_id, {"go": item}, by="alice", via="web")
        with anyio.fail_after(5):  # its waterfall, still running here, closes the answered question out
            while question_id not in [record.id for record in a.channel.closed]:
                await anyio.sleep(0.02)
        assert not a.stopped.is_set()
        assert await lease_holds(a)
        assert await owner_of(a.store, question_id) == a.id


async def test_a_replica_whose_lease_ran_out_and_whose_question_was_taken_stops_with_lease_lost(
    tmp_path: Path, postgres_url: str
) -> None:
    async with replicas(tmp_path, postgres_url, 2) as (a, b):
        question_id = await a.ask()
        async with a.store.transaction() as db:  # what b's claim does once a's lease has run out
            await db.execute("UPDATE replicas SET alive_until = now() - interval '1 s' WHERE id = %s", (a.id,))
            await db.execute("UPDATE questions SET owner = %s WHERE id = %s", (b.id, question_id))
        with anyio.fail_after(5 * LEASE):
            await a.stopped.wait()
        assert not b.stopped.is_set()
    assert a.lost is not None and f"replica {a.id} could not renew its lease" in a.lost.message
    assert "another replica took 1 of its questions" in a.lost.message


async def expire_lease(replica: Replica) -> None:
    async with replica.store.transaction() as db:
        await db.execute("UPDATE replicas SET alive_until = now() - interval '1 s' WHERE id = %s", (replica.id,))


async def lease_holds(replica: Replica) -> bool:
    async with replica.store.transaction() as db:
        cursor = await db.execute("SELECT alive_until > now() FROM replicas WHERE id = %s", (replica.id,))
        row = await cursor.fetchone()
    return row is not None and bool(row[0])


async def test_a_restarted_single_process_on_sqlite_does_not_escalate_twice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = config_for(tmp_path, '[[web.subscriptions]]\nescalate_after = "30m"\n')
    clock = FakeClock()
    tried = "escalated but no later answerer takes it"
    async with program(config, clock=clock) as (first, _):
        record = await first.remote.ask([QUESTION], AgentRef(id="deployer"))
        await until_recorded(first.installation.ledger.store, record.id, "delivered")
        await clock.advance(timedelta(minutes=30))
        await until_logged(caplog, tried, 1)
    async with program(config, clock=FakeClock(clock.now())) as (second, _):
        assert second.resumed == 1
        await until_logged(caplog, tried, 2)  # the resumed waterfall reached the escalation again
        events = await kinds(second.installation.ledger.store, record.id)
    assert events.count("escalated") == 1


async def until_logged(caplog: pytest.LogCaptureFixture, text: str, count: int) -> None:
    with anyio.fail_after(5):
        while sum(text in entry.getMessage() for entry in caplog.records) < count:
            await anyio.sleep(0.02)


class FindingChannel(RecordingChannel):
    """A channel that can look up what it sent (as Slack could by message metadata)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.looked_up: list[str] = []

    async def find_sent(self, question: QuestionRecord, route: Route) -> Sent | None:
        self.looked_up.append(question.id)
        return Sent(key=f"found:{question.id}")


async def _begun_but_unrecorded(store: AsyncStore) -> QuestionRecord:
    """A question whose earlier delivery began (the intent is recorded) but whose sender died before recording it."""
    record = QuestionRecord(agent=None, questions=[QUESTION], origin="api", created_at=FakeClock().now())
    await store.create_question(record)
    assert await store.fire_once(record.id, "deliver:web")
    return record


async def test_the_web_inbox_shows_a_question_without_recording_an_intent_to_deliver(tmp_path: Path) -> None:
    # It sends nothing out (it lists what the store holds), so a replica taking over has nothing to look for.
    store = SqliteStore.open(tmp_path / "handraise.db")
    async with running(config_for(tmp_path), store=store) as program:
        record = await program.remote.ask([QUESTION], None)
        await until_recorded(store, record.id, "delivered")
    assert await store.get_delivery(record.id, "web") is not None
    assert await store.fire_once(record.id, "deliver:web")  # nobody had
    await store.close()


async def test_a_channel_that_sends_out_records_its_intent_before_it_sends(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "handraise.db")
    channel = RecordingChannel("web")
    async with running(config_for(tmp_path), channels=[channel], store=store) as program:
        record = await program.remote.ask([QUESTION], None)
        await until_recorded(store, record.id, "delivered")
    assert channel.delivered and not await store.fire_once(record.id, "deliver:web")
    await store.close()


async def test_a_delivery_begun_but_unrecorded_is_looked_up_instead_of_sent_again(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "handraise.db")
    record = await _begun_but_unrecorded(store)
    channel = FindingChannel("web")
    async with running(config_for(tmp_path), channels=[channel], store=store):
        await until_recorded(store, record.id, "delivered")
    delivery = await store.get_delivery(record.id, "web")
    await store.close()
    assert channel.looked_up == [record.id] and channel.delivered == []
    assert delivery is not None and delivery.key == f"found:{record.id}"


async def test_a_delivery_begun_but_unrecorded_is_sent_again_when_the_channel_cannot_look_it_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SqliteStore.open(tmp_path / "handraise.db")
    record = await _begun_but_unrecorded(store)
    channel = RecordingChannel("web")
    async with running(config_for(tmp_path), channels=[channel], store=store):
        await until_recorded(store, record.id, "delivered")
    await store.close()
    assert [question.id for question, _ in channel.delivered] == [record.id]
    assert "an earlier web delivery began but was not recorded; sending it again" in caplog.text


async def test_a_new_question_is_delivered_without_a_lookup(tmp_path: Path) -> None:
    channel = FindingChannel("web")
    async with running(config_for(tmp_path), channels=[channel]) as started:
        record = await started.remote.ask([QUESTION], AgentRef(id="deployer"))
        await until_recorded(started.installation.ledger.store, record.id, "delivered")
    assert channel.looked_up == [] and [question.id for question, _ in channel.delivered] == [record.id]
