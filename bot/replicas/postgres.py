"""Replicas on PostgreSQL: a lease per `serve` process, question ownership, orphan claiming, singleton leadership.

Every replica has a row in `replicas` whose `alive_until` it pushes forward every third of the lease. Times are the
database's (`now()`), so replicas' clocks need not agree. A renewal that finds the lease already run out (the
database was away longer than a lease, or this process stalled) takes it again when nobody took any of the questions
this replica runs meanwhile, and stops the replica (LeaseLost) otherwise: running a question twice is worse than
stopping. Every half lease (and at start) a live replica claims, in batches and without waiting on the others (`FOR
UPDATE SKIP LOCKED`), the pending questions whose owner is not alive; after its own lease ran out it waits a lease
before claiming, so replicas back from the same outage take their own leases again first. Claims and lease re-takes
exclude each other with a transaction advisory lock (shared by claims): a claim's statement that judged an owner dead
cannot still be running when that owner checks its questions. Singletons run under a session advisory lock on a
connection of their own: the lock goes with the connection when its holder dies.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import anyio
import psycopg
from psycopg import AsyncConnection

from bot.replicas.replica import Claimed, Held, LeaseLost, new_replica_id
from bot.store.errors import StoreUnavailable
from bot.store.postgres.schema import CLAIM_LOCK, LEADER_LOCKS
from bot.store.postgres.store import PostgresStore
from bot.store.records import QuestionRecord

log = logging.getLogger(__name__)

CLAIM_BATCH = 200
"""Questions claimed per statement: a dead replica's thousands are taken over in short transactions."""

_CLAIM = """
UPDATE questions SET owner = %(me)s WHERE id IN (
    SELECT q.id FROM questions q
    WHERE q.status = 'pending' AND (q.owner IS NULL OR NOT EXISTS (
        SELECT 1 FROM replicas r WHERE r.id = q.owner AND r.alive_until > now()))
    AND EXISTS (SELECT 1 FROM replicas r WHERE r.id = %(me)s AND r.alive_until > now())
    ORDER BY q.created_at
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
) RETURNING record_json
"""


