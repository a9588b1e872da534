"""`/mcp` on `handraise serve`: the MCP tools over streamable HTTP, inside the program's aiohttp server.

The SDK's streamable-HTTP transport is an ASGI application (`StreamableHTTPSessionManager.handle_request`) and the
program is an aiohttp one. Rather than run a second server (another port, another token check) or move the program
to ASGI, a small bridge hands each aiohttp request to the session manager as one ASGI HTTP call: the body streams
in through `receive`, the response (JSON, or an SSE stream carrying progress) streams out through `send` into an
aiohttp `StreamResponse`. The manager's own task group runs for the program's lifetime (`running()`), so sessions
outlive the single request that opened them, as the transport expects. The bearer-token rule is the API's
(`bot.api.routes.bearer_auth` covers /mcp as it covers /v1).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from aiohttp import web
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from bot.api.routes import MAX_BODY_BYTES, error_response
from bot.mcp_server.tools import QuestionTools

PATH = "/mcp"
BODY_CHUNK = 64 * 1024
DISCONNECT_POLL_SECONDS = 0.5
LOOPBACK = ("127.0.0.1", "localhost", "::1")
STOP_GRACE_SECONDS = 5

Message = MutableMapping[str, Any]


class McpEndpoint:
    def __init__(self, tools: QuestionTools, *, host: str) -> None:
        self._tools = tools
        self._calls: set[_AsgiCall] = set()
        self._manager = StreamableHTTPSessionManager(app=tools.server(), security_settings=_security(host))

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", PATH, self.handle)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the session manager; leaving ends every MCP session, leaving the questions of waiting calls pending."""
        async with self._manager.run():
            try:
                yield
            finally:
                # Waiting tool calls answer "pending" with their handle; let those answers reach the clients before
                # the sessions close (the GET streams never end by themselves, so only POSTs are waited for).
                self._tools.stop()
                with anyio.move_on_after(STOP_GRACE_SECONDS):
                    for call in list(self._calls):
                        await call.finished.wait()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            # Refused before reading, as /v1 does; the SDK's own limit still guards a body sent without a length.
            return error_response(413, "TOO_LARGE", f"the request body is over {MAX_BODY_BYTES} bytes")
        bridge = _AsgiCall(request)
        if request.method == "POST":
            self._calls.add(bridge)
        try:
            await self._manager.handle_request(bridge.scope(), bridge.receive, bridge.send)
            return await bridge.finish()
        finally:
            self._calls.discard(bridge)


class _AsgiCall:
    """One aiohttp request as an ASGI `http` call."""

    def __init__(self, request: web.Request) -> None:
        self._request = request
        self._response: web.StreamResponse | None = None
        self._body_done = False
        self._gone = False
        self.finished = anyio.Event()

    def scope(self) -> dict[str, Any]:
        request = self._request
        peer = request.transport.get_extra_info("peername") if request.transport else None
        host, _, port = (request.host or "").rpartition(":")
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": f"{request.version.major}.{request.version.minor}",
            "method": request.method,
            "scheme": request.scheme,
            "path": request.path,
            "raw_path": request.raw_path.split("?", 1)[0].encode(),
            "query_string": request.query_string.encode(),
            "root_path": "",
            "headers": [(name.lower(), value) for name, value in request.raw_headers],
            "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
            "server": (host, int(port)) if port.isdigit() else None,
        }

    async def receive(self) -> Message:
        if not self._body_done:
            chunk = await self._request.content.read(BODY_CHUNK)
            self._body_done = self._request.content.at_eof()
            return {"type": "http.request", "body": chunk, "more_body": not self._body_done}
        # After the body, ASGI's receive() reports the client going away; aiohttp has no event for it, so look.
        while not self.finished.is_set():
            transport = self._request.transport
            if transport is None or transport.is_closing():
                break
            with anyio.move_on_after(DISCONNECT_POLL_SECONDS):
                await self.finished.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", []):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await response.prepare(self._request)
            self._response = response
        elif message["type"] == "http.response.body" and self._response is not None and not self._gone:
            body = message.get("body", b"")
            try:
                if body:
                    await self._response.write(body)
                if not message.get("more_body", False):
                    await self._response.write_eof()
                    self.finished.set()
            except ConnectionResetError:
                # Clients drop a result's stream as soon as they have read it, and the GET stream when they leave.
                # Like uvicorn, drop what is sent after that: raising makes the SDK log each one as an error, and
                # `receive()` now reports the disconnect, which ends the response.
                self._gone = True
                self.finished.set()

    async def finish(self) -> web.StreamResponse:
        self.finished.set()
        if self._response is None:
            return web.json_response({"error": {"code": "MCP_NO_RESPONSE", "message": "no response"}}, status=500)
        return self._response


def _security(host: str) -> TransportSecuritySettings:
    """On loopback, refuse other Host and Origin headers (DNS rebinding); elsewhere the API token guards /mcp."""
    if host not in LOOPBACK:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{allowed}" for allowed in hosts],
    )
