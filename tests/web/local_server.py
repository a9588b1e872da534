"""A test double's aiohttp application on 127.0.0.1 and a free port, as the OpenID provider and the push service
both need: the port is known only once the server listens, so the origin is handed back then."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web
from aiohttp.test_utils import TestServer


@asynccontextmanager
async def app_served(app: web.Application) -> AsyncIterator[str]:
    """Serve `app` until the block ends; yields its origin, `http://127.0.0.1:<port>`."""
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()
