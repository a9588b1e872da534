"""Which `serve` process runs what, when several share one store: each pending question is owned by one live
replica, and singletons (a mailbox watcher, Telegram long polling) run on one replica at a time.

`Replica` is the interface the program and the channels use. `SingleProcess` is the SQLite default: the only
process, so it owns every question and always leads, with no heartbeat; it behaves exactly as one process did before
replicas existed. `bot.replicas.postgres` coordinates replicas on PostgreSQL.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Protocol

import anyio

from bot.errors import BotErrorCode
from bot.store.errors import StoreError
from bot.store.interface import AsyncStore
from bot.store.records import QuestionRecord

if TYPE_CHECKING:
    pass

Claimed = Callable[[list[QuestionRecord]], Awaitable[None]]
"""Called with pending questions this replica has just taken over (from a dead replica, or a previous run)."""

Held = Callable[[], Collection[str]]
"""The ids of the questions this replica runs now: checked when its lease ran out, before it takes the lease again."""


class LeaseLost(StoreError):
    """This replica's lease ran out before it could renew it and another replica took some of its questions
    meanwhile: it stops rather than run them twice."""

    code = BotErrorCode.LEASE_LOST


def new_replica_id() -> str:
    """A short random name for one `serve` process, e.g. `r-3f9a1c`; logged at start and stored as question owner."""
    return f"r-{secrets.token_hex(3)}"


class Replica(Protocol):
    @property
    def id(self) -> str: ...

    async def start(self) -> None:
        """Join: from now on the questions this process creates are this replica's."""
        ...

    async def claim(self) -> list[QuestionRecord]:
        """Take over the pending questions nobody alive runs; returns them (the caller resumes them)."""
        ...

    async def run(self, claimed: Claimed, held: Held) -> None:
        """Keep this replica alive and take over orphans as they appear, until cancelled. Raises LeaseLost when its
        lease ran out and one of the questions in `held()` was taken meanwhile."""
        ...

    async def run_alone(self, name: str, body: Callable[[], Awaitable[None]]) -> None:
        """Run `body` while this replica is the one replica running `name`; wait while another one is, and take over
        when it goes. Until cancelled."""
        ...

    async def close(self) -> None:
        """Stopping cleanly: let another replica take this one's questions at once rather than after its lease."""
        ...


class SingleProcess:
    """The one process on a SQLite store: owns every pending question (claimed once, at start) and always leads."""

    def __init__(self, store: AsyncStore, replica_id: str | None = None) -> None:
        self._store = store
        self._id = replica_id or new_replica_id()
        self._claimed = False

    @property
    def id(self) -> str:
        return self._id

    async def start(self) -> None:
        return None

    async def claim(self) -> list[QuestionRecord]:
        if self._claimed:
            return []
        self._claimed = True
        return await self._store.list_questions(status="pending", newest_first=False, limit=1_000_000)

    async def run(self, claimed: Claimed, held: Held) -> None:
        await anyio.sleep_forever()

    async def run_alone(self, name: str, body: Callable[[], Awaitable[None]]) -> None:
        await body()

    async def close(self) -> None:
        return None


class Leadership(Protocol):
    """What a channel needs of its replica: run a singleton on one replica at a time."""

    async def run_alone(self, name: str, body: Callable[[], Awaitable[None]]) -> None: ...


class Alone:
    """The leadership of a process that is the only one: run at once."""

    async def run_alone(self, name: str, body: Callable[[], Awaitable[None]]) -> None:
        await body()
