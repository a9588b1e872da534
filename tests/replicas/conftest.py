"""Fixtures of the real-process replica tests: reading what the replicas left in their shared PostgreSQL database."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from tests.postgres_server import PostgresServer

Query = Callable[..., Any]


@pytest.fixture
def database(postgres_server: PostgresServer, postgres_url: str) -> Query:
    """`await database(sql, *params)`: the rows of a query on the test's database, as its superuser sees them."""
    name = postgres_url.rsplit("/", 1)[1]

    def run(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with postgres_server.admin(name) as db:
            return db.execute(sql.encode(), params).fetchall()

    async def query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return await anyio.to_thread.run_sync(run, sql, params)

    return query
