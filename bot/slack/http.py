"""Slack's HTTP requests on the bot's aiohttp server: two translation functions and the handler holding the app.

bolt parses a body before it checks the signature, so a body that is not JSON or a form would surface as a 500 and
a logged traceback for anyone who can reach the URL; it is refused here with a 400 instead, changing nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def to_bolt_request(request: web.Request) -> AsyncBoltRequest | None:
    """The request as bolt takes it, or None when its body cannot be a Slack request."""
    try:
        body = (await request.read()).decode("utf-8")
        return AsyncBoltRequest(body=body, query=request.query_string, headers=dict(request.headers))  # pyright: ignore
    except ValueError:  # UnicodeDecodeError, JSONDecodeError
        return None


def events_handler(app: AsyncApp) -> Handler:
    """The aiohttp handler for `/slack/events`: bolt verifies the signature (401) and dispatches."""

    async def handle(request: web.Request) -> web.StreamResponse:
        bolt_request = await to_bolt_request(request)
        if bolt_request is None:
            return web.Response(status=400, text="not a Slack request")
        return await to_aiohttp_response(await app.async_dispatch(bolt_request))

    return handle
