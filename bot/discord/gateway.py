"""Discord's Gateway, the websocket that brings interactions and messages: found with `GET /gateway/bot`, IDENTIFY
with the intents handraise needs, heartbeats on time, and after op 7 (Reconnect) or a resumable close a RESUME at
`resume_gateway_url` at once (no fresh IDENTIFY, no backoff), so a click Discord replays is still answered within
its 3 seconds. Each event is handed over in a task of its own, so a slow one never delays a heartbeat.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import anyio
from anyio.abc import TaskGroup

from bot.discord.errors import DiscordErrorCode
from bot.discord.rest import DiscordCallError, DiscordRest, Sleep
from bot.errors import HandraiseError

log = logging.getLogger(__name__)

GUILDS, GUILD_MESSAGES, MESSAGE_CONTENT = 1 << 0, 1 << 9, 1 << 15
INTENTS = GUILDS | GUILD_MESSAGES | MESSAGE_CONTENT
DISPATCH, HEARTBEAT, IDENTIFY, RESUME, RECONNECT, INVALID_SESSION, HELLO, HEARTBEAT_ACK = 0, 1, 2, 6, 7, 9, 10, 11
FATAL = {
    4004: "authentication failed: check the bot token",
    4010: "invalid shard",
    4011: "sharding required",
    4012: "invalid API version",
    4013: "invalid intents",
    4014: "disallowed intents: enable the Message Content intent in the Developer Portal (docs/discord-setup.md)",
}
FRESH = {4007, 4009}
"""Closes after which the session cannot be resumed (invalid sequence, session timed out): identify again."""
RESUMING_CLOSE = 4900
"""The code handraise closes with to resume: any code but 1000/1001, which would end the session on Discord's side."""
MAX_FRAME = 16 * 1024 * 1024
MAX_BACKOFF = 60.0

Handler = Callable[[str, dict[str, Any]], Awaitable[None]]


class GatewayClosed(HandraiseError):
    """Discord closed the Gateway for good (bad token, intents not enabled)."""

    code = DiscordErrorCode.GATEWAY


