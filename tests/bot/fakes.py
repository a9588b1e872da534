"""A channel that records what the shared base asks of it, for testing the base without any network."""

from __future__ import annotations

from pathlib import Path

import anyio
from pydantic import BaseModel

from bot.channels.base import Channel, DeliveryError, Sent
from bot.questions.ledger import Ledger
from bot.questions.routing import Route
from bot.store.interface import AsyncStore
from bot.store.records import Delivery, QuestionRecord
from bot.store.sqlite.async_store import SqliteStore
from bot.store.sqlite.store import Store
from tests.fake_clock import FakeClock


class RecordedRef(BaseModel):
    route: int | None = None


class RecordingChannel(Channel):
    def __init__(self, name: str, *, fail_with: str | None = None) -> None:
        super().__init__()
        self.name = name  # type: ignore[misc]
        self.fail_with = fail_with
        self.delivered: list[tuple[QuestionRecord, Route]] = []
        self.closed: list[QuestionRecord] = []
        self.delivery_seen = anyio.Event()

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        if self.fail_with is not None:
            raise DeliveryError(self.fail_with)
        self.delivered.append((question, route))
        self.delivery_seen.set()
        return Sent(key=f"{self.name}:{question.id}", ref=RecordedRef(route=route.index))

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        self.closed.append(question)


def make_ledger(tmp_path: Path) -> tuple[Ledger, FakeClock]:
    clock = FakeClock()
    return Ledger(SqliteStore.open(tmp_path / "handraise.db"), clock), clock


def sync_store(store: AsyncStore) -> Store:
    """The SQLite file under a test's store, read synchronously: for helpers and `until` predicates that cannot
    await."""
    assert isinstance(store, SqliteStore), f"a test reads {store.description} synchronously, but it is no SQLite store"
    return store.sync
