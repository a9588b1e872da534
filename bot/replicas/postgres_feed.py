"""The change feed on PostgreSQL: LISTEN for the triggers' NOTIFY, and catch up by `changed_at`.

NOTIFY is sent at commit with the question's id (by the triggers of the migration adding `changed_at`), and lost for
a listener not connected then. So the feed listens on a connection of its own and reconnects with backoff; on every
(re)connect and every `catch_up_every` seconds it reads the ids changed since the last catch-up (reaching back
`overlap` seconds, as commits land out of order). Ids pile up while a read runs and are read together next, up to
BATCH per query: a burst of a thousand changes is a few reads, not a thousand.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from itertools import islice

import anyio
import psycopg
from anyio.abc import TaskStatus

from bot.questions.ledger import Ledger
from bot.questions.ledger_feed import Stored
from bot.replicas.feed import FeedTiming
from bot.store.errors import StoreError
from bot.store.postgres.schema import restore
from bot.store.postgres.store import PostgresStore

log = logging.getLogger(__name__)

CHANNEL = "handraise_changes"
BATCH = 1000
"""Questions read per query."""
GATHER_SECONDS = 0.002
"""How long a wake-up waits for the notifications of a burst before reading: a little latency, far fewer reads."""


class PostgresChangeFeed:
    def __init__(self, store: PostgresStore, ledger: Ledger, timing: FeedTiming) -> None:
        self.store = store
        self.ledger = ledger
        self.timing = timing
        self._ids: set[str] = set()
        """Changed, not yet read."""
        self._wake = anyio.Event()
        self._catch_up = True
        self._mark: datetime | None = None
        """The database's clock at the last catch-up: the next reaches back from it."""
        self._read: dict[str, datetime] = {}
        """When each question read lately had changed, so that a catch-up does not read it again."""
        self.reads = 0
        """Queries that read changed questions (for tests: bursts are read together)."""

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self.ledger.following = True
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._read_changes)
                await self._listen(task_status)
        finally:
            self.ledger.following = False

    async def _listen(self, task_status: TaskStatus[None]) -> None:
        delay, lost, started = self.timing.retry_min, False, False
        while True:
            try:
                connection = await self.store.listener()
                # Not `async with connection`: on a cancellation its exit awaits a rollback first, which the
                # cancellation interrupts, and the connection would be left open for the garbage collector.
                try:
                    await connection.execute(f"LISTEN {CHANNEL}")
                    delay = self.timing.retry_min
                    if lost:
                        log.info("the change feed is back on %s; catching up", self.store.description)
                        lost = False
                    self._due()  # whatever changed while nobody listened
                    if not started:
                        task_status.started()
                        started = True
                    async for note in connection.notifies():
                        if note.payload:
                            self._ids.add(restore(note.payload))
                            self._wake.set()
                        else:
                            self._due()  # an id too long for a payload
                finally:
                    await connection.close()
            except (StoreError, psycopg.Error) as error:
                if not lost:
                    log.warning("the change feed lost %s (%s); reconnecting", self.store.description, error)
                    lost = True
            if not started:
                task_status.started()  # the program starts anyway; the feed keeps trying
                started = True
            await anyio.sleep(delay)
            delay = min(delay * 2, self.timing.retry_max)

    def _due(self) -> None:
        self._catch_up = True
        self._wake.set()

    async def _read_changes(self) -> None:
        while True:
            with anyio.move_on_after(self.timing.catch_up_every) as idle:
                await self._wake.wait()
            if not idle.cancelled_caught:
                await anyio.sleep(GATHER_SECONDS)  # notifications already on their way join this read
            self._wake = anyio.Event()
            if idle.cancelled_caught:
                self._catch_up = True
            ids, self._ids = self._ids, set()
            try:
                if self._catch_up:
                    self._catch_up = False
                    ids |= await self._changed_lately()
                await self._refresh(ids)
            except StoreError as error:
                # Read again once the database answers: keep what was not read, and catch up then.
                log.debug("the change feed could not read: %s", error)
                self._ids |= ids
                self._catch_up = True
                await anyio.sleep(self.timing.retry_min)

    async def _changed_lately(self) -> set[str]:
        since = self._mark - timedelta(seconds=self.timing.overlap) if self._mark is not None else None
        now, changed = await self.store.changed_since(since)
        self._mark = now
        if since is not None:
            self._read = {id: at for id, at in self._read.items() if at > since}
        return {id for id, at in changed if self._read.get(id) != at}

    async def _refresh(self, ids: set[str]) -> None:
        remaining = iter(ids)
        while batch := list(islice(remaining, BATCH)):
            self.reads += 1
            found = await self.store.changed_questions(batch)
            for record, changed_at, _ in found:
                self._read[record.id] = changed_at
            await self.ledger.refresh(Stored(record, channels) for record, _, channels in found)
