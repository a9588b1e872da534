"""serve's `/teams/messages`: where the Bot Framework posts every activity (messages, card actions, installs).

A translation and a handler, like Slack's events endpoint: the bearer token is checked before the body is read as
anything (`bot.teams.auth`), the body is bounded and must be one JSON activity whose `serviceUrl` the token was
issued for; anything else is refused (401, 413, 400) with nothing sent anywhere. An activity that passes is handed
to the channel, whose answer (the body of an invoke's response) is sent back with 200.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
from aiohttp import web

from bot.teams.auth import KeysUnavailable, TokenCheck, Unauthorized

log = logging.getLogger(__name__)

MESSAGES_PATH = "/teams/messages"
MAX_BODY = 1 << 20
"""An activity is a few kilobytes (Teams caps a message near 28 KB); a megabyte is far more than it sends."""

Activity = Mapping[str, Any]
Handle = Callable[[Activity], Awaitable["dict[str, Any] | None"]]
"""Acts on one activity; returns the body of its response (an invoke's), or None for an empty 200."""


def _refuse(status: int, error: str) -> web.Response:
    return web.json_response({"error": error}, status=status)


def read_activity(body: bytes) -> dict[str, Any] | None:
    """The activity in a request body, or None when it is not one (not JSON, not an object, no type or
    serviceUrl)."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if not isinstance(data.get("type"), str) or not isinstance(data.get("serviceUrl"), str):
        return None
    return data


def messages_handler(check: TokenCheck, handle: Handle) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The aiohttp handler for `/teams/messages`."""

    async def receive(request: web.Request) -> web.StreamResponse:
        header = request.headers.get("Authorization")
        if not header:
            return _refuse(401, "unauthorized")
        if request.content_length is not None and request.content_length > MAX_BODY:
            return _refuse(413, "too large")
        body = await request.content.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            return _refuse(413, "too large")
        activity = read_activity(body)
        if activity is None:
            return _refuse(400, "not an activity")
        channel_id = activity.get("channelId")
        try:
            await check.verify(
                header,
                service_url=activity["serviceUrl"],
                channel_id=channel_id if isinstance(channel_id, str) else None,
            )
        except Unauthorized as refused:
            log.warning("teams: refused an activity: %s", refused)
            return _refuse(401, "unauthorized")
        except KeysUnavailable as failure:
            log.error("teams: cannot check an activity's token: %s", failure)
            return _refuse(503, "cannot check the token now")
        # Acted on before the answer: the Bot Framework delivers again what did not get its 2xx, and a repeat is
        # recognised by its id. Shielded, so a caller hanging up half-way does not leave half an answer.
        answer: dict[str, Any] | None = None
        with anyio.CancelScope(shield=True):
            answer = await handle(activity)
        return web.json_response(answer) if answer is not None else web.Response(status=200)

    return receive
