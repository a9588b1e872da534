"""Replicas on one PostgreSQL hear each other's changes: long polls, waterfalls and approvals across replicas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from bot.program import Running
from bot.replicas.feed import FeedTiming
from bot.store.postgres.store import PostgresStore
from bot.store.records import QuestionRecord
from core import AskUserQuestionAnswerItem
from tests.mcp_server.rig import http_client
from tests.postgres_server import PostgresServer

from .replicas_rig import ASK, QUICK, answer, ask, call, replicas

pytestmark = pytest.mark.anyio

SLOW_CATCH_UP = FeedTiming(catch_up_every=60.0, overlap=2.0, retry_min=0.1, retry_max=0.5)
"""Only NOTIFY can deliver a change within a test's time."""


async def poll(replica: Running, question_id: str, into: dict[str, Any], wait: float = 30) -> None:
    into.update((await call("GET", f"{replica.base_url}/v1/questions/{question_id}?wait={wait}"))[1])


async def delivered(replica: Running) -> None:
    channel = replica.installation.channel("web")
    assert channel is not None
    with anyio.fail_after(5):
        await channel.delivery_seen.wait()  # type: ignore[attr-defined]


async def polled_through_an_answer(
    poller: Running, answerer: Running, question_id: str, label: str = "Yes"
) -> dict[str, Any]:
    """Long-poll `question_id` on `poller`, see that it waits, answer it on `answerer`: what the poll returned."""
    result: dict[str, Any] = {}
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(poll, poller, question_id, result)
            await anyio.sleep(0.1)
            assert result == {}
            await answer(answerer, question_id, label)
    return result


async def test_an_answer_on_b_ends_the_long_poll_on_a_holding_the_question(tmp_path: Path, postgres_url: str) -> None:
    async with replicas(tmp_path, postgres_url, 2, timing=SLOW_CATCH_UP) as (a, b):
        question_id = await ask(a)
        await delivered(a)
        result = await polled_through_an_answer(a, b, question_id, "No")
    assert (result["status"], result["answer"]["answers"][0]["selected"]) == ("answered", ["No"])


async def test_the_holder_closes_out_an_answer_given_on_another_replica(tmp_path: Path, postgres_url: str) -> None:
    async with replicas(tmp_path, postgres_url, 2, timing=SLOW_CATCH_UP) as (a, b):
        question_id = await ask(a)
        await delivered(a)
        await answer(b, question_id)
        channel = a.installation.channel("web")
        assert channel is not None
        with anyio.fail_after(5):
            while not channel.closed:  # type: ignore[attr-defined]
                await anyio.sleep(0.02)
    assert [record.id for record in channel.closed] == [question_id]  # type: ignore[attr-defined]


async def test_a_long_poll_on_a_replica_not_holding_the_question_returns_at_the_answer(
    tmp_path: Path, postgres_url: str
) -> None:
    async with replicas(tmp_path, postgres_url, 3, timing=SLOW_CATCH_UP) as (a, b, c):
        question_id = await ask(a)
        await delivered(a)
        assert c.installation.ledger.get(question_id) is None
        result = await polled_through_an_answer(c, b, question_id)
    assert result["status"] == "answered"


async def test_a_long_poll_on_another_replica_still_times_out_pending(tmp_path: Path, postgres_url: str) -> None:
    async with replicas(tmp_path, postgres_url, 2) as (a, b):
        question_id = await ask(a)
        result: dict[str, Any] = {}
        with anyio.fail_after(5):
            await poll(b, question_id, result, wait=0.3)
        assert result["status"] == "pending"
        assert not b.installation.ledger.watches  # nothing left behind


ASK_APPROVE = {"questions": [{"id": "go", "question": "Ship?", "options": [{"label": "Approve"}, {"label": "No"}]}]}


async def test_approvals_on_two_replicas_count_once_per_person(tmp_path: Path, postgres_url: str) -> None:
    async with replicas(tmp_path, postgres_url, 2, timing=SLOW_CATCH_UP) as (a, b):
        question_id = await ask(a, ASK_APPROVE)
        await delivered(a)
        approve = AskUserQuestionAnswerItem(id="go", selected=["Approve"])
        first = await a.installation.ledger.approve(question_id, approve, by="ann", via="web", identity="ann", needed=2)
        again = await b.installation.ledger.approve(
            question_id, approve, by="ann", via="slack", identity="ann", needed=2
        )
        result: dict[str, Any] = {}
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(poll, a, question_id, result)
                await anyio.sleep(0.1)
                assert result == {}
                await b.installation.ledger.approve(
                    question_id, approve, by="bob", via="slack", identity="bob", needed=2
                )
    assert (first.counted, again.counted) == (True, False)
    assert (result["status"], result["approvedBy"]) == ("answered", ["ann", "bob"])


