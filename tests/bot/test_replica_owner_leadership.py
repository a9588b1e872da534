"""Singletons on replicas: one replica at a time runs a mailbox watcher or Telegram long polling, under a PostgreSQL
session advisory lock; another takes over within seconds once the holder's connection goes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import pytest

from bot.telegram.channel import TelegramChannel
from bot.telegram.settings import TelegramSettings
from bot.telegram.transport import make_bot
from tests.telegram.fake_telegram import TOKEN, fake_telegram

from .replicas_rig import started_replicas

pytestmark = pytest.mark.anyio

LEASE = 0.9
"""Seconds; a waiting replica asks for the lock every third of it."""


class Singleton:
    """A body that records which replica runs it, and runs until cancelled."""

    def __init__(self) -> None:
        self.running: list[str] = []
        self.starts: list[str] = []
        self.changed = anyio.Event()

    def body(self, name: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            self.running.append(name)
            self.starts.append(name)
            self.changed.set()
            try:
                await anyio.sleep_forever()
            finally:
                self.running.remove(name)
                self.changed.set()

        return run

    async def until(self, running: list[str]) -> None:
        await self.until_true(lambda: self.running == running)

    async def until_true(self, done: Callable[[], bool]) -> None:
        with anyio.fail_after(10 * LEASE):
            while not done():
                self.changed = anyio.Event()
                await self.changed.wait()


async def test_only_one_replica_runs_a_singleton_and_another_takes_over_when_it_stops(postgres_url: str) -> None:
    singleton = Singleton()
    async with started_replicas(postgres_url, LEASE) as [(a, _), (b, _)], anyio.create_task_group() as group:
        first = anyio.CancelScope()

        async def run_a() -> None:
            with first:
                await a.run_alone("imap watcher", singleton.body("a"))

        group.start_soon(run_a)
        await singleton.until(["a"])
        group.start_soon(b.run_alone, "imap watcher", singleton.body("b"))
        await anyio.sleep(LEASE)  # b asks for the lock three times meanwhile, and must not get it
        assert singleton.running == ["a"]
        first.cancel()
        await singleton.until(["b"])
        group.cancel_scope.cancel()


async def test_a_holder_whose_lock_connection_dies_stops_its_singleton_and_one_replica_runs_it_again(
    postgres_url: str,
) -> None:
    singleton = Singleton()
    async with started_replicas(postgres_url, LEASE) as [(a, a_store), (b, _)], anyio.create_task_group() as group:
        group.start_soon(a.run_alone, "telegram polling", singleton.body("a"))
        await singleton.until(["a"])
        group.start_soon(b.run_alone, "telegram polling", singleton.body("b"))
        # The holder's connection dies (its process was killed, its network went): the server drops the lock.
        async with a_store.transaction() as db:
            await db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid <> 0"
            )
        # a stopped its singleton when it found its connection gone; whichever replica locks first runs it again.
        await singleton.until_true(lambda: len(singleton.starts) == 2 and len(singleton.running) == 1)
        assert singleton.running == singleton.starts[1:]
        group.cancel_scope.cancel()


async def test_different_singletons_run_on_different_replicas_at_once(postgres_url: str) -> None:
    singleton = Singleton()
    async with started_replicas(postgres_url, LEASE) as [(a, _), (b, _)], anyio.create_task_group() as group:
        group.start_soon(a.run_alone, "imap one", singleton.body("a"))
        await singleton.until(["a"])
        group.start_soon(b.run_alone, "imap two", singleton.body("b"))
        await singleton.until(["a", "b"])
        group.cancel_scope.cancel()


async def test_telegram_long_polling_runs_on_one_replica_and_moves_when_it_stops(postgres_url: str) -> None:
    async with (
        started_replicas(postgres_url, LEASE) as [(a, _), (b, _)],
        fake_telegram() as seen_by_a,
        fake_telegram() as seen_by_b,
    ):
        # The same bot (one token variable), reached by each replica through its own fake, to see who polls.
        channels: list[TelegramChannel] = []
        for replica, fake in ((a, seen_by_a), (b, seen_by_b)):
            settings = TelegramSettings.model_validate({"api_url": fake.url, "subscriptions": [{"chat": -100123}]})
            channel = TelegramChannel(settings, bot=make_bot(TOKEN, fake.url, poll_seconds=1), poll_seconds=1)
            channel.leadership = replica
            channels.append(channel)
        try:
            async with anyio.create_task_group() as group:
                first = anyio.CancelScope()

                async def run_a() -> None:
                    with first:
                        await channels[0].run()

                group.start_soon(run_a)
                await seen_by_a.wait_for("getUpdates")
                group.start_soon(channels[1].run)
                await anyio.sleep(LEASE)  # b asks for the lock three times meanwhile
                assert seen_by_b.calls_to("getUpdates") == []
                first.cancel()
                await seen_by_b.wait_for("getUpdates", seconds=10 * LEASE)
                group.cancel_scope.cancel()
        finally:
            for channel in channels:
                await channel.close()
