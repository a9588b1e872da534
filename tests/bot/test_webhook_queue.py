"""The store's webhook queue on both backends: deliveries queued with the event they announce, claimed once under a
lease, finished by the attempt that holds it (`bot.store.webhook_queue`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import anyio
import pytest

from bot.store.interface import AsyncStore
from bot.store.postgres.store import PostgresStore
from bot.store.sqlite.async_store import SqliteStore
from bot.store.webhook_queue import WebhookTarget, delivery_id

from .store_backends import Opener, answer, record

pytestmark = pytest.mark.anyio

CI = WebhookTarget("https://ci.example.org/hook", frozenset({"answered", "cancelled", "expired"}))
ALL = WebhookTarget("http://127.0.0.1:9/all", frozenset({"asked", "answered", "cancelled", "expired"}))
URLS = [CI.url, ALL.url]


@pytest.fixture(params=["sqlite", "postgres"])
async def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    opened: list[AsyncStore] = []

    async def open_one() -> AsyncStore:
        if request.param == "sqlite":
            store: AsyncStore = SqliteStore.open(tmp_path / "handraise.db")
        else:
            store = await PostgresStore.open(cast(str, request.getfixturevalue("postgres_url")), wait_seconds=2)
        store.subscribe_webhooks([CI, ALL])
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        await store.close()


async def test_an_ask_queues_asked_for_the_webhooks_that_list_it(reopen: Opener) -> None:
    store = await reopen()
    asked = record()
    await store.create_question(asked)
    [claimed] = await store.claim_webhooks(URLS, lease_seconds=60, limit=10)
    assert (claimed.webhook, claimed.question_id, claimed.event, claimed.attempt) == (ALL.url, asked.id, "asked", 1)
    assert claimed.id == delivery_id(ALL.url, asked.id, "asked")
    assert json.loads(claimed.record_json)["status"] == "pending"


async def test_a_resolution_queues_one_delivery_per_webhook_with_the_resolved_record(reopen: Opener) -> None:
    store = await reopen()
    asked = record()
    await store.create_question(asked)
    await store.claim_webhooks(URLS, lease_seconds=60, limit=10)  # the asked one, out of the way
    await store.save_partial(asked.id, answer().answers[0], actor="alice", channel="web")  # not an event
    await store.resolve(asked.id, "answered", answer=answer(), by="alice", via="web")
    lost = await store.resolve(asked.id, "cancelled", error_code="X", error_message="late")
    assert not lost.won
    claimed = await store.claim_webhooks(URLS, lease_seconds=60, limit=10)
    assert sorted((one.webhook, one.event) for one in claimed) == [(ALL.url, "answered"), (CI.url, "answered")]
    assert {json.loads(one.record_json)["status"] for one in claimed} == {"answered"}


async def test_a_claimed_delivery_is_leased_then_due_again_as_a_new_attempt(reopen: Opener) -> None:
    store = await reopen()
    asked = record()
    await store.create_question(asked)
    [first] = await store.claim_webhooks(URLS, lease_seconds=0.2, limit=10)
    assert await store.claim_webhooks(URLS, lease_seconds=0.2, limit=10) == []
    await anyio.sleep(0.3)
    [second] = await store.claim_webhooks(URLS, lease_seconds=60, limit=10)
    assert (second.id, second.attempt) == (first.id, 2)
    assert not await store.finish_webhook(first.id, first.attempt, "delivered")  # its lease ran out
    assert await store.finish_webhook(second.id, second.attempt, "delivered")
    assert not await store.finish_webhook(second.id, second.attempt, "delivered")


async def test_a_delivered_one_is_never_claimed_again_and_a_retry_waits(reopen: Opener) -> None:
    store = await reopen()
    for _ in range(2):
        await store.create_question(record())
    one, two = await store.claim_webhooks(URLS, lease_seconds=0.1, limit=10)
    assert await store.finish_webhook(one.id, one.attempt, "delivered")
    assert await store.finish_webhook(two.id, two.attempt, "retry", retry_in=0.3, error="HTTP 500")
    await anyio.sleep(0.15)
    assert await store.claim_webhooks(URLS, lease_seconds=60, limit=10) == []
    await anyio.sleep(0.25)
    [again] = await store.claim_webhooks(URLS, lease_seconds=60, limit=10)
    assert (again.id, again.attempt) == (two.id, 2)
    assert await store.finish_webhook(again.id, again.attempt, "failed", error="gave up")
    await anyio.sleep(0.15)
    assert await store.claim_webhooks(URLS, lease_seconds=60, limit=10) == []


async def test_only_the_webhooks_asked_for_are_claimed(reopen: Opener) -> None:
    store = await reopen()
    await store.create_question(record())
    assert await store.claim_webhooks([CI.url], lease_seconds=60, limit=10) == []
    assert await store.claim_webhooks([], lease_seconds=60, limit=10) == []
    assert len(await store.claim_webhooks([ALL.url], lease_seconds=60, limit=10)) == 1


async def test_two_stores_claiming_at_once_share_the_deliveries_without_overlap(reopen: Opener) -> None:
    one, two = await reopen(), await reopen()
    for _ in range(30):
        await one.create_question(record())
    claims: list[str] = []

    async def drain(store: AsyncStore) -> None:
        while claimed := await store.claim_webhooks(URLS, lease_seconds=60, limit=3):
            claims.extend(delivery.id for delivery in claimed)

    async with anyio.create_task_group() as group:
        group.start_soon(drain, one)
        group.start_soon(drain, two)
    assert len(claims) == len(set(claims)) == 30


async def test_without_webhooks_nothing_is_queued(reopen: Opener) -> None:
    store = await reopen()
    store.subscribe_webhooks([])
    asked = record()
    await store.create_question(asked)
    await store.resolve(asked.id, "expired", error_code="EXPIRED", error_message="too late")
    assert await store.claim_webhooks(URLS, lease_seconds=60, limit=10) == []


async def test_a_resolution_that_learns_a_rule_queues_its_deliveries_too(reopen: Opener) -> None:
    from bot.store.records import LearnedRule

    store = await reopen()
    asked = record()
    await store.create_question(asked)
    await store.claim_webhooks(URLS, lease_seconds=60, limit=10)
    rule = LearnedRule(id="learned-1", agent="claude", project="shop", tool="shell", request="ls", question_id=asked.id)
    resolution = await store.resolve(asked.id, "answered", answer=answer(), by="alice", via="web", learn=rule)
    assert resolution.won
    claimed = await store.claim_webhooks(URLS, lease_seconds=60, limit=10)
    assert sorted(one.webhook for one in claimed) == sorted(URLS)
    assert {one.id for one in claimed} == {delivery_id(url, asked.id, "answered") for url in URLS}