async def test_the_holder_hears_of_an_approval_counted_on_another_replica(tmp_path: Path, postgres_url: str) -> None:
    async with replicas(tmp_path, postgres_url, 2, timing=SLOW_CATCH_UP) as (a, b):
        question_id = await ask(a, ASK_APPROVE)
        await delivered(a)
        pending = a.installation.ledger.get(question_id)
        assert pending is not None
        approve = AskUserQuestionAnswerItem(id="go", selected=["Approve"])
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(pending.wait_changed)
                await anyio.sleep(0.05)
                await b.installation.ledger.approve(question_id, approve, by="ann", via="web", identity="ann", needed=2)
    assert [approval.by for approval in pending.record.approvals] == ["ann"]


async def test_a_change_whose_notify_was_lost_arrives_by_catching_up(
    tmp_path: Path, postgres_url: str, postgres_server: PostgresServer
) -> None:
    # The listeners are cut and do not come back within the test: only the periodic catch-up can deliver.
    lost = FeedTiming(catch_up_every=0.3, overlap=2.0, retry_min=60.0, retry_max=60.0)
    async with replicas(tmp_path, postgres_url, 2, timing=lost) as (a, b):
        question_id = await ask(a)
        await delivered(a)
        store = b.installation.store
        assert isinstance(store, PostgresStore)
        async with store.transaction() as db:
            cursor = await db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'"
            )
            assert len(await cursor.fetchall()) == 2
        result: dict[str, Any] = {}
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(poll, a, question_id, result)
                await answer(b, question_id)
    assert result["status"] == "answered"


async def test_after_postgresql_restarts_the_feed_listens_again(
    tmp_path: Path, postgres_url: str, postgres_server: PostgresServer
) -> None:
    async with replicas(tmp_path, postgres_url, 2, timing=SLOW_CATCH_UP) as (a, b):
        question_id = await ask(a)
        await delivered(a)
        postgres_server.stop()
        postgres_server.start()
        result: dict[str, Any] = {}
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(poll, a, question_id, result)
                while True:  # the pool finds its broken connections out; a call may meet one first
                    try:
                        await answer(b, question_id)
                        break
                    except Exception:
                        await anyio.sleep(0.1)
    assert result["status"] == "answered"


ASK_TWO = {
    "questions": [
        {"id": "go", "question": "Deploy v2?", "options": [{"label": "Yes"}, {"label": "No"}]},
        {"id": "when", "question": "When?", "options": [{"label": "Now"}, {"label": "Later"}]},
    ]
}


async def test_each_change_reaches_every_replicas_watchers_once(tmp_path: Path, postgres_url: str) -> None:
    heard: dict[str, list[tuple[str, str]]] = {"a": [], "b": []}
    async with replicas(tmp_path, postgres_url, 2, timing=QUICK) as (a, b):
        for name, replica in (("a", a), ("b", b)):

            async def hear(kind: str, record: QuestionRecord, name: str = name) -> None:
                heard[name].append((kind, record.status))

            replica.installation.ledger.watch(hear)
        question_id = await ask(a, ASK_TWO)
        await delivered(a)
        go = AskUserQuestionAnswerItem(id="go", selected=["Yes"])
        when = AskUserQuestionAnswerItem(id="when", selected=["Now"])
        with anyio.fail_after(5):
            while not heard["b"]:  # as in life: B shows the question before someone answers it there
                await anyio.sleep(0.01)
            await b.installation.ledger.save_partial(question_id, go, by="ann", via="web")
            while len(heard["a"]) < 2:  # one change at a time, so that none is read together with the next
                await anyio.sleep(0.01)
            await b.installation.ledger.save_partial(question_id, when, by="ann", via="web")  # completes it
            await poll(a, question_id, {})
            await anyio.sleep(1.5)  # three catch-ups, each reaching back over these changes
    each = [("asked", "pending"), ("partial", "pending"), ("partial", "pending"), ("resolved", "answered")]
    assert heard["b"] == each
    # A may read the second partial answer together with the answer it completed: then it hears only the answer.
    assert heard["a"] in (each, [each[0], each[1], each[3]])


