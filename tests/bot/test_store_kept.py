"""Values kept and Web Push subscriptions, on both backends: made once, the same after a reopen and for every
process racing to make them; subscriptions one per device, removable only by their owner when one is named."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import anyio
import pytest

from bot.store.interface import AsyncStore
from bot.store.records import PushSubscription

from .store_backends import T0, Opener, store_opener

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", "postgres"])
async def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    async with store_opener(request, tmp_path / "state" / "handraise.db") as opener:
        yield opener


def device(n: int, person: str = "ada@example.org") -> PushSubscription:
    return PushSubscription(
        endpoint=f"https://push.example.net/send/{n}",
        person=person,
        p256dh=f"BKey{n}",
        auth=f"auth{n}",
        created_at=T0 + timedelta(seconds=n),
    )


async def test_the_first_value_is_kept_and_read_back_after_a_reopen(reopen: Opener) -> None:
    store = await reopen()
    assert await store.keep_value("web.session", "first") == "first"
    assert await store.keep_value("web.session", "second") == "first"
    assert await (await reopen()).keep_value("web.session", "third") == "first"
    assert await store.keep_value("web.push.vapid", "other") == "other"


async def test_processes_racing_to_make_a_value_all_get_the_winner(reopen: Opener) -> None:
    stores = [await reopen() for _ in range(4)]
    got: list[str] = []

    async def make(store: AsyncStore, n: int) -> None:
        got.append(await store.keep_value("raced", f"candidate-{n}"))

    async with anyio.create_task_group() as group:
        for n, store in enumerate(stores * 3):
            group.start_soon(make, store, n)
    assert len(got) == 12 and len(set(got)) == 1 and got[0].startswith("candidate-")


@pytest.mark.parametrize("text", ["", "nul\x00inside", "back\\slash", "ünïcødé 🎉", "x" * 10_000])
async def test_hostile_values_are_kept_exactly(reopen: Opener, text: str) -> None:
    store = await reopen()
    assert await store.keep_value(text or "empty", text) == text
    assert await (await reopen()).keep_value(text or "empty", "no") == text


async def test_subscriptions_are_one_per_device_and_listed_by_person(reopen: Opener) -> None:
    store = await reopen()
    await store.save_push_subscription(device(1))
    await store.save_push_subscription(device(2))
    await store.save_push_subscription(device(3, "bob@example.org"))
    assert await store.list_push_subscriptions() == [device(1), device(2), device(3, "bob@example.org")]
    assert await store.list_push_subscriptions(["bob@example.org"]) == [device(3, "bob@example.org")]
    assert await store.list_push_subscriptions(["nobody@example.org"]) == []
    assert await store.list_push_subscriptions([]) == []
    # The same device subscribing again (new keys, another person signed in on it) replaces its row.
    again = device(1, "bob@example.org").model_copy(update={"p256dh": "BNew", "auth": "new"})
    await store.save_push_subscription(again)
    listed = await (await reopen()).list_push_subscriptions()
    assert len(listed) == 3 and again in listed and device(1) not in listed


async def test_a_subscription_is_removed_only_by_its_owner_when_one_is_named(reopen: Opener) -> None:
    store = await reopen()
    await store.save_push_subscription(device(1))
    assert not await store.delete_push_subscription(device(1).endpoint, person="mallory@example.org")
    assert not await store.delete_push_subscription("https://push.example.net/send/unknown")
    assert await store.list_push_subscriptions() == [device(1)]
    assert await store.delete_push_subscription(device(1).endpoint, person="ada@example.org")
    assert not await store.delete_push_subscription(device(1).endpoint)
    await store.save_push_subscription(device(2))
    assert await store.delete_push_subscription(device(2).endpoint)
    assert await store.list_push_subscriptions() == []
