"""A real webhook receiver for the tests: an aiohttp server on port 0 that checks every request's signature as the
docs tell receivers to, keeps what it got, and answers with the statuses a test lines up (or holds a request open)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from aiohttp import web

from bot.webhooks.signing import DELIVERY_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, verify_signature

SECRET = "whsec-ünïcode-and-more"
"""Non-ASCII on purpose: the secret is keyed by its UTF-8 bytes."""


@dataclass
class Received:
    delivery: str
    timestamp: str
    signature: str
    content_type: str
    raw: bytes
    body: dict[str, Any]
    signed: bool


@dataclass
class Receiver:
    url: str = ""
    got: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    """Answers for the next requests, in order; 200 once they run out."""
    hold: bool = False
    """Hold the next request open (answer nothing) until `release`."""
    arrived: anyio.Event = field(default_factory=anyio.Event)
    _released: anyio.Event = field(default_factory=anyio.Event)

    def release(self) -> None:
        self._released.set()

    async def wait_for(self, count: int, seconds: float = 30) -> None:
        with anyio.fail_after(seconds):
            while len(self.got) < count:
                await anyio.sleep(0.02)

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        headers = request.headers
        timestamp = headers.get(TIMESTAMP_HEADER, "")
        signature = headers.get(SIGNATURE_HEADER, "")
        got = Received(
            delivery=headers.get(DELIVERY_HEADER, ""),
            timestamp=timestamp,
            signature=signature,
            content_type=headers.get("Content-Type", ""),
            raw=raw,
            body=json.loads(raw),
            signed=verify_signature(SECRET, timestamp, raw, signature),
        )
        self.got.append(got)
        self.arrived.set()
        if self.hold:
            self.hold = False
            await self._released.wait()
        status = self.statuses.pop(0) if self.statuses else 200
        return web.Response(status=status, text="ok" if status < 300 else "no")


@asynccontextmanager
async def receiving() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/hook", receiver.handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    receiver.url = f"http://127.0.0.1:{port}/hook"
    try:
        yield receiver
    finally:
        receiver.release()
        await runner.cleanup()