class PostgresReplica:
    """This process as one of several replicas on `store`. `await start()` before anything else."""

    def __init__(self, store: PostgresStore, lease_seconds: float, replica_id: str | None = None) -> None:
        self._store = store
        self._id = replica_id or new_replica_id()
        self.lease = lease_seconds
        self.heartbeat = lease_seconds / 3
        """Seconds between renewals; also how often a waiting replica asks for a singleton's lock."""
        self.claim_every = lease_seconds / 2
        self._claim_after = 0.0
        """Event-loop time before which the orphan loop does not claim (a lease after this replica's own ran out)."""

    @property
    def id(self) -> str:
        return self._id

    async def start(self) -> None:
        """Register with a fresh lease; from now on the questions the store creates are this replica's."""
        async with self._store.transaction() as db:
            await db.execute(
                "INSERT INTO replicas (id, started_at, alive_until) VALUES (%s, now(), now() + %s * interval '1 s') "
                "ON CONFLICT (id) DO UPDATE SET started_at = now(), alive_until = excluded.alive_until",
                (self._id, self.lease),
            )
        self._store.owner = self._id

    async def claim(self) -> list[QuestionRecord]:
        return await self._claim(patient=False)

    async def claim_when_due(self) -> list[QuestionRecord]:
        """`claim`, as the orphan loop does it: nothing within a lease of this replica taking its own lease again,
        judged once the claim holds its lock (a claim that waited for the store or for a re-take sees it)."""
        return await self._claim(patient=True)

    async def _claim(self, *, patient: bool) -> list[QuestionRecord]:
        claimed: list[QuestionRecord] = []
        while True:
            async with self._store.transaction() as db:
                # Its own statement, so the claim's snapshot comes after any lease re-take it waited for.
                await db.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", CLAIM_LOCK)
                if patient and anyio.current_time() < self._claim_after:
                    # This replica took its own lease again while the claim waited (for the store, for the lock):
                    # the others back from the same outage get a lease to do the same.
                    return claimed
                cursor = await db.execute(_CLAIM, {"me": self._id, "batch": CLAIM_BATCH})
                rows = await cursor.fetchall()
            claimed += [QuestionRecord.model_validate_json(row[0]) for row in rows]
            if len(rows) < CLAIM_BATCH:
                return claimed

    async def renew(self, held: Collection[str]) -> None:
        """Push the lease forward. When it had already run out, take it again if every question in `held` (the ones
        this replica runs) is still this replica's; raises LeaseLost when one was taken meanwhile."""
        async with self._store.transaction() as db:
            cursor = await db.execute(
                "UPDATE replicas SET alive_until = now() + %s * interval '1 s' WHERE id = %s AND alive_until > now()",
                (self.lease, self._id),
            )
            if cursor.rowcount == 1:
                return
            # No claim runs while this is held, and every claim committed before shows in the owner column.
            await db.execute("SELECT pg_advisory_xact_lock(%s, %s)", CLAIM_LOCK)
            cursor = await db.execute(
                "SELECT count(*) FROM questions WHERE id = ANY(%s) AND owner IS DISTINCT FROM %s",
                (list(held), self._id),
            )
            row = await cursor.fetchone()
            taken = row[0] if row is not None else 0
            if not taken:
                # Set before the commit: a claim of this replica waiting for the lock sees it once it gets the lock.
                self._claim_after = anyio.current_time() + self.lease
                await db.execute(
                    "UPDATE replicas SET alive_until = now() + %s * interval '1 s' WHERE id = %s",
                    (self.lease, self._id),
                )
        if taken:
            raise LeaseLost(
                f"replica {self._id} could not renew its lease within {self.lease:g} s ([store] lease_seconds) and "
                f"another replica took {taken} of its questions meanwhile; it stops. Start it again (a longer lease "
                "helps when the database or this machine stalls)"
            )
        log.warning(
            "replica %s: its lease ran out (the database was away or this process stalled for over %g s); nobody "
            "took its questions; carrying on",
            self._id,
            self.lease,
        )

    async def run(self, claimed: Claimed, held: Held) -> None:
        lost: list[LeaseLost] = []
        async with anyio.create_task_group() as group:

            async def keep_alive() -> None:
                try:
                    await self._keep_alive(held)
                except LeaseLost as error:
                    lost.append(error)  # raised as itself below, not inside an exception group
                    group.cancel_scope.cancel()

            group.start_soon(keep_alive)
            await self._claim_orphans(claimed)
        if lost:
            raise lost[0]

    async def _claim_orphans(self, claimed: Claimed) -> None:
        while True:
            await anyio.sleep(self.claim_every)
            if anyio.current_time() < self._claim_after:
                continue
            try:
                found = await self.claim_when_due()
            except StoreUnavailable as down:
                log.warning("replica %s cannot look for orphaned questions: %s", self._id, down.message)
                continue
            if found:
                log.info("replica %s took over %d pending question(s)", self._id, len(found))
                await claimed(found)

    async def _keep_alive(self, held: Held) -> None:
        while True:
            await anyio.sleep(self.heartbeat)
            try:
                await self.renew(held())
            except StoreUnavailable as down:
                # The lease may still hold: the next renewal tells. LeaseLost is not caught.
                log.warning("replica %s cannot renew its lease: %s", self._id, down.message)

    async def run_alone(self, name: str, body: Callable[[], Awaitable[None]]) -> None:
        key = _lock_key(name)
        announced = False
        while True:
            connection = await self._locked_connection(key)
            if connection is None:
                if not announced:
                    log.info("replica %s: %s runs on another replica; waiting to take over", self._id, name)
                    announced = True
                await anyio.sleep(self.heartbeat)
                continue
            log.info("replica %s runs %s", self._id, name)
            announced = False
            lost = False
            try:
                async with anyio.create_task_group() as group:

                    async def watch(connection: AsyncConnection[Any] = connection) -> None:
                        nonlocal lost
                        await self._hold(connection)
                        lost = True
                        group.cancel_scope.cancel()

                    group.start_soon(watch)
                    await body()
                    group.cancel_scope.cancel()
            finally:
                with anyio.CancelScope(shield=True):
                    await connection.close()
            if not lost:
                return
            # The lock's connection broke: another replica may hold it now, so the singleton stopped here.
            log.warning("replica %s lost the lock for %s; trying to take it again", self._id, name)

    async def _locked_connection(self, key: int) -> AsyncConnection[Any] | None:
        """A dedicated connection holding the lock `key`, or None while another replica holds it (or the database is
        away)."""
        try:
            connection = await self._store.dedicated_connection()
        except StoreUnavailable:
            return None
        try:
            cursor = await connection.execute("SELECT pg_try_advisory_lock(%s, %s)", (LEADER_LOCKS, key))
            row = await cursor.fetchone()
        except psycopg.Error:
            row = None
        except BaseException:
            # Cancelled while asking (the program stopping): the connection is nobody's, so it is closed here.
            with anyio.CancelScope(shield=True):
                await connection.close()
            raise
        if row is None or not row[0]:
            await connection.close()
            return None
        return connection

    async def _hold(self, connection: AsyncConnection[Any]) -> None:
        """Return when `connection` (and so the lock) is gone; checked every heartbeat."""
        while True:
            await anyio.sleep(self.heartbeat)
            try:
                await connection.execute("SELECT 1")
            except psycopg.Error:
                return

    async def close(self) -> None:
        """Give the questions up at once: end the lease, so another replica claims them on its next look."""
        try:
            async with self._store.transaction() as db:
                await db.execute("UPDATE replicas SET alive_until = now() WHERE id = %s", (self._id,))
        except StoreUnavailable:
            pass  # they are taken over when the lease runs out


def _lock_key(name: str) -> int:
    """The second key of the advisory lock for the singleton `name`: a stable signed 32-bit hash."""
    value = zlib.crc32(name.encode())
    return value - (1 << 32) if value >= 1 << 31 else value