async def next_event(stream: aiohttp.ClientResponse) -> dict[str, Any]:
    """The next event's JSON payload, skipping retry hints and keep-alive comments."""
    with anyio.fail_after(5):
        while True:
            line = (await stream.content.readline()).decode()
            assert line, "the event stream ended"
            if line.startswith("data: "):
                return json.loads(line[6:])


async def test_every_replicas_inbox_shows_a_question_asked_and_answered_on_another(
    tmp_path: Path, postgres_url: str
) -> None:
    async with (
        replicas(tmp_path, postgres_url, 2, recording=False, extra="[web]\n") as (a, b),
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser,
    ):
        async with browser.get(b.links["web inbox"]) as signed_in:
            assert signed_in.status == 200
        stream = await browser.get(f"{b.base_url}/events")
        question_id = await ask(a)
        shown = [await next_event(stream), await next_event(stream)]
        async with browser.get(f"{b.base_url}/questions/{question_id}/card") as card:
            assert card.status == 200 and "Deploy v2?" in await card.text()
        await answer(a, question_id)
        ended = [await next_event(stream), await next_event(stream)]
        stream.close()
    assert shown == [{"kind": "asked", "id": question_id}, {"kind": "waiting", "waiting": 1}]
    assert ended == [
        {"kind": "resolved", "id": question_id, "status": "answered", "waiting": 0},
        {"kind": "waiting", "waiting": 0},
    ]


async def test_get_answer_over_mcp_on_a_replica_not_holding_the_question_returns_at_the_answer(
    tmp_path: Path, postgres_url: str
) -> None:
    async with replicas(tmp_path, postgres_url, 2, timing=SLOW_CATCH_UP) as (a, b):
        async with http_client(a) as on_a:
            asked = (await on_a.call_tool("ask_user_question", {**ASK, "wait_seconds": 0})).structured_content
        assert asked is not None and asked["status"] == "pending"
        await delivered(a)
        got: dict[str, Any] = {}
        async with http_client(b) as on_b:

            async def get_answer() -> None:
                result = await on_b.call_tool("get_answer", {"handle": asked["handle"], "wait_seconds": 30})
                got.update(result.structured_content or {})

            with anyio.fail_after(10):
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(get_answer)
                    await anyio.sleep(0.3)
                    assert got == {}
                    # A long poll woken by the feed, not a call coming back early again and again.
                    assert asked["handle"] in b.installation.ledger.watches
                    await answer(a, asked["handle"], "No")
    assert got == {"status": "answered", "handle": asked["handle"], "answers": [{"id": "go", "selected": ["No"]}]}


async def test_an_inbox_no_page_listens_to_leaves_other_replicas_changes_uncounted_until_one_does(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counting the waiting questions grows with the backlog: only worth it for a page that shows the count.
    async with (
        replicas(tmp_path, postgres_url, 2, recording=False, extra="[web]\n") as (a, b),
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser,
    ):
        async with browser.get(b.links["web inbox"]) as signed_in:  # the page counts as it renders
            assert signed_in.status == 200
        counts: list[int] = []
        store = b.installation.store
        count_questions = store.count_questions

        async def counting(*args: Any, **kwargs: Any) -> int:
            counts.append(await count_questions(*args, **kwargs))
            return counts[-1]

        monkeypatch.setattr(store, "count_questions", counting)
        ended = anyio.Event()

        async def hear(kind: str, record: QuestionRecord) -> None:
            if kind == "resolved":
                ended.set()

        b.installation.ledger.watch(hear)
        question_id = await ask(a)
        with anyio.fail_after(5):
            while not await a.installation.store.has_delivery(question_id, "web"):  # on show before it is answered
                await anyio.sleep(0.01)
        await answer(a, question_id)
        with anyio.fail_after(5):
            await ended.wait()
        await anyio.sleep(0.2)  # B's inbox has had its turn to count, had it wanted to
        assert counts == []
        stream = await browser.get(f"{b.base_url}/events")
        assert await next_event(stream) == {"kind": "waiting", "waiting": 0}
        stream.close()
    assert counts == [0]