class Gateway:
    """One Gateway session, resumed across reconnects for as long as `run` runs."""

    def __init__(self, rest: DiscordRest, token: str, handle: Handler, *, sleep: Sleep = anyio.sleep) -> None:
        self.rest = rest
        self._token = token
        self._handle = handle
        self._sleep = sleep
        self.session_id: str | None = None
        self.resume_url: str | None = None
        self.sequence: int | None = None
        self.application_id: str | None = None
        self.user_id: str | None = None
        self.ready = anyio.Event()
        self._socket: aiohttp.ClientWebSocketResponse | None = None
        self._closing = False

    async def run(self) -> None:
        """Connect, and reconnect (resuming where possible) until `close`; raises GatewayClosed on a fatal close."""
        backoff = 0.0
        fatal: GatewayClosed | None = None
        async with aiohttp.ClientSession() as http, anyio.create_task_group() as events:
            while not self._closing and fatal is None:
                resume = self.session_id is not None and self.resume_url is not None
                try:
                    url = self.resume_url if resume and self.resume_url else await self._gateway_url()
                    outcome = await self._connect(http, events, f"{url.rstrip('/')}/?v=10&encoding=json", resume)
                    backoff = 0.0
                except GatewayClosed as closed:
                    fatal = closed
                    continue
                except (aiohttp.ClientError, TimeoutError, OSError, HandraiseError) as failure:
                    backoff = min(MAX_BACKOFF, backoff * 2 or 1.0)
                    log.warning("discord: the Gateway is unreachable (%s); trying again in %.0f s", failure, backoff)
                    await self._sleep(backoff)
                    continue
                if outcome == "fresh":
                    self.session_id = self.resume_url = self.sequence = None
                    await self._sleep(random.uniform(1, 5))
            events.cancel_scope.cancel()
        if fatal is not None:
            log.error("%s", fatal.message)
            raise fatal

    async def _gateway_url(self) -> str:
        try:
            answer = await self.rest.call("GET", "/gateway/bot")
        except DiscordCallError as failure:
            if failure.status == 401:
                raise GatewayClosed(f"discord: {FATAL[4004]} ({self.rest.base}/gateway/bot answered 401)") from None
            raise
        url = answer.get("url") if isinstance(answer, dict) else None
        if not isinstance(url, str) or not url.startswith(("wss://", "ws://")):
            raise GatewayClosed(f"GET /gateway/bot gave no websocket URL: {str(answer)[:200]}")
        return url

    async def _connect(self, http: aiohttp.ClientSession, events: TaskGroup, url: str, resume: bool) -> str:
        """One connection: returns "resume" or "fresh" for what the next one should do."""
        async with http.ws_connect(url, max_msg_size=MAX_FRAME, autoclose=False, heartbeat=None) as socket:
            self._socket = socket
            try:
                return await self._serve(socket, events, resume)
            finally:
                self._socket = None
                if not socket.closed:
                    await socket.close(code=RESUMING_CLOSE, message=b"resuming")

    async def _serve(self, socket: aiohttp.ClientWebSocketResponse, events: TaskGroup, resume: bool) -> str:
        acked = [True]
        async with anyio.create_task_group() as beats:
            try:
                async for frame in socket:
                    if frame.type != aiohttp.WSMsgType.TEXT:
                        break
                    payload = json.loads(frame.data)
                    if not isinstance(payload, dict):
                        continue
                    op, data = payload.get("op"), payload.get("d")
                    if isinstance(payload.get("s"), int):
                        self.sequence = payload["s"]
                    if op == HELLO and isinstance(data, dict):
                        interval = float(data.get("heartbeat_interval", 41_250)) / 1000
                        beats.start_soon(self._beat, socket, interval, acked)
                        await self._send(socket, self._resume() if resume else self._identify())
                    elif op == HEARTBEAT_ACK:
                        acked[0] = True
                    elif op == HEARTBEAT:
                        await self._send(socket, {"op": HEARTBEAT, "d": self.sequence})
                    elif op == RECONNECT:
                        return "resume"
                    elif op == INVALID_SESSION:
                        return "resume" if data is True else "fresh"
                    elif op == DISPATCH and isinstance(payload.get("t"), str) and isinstance(data, dict):
                        self._dispatched(payload["t"], data, events)
            except ValueError:
                log.warning("discord: the Gateway sent a frame that is not JSON; reconnecting")
            finally:
                beats.cancel_scope.cancel()
        code = socket.close_code
        if code in FATAL:
            raise GatewayClosed(f"discord: the Gateway closed the session ({code}): {FATAL[code]}")
        return "fresh" if code in FRESH else "resume"

    def _dispatched(self, event: str, data: dict[str, Any], events: TaskGroup) -> None:
        if event == "READY":
            self.session_id = str(data.get("session_id") or "") or None
            resume_url = data.get("resume_gateway_url")
            self.resume_url = resume_url if isinstance(resume_url, str) else None
            application, user = data.get("application"), data.get("user")
            if isinstance(application, dict) and application.get("id"):
                self.application_id = str(application["id"])
            if isinstance(user, dict) and user.get("id"):
                self.user_id = str(user["id"])
            self.ready.set()
            log.info("discord: connected to the Gateway as application %s", self.application_id)
        elif event == "RESUMED":
            log.info("discord: resumed the Gateway session at event %s", self.sequence)
        events.start_soon(self._hand_over, event, data)

    async def _hand_over(self, event: str, data: dict[str, Any]) -> None:
        try:
            await self._handle(event, data)
        except Exception:
            log.exception("discord: acting on a %s event failed", event)

    async def _beat(self, socket: aiohttp.ClientWebSocketResponse, interval: float, acked: list[bool]) -> None:
        await anyio.sleep(interval * random.random())
        while not socket.closed:
            if not acked[0]:
                log.warning("discord: no heartbeat ACK; reconnecting to resume")
                await socket.close(code=RESUMING_CLOSE, message=b"zombied")
                return
            acked[0] = False
            await self._send(socket, {"op": HEARTBEAT, "d": self.sequence})
            await anyio.sleep(interval)

    async def _send(self, socket: aiohttp.ClientWebSocketResponse, payload: dict[str, Any]) -> None:
        if not socket.closed:
            await socket.send_str(json.dumps(payload))

    def _identify(self) -> dict[str, Any]:
        properties = {"os": "linux", "browser": "handraise", "device": "handraise"}
        return {"op": IDENTIFY, "d": {"token": self._token, "intents": INTENTS, "properties": properties}}

    def _resume(self) -> dict[str, Any]:
        return {"op": RESUME, "d": {"token": self._token, "session_id": self.session_id, "seq": self.sequence}}

    async def close(self) -> None:
        """Stop: the session ends (closed with 1000, so Discord does not keep it for a resume)."""
        self._closing = True
        socket = self._socket
        if socket is not None and not socket.closed:
            await socket.close(code=1000, message=b"stopping")
