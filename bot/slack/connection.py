"""How Slack's requests reach the channel: one bolt app, fed over HTTP (`/slack/events`, where bolt verifies the
signature) or over a Socket Mode websocket (authenticated by the app token)."""

from __future__ import annotations

import anyio
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.http import events_handler

EVENTS_PATH = "/slack/events"


def bolt_app(client: AsyncWebClient, signing_secret: str | None, *, http: bool) -> AsyncApp:
    """The bolt app the channel's handlers are registered on."""
    # Signatures are checked on every HTTP request; Socket Mode connections are authenticated by the app token.
    return AsyncApp(
        name="handraise",
        client=client,
        signing_secret=signing_secret or "",
        request_verification_enabled=http,
        ssl_check_enabled=http,
    )


def add_events_route(web_app: web.Application, app: AsyncApp) -> None:
    """Serve Slack's events and interactivity requests at `/slack/events` (HTTP mode)."""
    web_app.router.add_post(EVENTS_PATH, events_handler(app))


async def hold_socket(app: AsyncApp, app_token: str | None, client: AsyncWebClient) -> None:
    """Hold the Socket Mode websocket open until cancelled, then close it."""
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    handler = AsyncSocketModeHandler(app, app_token, web_client=client)
    await handler.connect_async()
    try:
        await anyio.sleep_forever()
    finally:
        with anyio.CancelScope(shield=True):
            await handler.close_async()
