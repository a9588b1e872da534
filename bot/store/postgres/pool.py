"""The store's connections to PostgreSQL: a pool that replaces broken connections (a database that went away and
came back is used again without a restart), connections of their own for LISTEN and for session locks, and the
store's errors for whatever psycopg raises: StoreUnavailable within the configured timeout while the server is away,
messages that name `host:port/db` and never the password.
"""

from __future__ import annotations

import select
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Self

import psycopg
from psycopg import AsyncConnection, AsyncCursor
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

from bot.store.errors import StoreError, StoreUnavailable
from bot.store.postgres.errors import describe, failure, unreachable
from bot.store.postgres.schema import SCHEMA_VERSION, current_version, migrate

DEFAULT_TIMEOUT = 5.0
"""Seconds a call waits for a connection (and a new connection for the server) before StoreUnavailable."""


class PostgresConnections:
    """Where `PostgresStore` gets its connections, and its life cycle: open (connect and migrate), close."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        target: str,
        secret: str,
        timeout: float,
        url: str,
        options: dict[str, Any],
    ) -> None:
        """Use `open`; this only wraps a pool on a migrated database (`url` and `options` are the pool's, for
        `listener`)."""
        self._url = url
        self._options = options
        self._pool = pool
        self._target = target
        self._secret = secret
        self._timeout = timeout

    @classmethod
    async def open(
        cls, url: str, *, wait_seconds: float = DEFAULT_TIMEOUT, max_connections: int = 10, name: str = "handraise"
    ) -> Self:
        """Connect to the database at `url`, migrate it, and return the store.

        Raises StoreUnavailable when the server cannot be reached or refuses the login or the database (the message
        names `host:port/dbname` and what to do, never the password), and StoreError for an invalid URL, a database
        written by a newer handraise or one holding another application's tables.
        """
        target = describe(url)
        secret = str(conninfo_to_dict(url).get("password") or "")
        connect_timeout = max(2, round(wait_seconds))  # libpq counts whole seconds, at least two
        options: dict[str, Any] = {"autocommit": True, "connect_timeout": connect_timeout}
        try:
            first = await AsyncConnection.connect(url, **options)
        except psycopg.Error as error:
            raise StoreUnavailable(unreachable(target, error, secret)) from None
        try:
            await migrate(first, target)
        except psycopg.Error as error:
            raise failure(target, error, secret) from None
        finally:
            await first.close()
        pool = AsyncConnectionPool(
            url,
            kwargs=options,
            min_size=1,
            max_size=max_connections,
            open=False,
            # A connection the server dropped (a restart) is found out before it is handed out, not by a failed call.
            check=_check_if_spoken_to,
            timeout=wait_seconds,
            # Give up a failing reconnection soon: the next call starts a fresh one at once, so a database that is
            # back is used within a call, not after an exponential backoff of minutes.
            reconnect_timeout=2 * wait_seconds,
            name=name,
        )
        try:
            await pool.open(wait=True, timeout=wait_seconds)
        except PoolTimeout:
            await pool.close()
            raise StoreUnavailable(f"{target} accepted one connection but not the pool's; try again") from None
        return cls(pool, target, secret, wait_seconds, url, options)

    @property
    def description(self) -> str:
        return self._target

    async def schema_version(self) -> int:
        async with self._connection() as db:
            return await current_version(db) or 0

    async def close(self) -> None:
        """Close the pool. Idempotent; any later call raises StoreError."""
        await self._pool.close()

    async def durable(self) -> None:
        """At once: a PostgreSQL COMMIT is durable when it returns (synchronous_commit, the server's default)."""

    async def integrity_ok(self) -> bool:
        """Whether the database answers and is at the schema this handraise knows."""
        return await self.schema_version() == SCHEMA_VERSION

    # -- the change feed's connection (bot/replicas/postgres_feed.py) --------------------------------------------------

    async def listener(self) -> AsyncConnection[Any]:
        """A connection of its own, outside the pool, for LISTEN (one waiting for notifications can run nothing else).

        Raises StoreUnavailable when the server cannot be reached.
        """
        try:
            # TCP keepalives: a listener that only waits would not otherwise notice a server that vanished silently
            # (a network cut); this one finds out within about 25 s and reconnects. The catch-up covers the gap.
            keepalives: dict[str, Any] = {
                "keepalives": 1,
                "keepalives_idle": 10,
                "keepalives_interval": 5,
                "keepalives_count": 3,
            }
            return await AsyncConnection.connect(self._url, **(self._options | keepalives))
        except psycopg.Error as error:
            raise StoreUnavailable(unreachable(self._target, error, self._secret)) from None

    # -- for replicas (`bot.replicas.postgres`) ------------------------------------------------------------------------

    def transaction(self) -> AbstractAsyncContextManager[AsyncCursor[Any]]:
        """One transaction on a pooled connection, with the store's errors (StoreUnavailable while it is away)."""
        return self._transaction()

    async def dedicated_connection(self) -> AsyncConnection[Any]:
        """A new autocommit connection outside the pool, for what lives as long as a connection (session advisory
        locks). Raises StoreUnavailable when the server cannot be reached."""
        try:
            return await AsyncConnection.connect(
                self._url, autocommit=True, connect_timeout=max(2, round(self._timeout))
            )
        except psycopg.Error as error:
            raise StoreUnavailable(unreachable(self._target, error, self._secret)) from None

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection in autocommit, for one-statement reads."""
        try:
            async with self._pool.connection() as db:
                yield db
        except PoolTimeout:
            raise StoreUnavailable(
                f"{self._target} did not give handraise a connection within {self._timeout:g} s; nothing was "
                "recorded. Check that PostgreSQL is running and reachable: handraise carries on once it is"
            ) from None
        except PoolClosed:
            raise StoreError(f"the handraise store at {self._target} is closed") from None
        except psycopg.Error as error:
            raise failure(self._target, error, self._secret) from None

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncCursor[Any]]:
        """One transaction, committed when the block ends and rolled back on any error."""
        async with self._connection() as db, db.transaction(), db.cursor() as cursor:
            yield cursor


async def _check_if_spoken_to(connection: AsyncConnection[Any]) -> None:
    """The pool's check before it hands out a connection, without a round trip for a healthy one.

    An idle pooled connection has nothing to read: a server that ended the session (a restart, a terminated backend)
    has sent its goodbye and closed the socket, which makes it readable. Only then is the connection tried with an
    empty query, which fails and makes the pool replace it. The pool's own check, an empty query every time, cost a
    round trip per store call: 6 of an ask's 24 round trips and 6 of an answer's 16 (bench/RESULTS.md).
    """
    readable = select.poll()
    readable.register(connection.fileno(), select.POLLIN)
    if readable.poll(0):
        await AsyncConnectionPool.check_connection(connection)
