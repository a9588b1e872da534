"""`serve`'s own listener: out of files, connections stay queued in the kernel (on uvloop too, whose libuv would
accept and reset them) and are served once files are freed; every form of `[server] listen` is bound."""

from __future__ import annotations

import asyncio
import errno
import os
import resource
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
from aiohttp import web

from bot.api.accepting import AcceptingSite
from bot.config import parse_config

from .program_rig import program

pytestmark = pytest.mark.anyio

LOOPS = [
    pytest.param(("asyncio", {"use_uvloop": False}), id="asyncio"),
    pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop"),
]


@asynccontextmanager
async def hello_site() -> AsyncIterator[AcceptingSite]:
    async def hello(_: web.Request) -> web.Response:
        return web.Response(text="hello")

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = AcceptingSite(runner, "127.0.0.1", 0, backlog=16)
    try:
        await site.start()
        yield site
    finally:
        await runner.cleanup()


@contextmanager
def files_used_up() -> Iterator[None]:
    """Every file descriptor this process may open taken (the limit lowered to those open, the gaps filled)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(int(fd) for fd in os.listdir("/proc/self/fd")) + 1, hard))
    held: list[int] = []
    try:
        while True:
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as error:
                assert error.errno == errno.EMFILE
                break
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize("anyio_backend", LOOPS)
async def test_out_of_files_a_connection_waits_in_the_queue_and_is_served_once_files_are_freed(
    anyio_backend: Any,
) -> None:
    loop = asyncio.get_running_loop()
    async with hello_site() as site:
        with socket.socket() as client:
            client.setblocking(False)
            with anyio.fail_after(10):
                with files_used_up():
                    await loop.sock_connect(client, site.addresses[0])
                    await loop.sock_sendall(client, b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                    while not site.paused:
                        await anyio.sleep(0.01)
                reply = b""
                while chunk := await loop.sock_recv(client, 4096):
                    reply += chunk
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n") and reply.endswith(b"hello")


@pytest.mark.parametrize("anyio_backend", LOOPS)
@pytest.mark.parametrize("listen", ["[::1]:0", "localhost:0"])
async def test_serve_listens_on_an_ipv6_address_and_on_a_host_name(
    tmp_path: Path, listen: str, anyio_backend: Any
) -> None:
    config = parse_config(f'[server]\nlisten = "{listen}"\n[store]\npath = "{tmp_path / "handraise.db"}"\n')
    async with (
        program(config) as (running, _),
        aiohttp.ClientSession() as session,
        session.get(f"{running.base_url}/healthz") as health,
    ):
        assert health.status == 200
