from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests.postgres_server import PostgresServer, server_binaries


@pytest.fixture
def anyio_backend() -> str:
    """The bot's libraries (aiohttp, slack-sdk, aiosmtplib, aioimaplib) are asyncio-only."""
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL for the whole session (about half a second to create and start); stopped at the end."""
    server = PostgresServer(server_binaries())
    server.start()
    try:
        server.set_up_role()
        yield server
    finally:
        with contextlib.suppress(RuntimeError):
            server.stop()
        server.remove()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh empty database for one test (about 20 ms to create), as the URL handraise is given; dropped after."""
    if not postgres_server.running:
        postgres_server.start()  # a test that stopped it and failed before starting it again
    name = postgres_server.create_database()
    yield postgres_server.url(name)
    if not postgres_server.running:
        postgres_server.start()
    postgres_server.drop_database(name)
