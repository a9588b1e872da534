"""`/mcp` mounted at once but loaded on its first request: the MCP SDK takes about a second to import, which a
`serve` whose agents only use /v1 or the hooks should not pay before it answers `/healthz`.

The first request imports the SDK in a worker thread (the event loop keeps serving meanwhile), builds the real
endpoint and starts its session manager in a task of its own that lives until the program stops; later requests go
straight to it.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING

from aiohttp import web

from bot.mcp_server.timing import Timing

if TYPE_CHECKING:
    from bot.mcp_server.http import McpEndpoint
    from bot.mcp_server.relay import QuestionRelay

PATH = "/mcp"


class McpOnFirstUse:
    """The program's /mcp: the same routes and lifetime as `McpEndpoint`, without its imports until they are needed."""

    def __init__(self, relay: Callable[[], QuestionRelay], *, host: str, timing: Timing | None = None) -> None:
        self._relay = relay
        self._listen_host = host
        self._timing = timing or Timing()
        self._endpoint: McpEndpoint | None = None
        self._loading: asyncio.Task[McpEndpoint | None] | None = None
        self._host_task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._closed = False

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", PATH, self._handle)

    @property
    def loaded(self) -> bool:
        return self._endpoint is not None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve /mcp while inside; leaving stops the endpoint if a request ever loaded it."""
        try:
            yield
        finally:
            self._closed = True
            self._stop.set()
            if self._loading is not None:
                with suppress(Exception, asyncio.CancelledError):
                    await self._loading  # the import in its thread cannot be stopped: let it end
            if self._host_task is not None:
                with suppress(asyncio.CancelledError):
                    await self._host_task

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        endpoint = None if self._closed else self._endpoint or await self._load()
        if endpoint is None:
            return web.json_response(
                {"error": {"code": "SHUTTING_DOWN", "message": "the server is stopping"}}, status=503
            )
        return await endpoint.handle(request)

    async def _load(self) -> McpEndpoint | None:
        """The endpoint, loaded once for every request that waits on it; a request that goes away does not cancel
        the load the others wait on, and a load that failed is tried again by the next request."""
        if self._loading is None:
            self._loading = asyncio.get_running_loop().create_task(self._start(), name="mcp-load")
            self._loading.add_done_callback(self._forget_failed_load)
        return await asyncio.shield(self._loading)

    def _forget_failed_load(self, task: asyncio.Task[McpEndpoint | None]) -> None:
        if (task.cancelled() or task.exception() is not None) and self._loading is task:
            self._loading = None

    async def _start(self) -> McpEndpoint | None:
        if self._closed:
            return None
        endpoint = await asyncio.to_thread(self._build)
        if self._closed:
            return None
        ready = asyncio.Event()
        self._host_task = asyncio.create_task(self._keep_running(endpoint, ready), name="mcp-endpoint")
        await ready.wait()
        if (host := self._host_task).done():
            self._host_task = None
            host.result()  # the session manager did not start: raise why, and let the next request retry
        if not self._closed:
            self._endpoint = endpoint
        return self._endpoint

    def _build(self) -> McpEndpoint:
        http = importlib.import_module("bot.mcp_server.http")
        tools = importlib.import_module("bot.mcp_server.tools")
        return http.McpEndpoint(tools.QuestionTools(self._relay(), timing=self._timing), host=self._listen_host)

    async def _keep_running(self, endpoint: McpEndpoint, ready: asyncio.Event) -> None:
        """Enter and leave the endpoint's lifetime in one task, as its task group requires."""
        try:
            async with endpoint.running():
                ready.set()
                await self._stop.wait()
        finally:
            ready.set()
