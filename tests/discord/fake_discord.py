"""A local Discord on 127.0.0.1:0: the REST API under `/api/v10` and the Gateway (a websocket) that `GET
/gateway/bot` names, with the state they change.

The Gateway speaks Discord's protocol: HELLO with the heartbeat interval, IDENTIFY → READY (a session id and a
`resume_gateway_url`), heartbeats answered with ACKs, DISPATCH events numbered by `s`, op 7 Reconnect and op 9
Invalid Session on cue, and RESUME → the events the client missed, then RESUMED. `compress=zlib-stream` is honoured.
REST refuses what Discord refuses (a content over 2,000 characters, a button label over 80, a modal title over 45, a
second callback for one interaction or one later than 3 seconds, a missing `allowed_mentions`) and can answer 429s on
cue. People act through `click`, `choose`, `submit_modal` and `post`, which dispatch the events Discord would.
"""

from __future__ import annotations

import itertools
import json
import secrets
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from aiohttp import WSMsgType, web

TOKEN = "MTIz.fake.bot-token"
APP_ID = "1300000000000000001"
GUILD_ID = "1300000000000000002"
CHANNEL_ID = "1300000000000000003"
BOT_USER = {"id": APP_ID, "username": "handraise", "discriminator": "0", "global_name": None, "avatar": None}
BOT_USER["bot"] = True
OWNER = {"id": "1300000000000000009", "username": "owner", "discriminator": "0", "global_name": "Owner", "avatar": None}
APPLICATION = {
    "id": APP_ID,
    "name": "handraise",
    "description": "",
    "icon": None,
    "bot_public": False,
    "bot_require_code_grant": False,
    "owner": OWNER,
    "team": None,
    "verify_key": "0" * 64,
    "flags": 0,
}
INTERACTION_SECONDS = 3.0
"""Discord forgets an interaction that has no callback within 3 seconds (404, Unknown interaction)."""
EPHEMERAL = 64

# Gateway opcodes
DISPATCH, HEARTBEAT, IDENTIFY, RESUME, RECONNECT, INVALID_SESSION, HELLO, HEARTBEAT_ACK = 0, 1, 2, 6, 7, 9, 10, 11


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: dict[str, Any]
    status: int
    files: tuple[str, ...] = ()


def user(user_id: str, name: str = "Alice") -> dict[str, Any]:
    return {"id": user_id, "username": name.lower(), "discriminator": "0", "global_name": name, "avatar": None}


@dataclass
class Session:
    """One Gateway session: what it was told (every event numbered), and who is connected to it now."""

    id: str
    intents: int
    events: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    socket: Connection | None = None


@dataclass
class Connection:
    ws: web.WebSocketResponse
    compress: zlib._Compress | None
    session: Session | None = None
    heartbeats: list[int | None] = field(default_factory=list[int | None])

    async def send(self, payload: dict[str, Any]) -> None:
        text = json.dumps(payload)
        if self.compress is None:
            await self.ws.send_str(text)
        else:
            await self.ws.send_bytes(self.compress.compress(text.encode()) + self.compress.flush(zlib.Z_SYNC_FLUSH))


@dataclass
class Interaction:
    payload: dict[str, Any]
    sent_at: float
    callbacks: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])


class FakeDiscord:
    """The REST routes and Gateway events the channel uses."""

    def __init__(self, *, heartbeat_ms: int = 41_250) -> None:
        self.url = ""
        self.heartbeat_ms = heartbeat_ms
        self.calls: list[Call] = []
        self.messages: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, dict[str, Any]] = {
            CHANNEL_ID: {"id": CHANNEL_ID, "type": 0, "guild_id": GUILD_ID, "name": "agents", "position": 0}
        }
        self.interactions: dict[str, Interaction] = {}
        self.sessions: dict[str, Session] = {}
        self.connections: list[Connection] = []
        self.identified: list[dict[str, Any]] = []
        self.resumed: list[dict[str, Any]] = []
        self.gateway_urls: list[str] = []
        self._scripts: dict[str, list[tuple[int, Any]]] = {}
        self._ids = itertools.count(1_300_000_000_000_100_000)
        self._changed = anyio.Event()
        self.pinned: Session | None = None
        self.on_post: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        """Called with each message the bot posts before the POST is answered: a person quicker than the bot."""

    # --- scripting -------------------------------------------------------------------------------------------------

    def rate_limit(self, route: str, *, retry_after: float = 1.5, times: int = 1) -> None:
        """Answer the next `times` calls whose "METHOD /path" starts with `route` with 429 and `retry_after`."""
        self._scripts.setdefault(route, []).extend([(429, retry_after)] * times)

    def fail(self, route: str, message: str, *, status: int = 403, code: int = 50001, times: int = 1) -> None:
        self._scripts.setdefault(route, []).extend([(status, (code, message))] * times)

    def delete_channel(self, channel_id: str) -> None:
        """Someone deletes a channel or thread, and every message in it."""
        del self.channels[channel_id]
        self.messages = {key: m for key, m in self.messages.items() if m["channel_id"] != channel_id}

    def snowflake(self) -> str:
        return str(next(self._ids))

    # --- the Gateway, on cue ---------------------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        """The session people's events go to: `pinned` when set, else the newest (a test usually has one)."""
        return self.pinned or list(self.sessions.values())[-1]

    async def dispatch(self, event: str, data: dict[str, Any], session: Session | None = None) -> int:
        """Number `event` in the session and send it to whoever is connected to it (else it waits for a RESUME)."""
        session = session or self.session
        payload = {"op": DISPATCH, "t": event, "s": len(session.events) + 1, "d": data}
        session.events.append(payload)
        if session.socket is not None and not session.socket.ws.closed:
            await session.socket.send(payload)
        self._notify()
        return int(payload["s"])

    async def reconnect(self, session: Session | None = None) -> None:
        """Ask the client to reconnect (op 7): it should RESUME at once."""
        session = session or self.session
        socket, session.socket = session.socket, None
        if socket is not None:
            await socket.send({"op": RECONNECT, "d": None})

    async def drop(self, code: int = 4000, session: Session | None = None) -> None:
        """Close the session's socket with `code` (4000: unknown error, resumable)."""
        session = session or self.session
        socket, session.socket = session.socket, None
        if socket is not None:
            await socket.ws.close(code=code, message=b"closed by the fake")

    # --- people's side ---------------------------------------------------------------------------------------------

    async def click(
        self, message_id: str, custom_id: str, who: dict[str, Any], *, roles: list[str] | None = None
    ) -> str:
        """Press the button `custom_id` on a message; returns the interaction id."""
        return await self._interact(3, message_id, who, roles, {"custom_id": custom_id, "component_type": 2})

    async def choose(
        self, message_id: str, custom_id: str, values: list[str], who: dict[str, Any], *, roles: list[str] | None = None
    ) -> str:
        """Pick `values` in the string select `custom_id`."""
        data = {"custom_id": custom_id, "component_type": 3, "values": values}
        return await self._interact(3, message_id, who, roles, data)

    async def submit_modal(
        self,
        message_id: str,
        custom_id: str,
        values: dict[str, str],
        who: dict[str, Any],
        *,
        roles: list[str] | None = None,
    ) -> str:
        """Submit the modal `custom_id` (opened from a button on `message_id`) with text input values by custom id."""
        inputs = [{"type": 4, "custom_id": key, "value": value} for key, value in values.items()]
        rows = [{"type": 1, "components": [text_input]} for text_input in inputs]
        return await self._interact(5, message_id, who, roles, {"custom_id": custom_id, "components": rows})

    async def redeliver(self, interaction_id: str) -> None:
        """Send the same INTERACTION_CREATE again (as Discord may, after a resume)."""
        await self.dispatch("INTERACTION_CREATE", self.interactions[interaction_id].payload)

    async def _interact(
        self, kind: int, message_id: str, who: dict[str, Any], roles: list[str] | None, data: dict[str, Any]
    ) -> str:
        message = self.messages[message_id]
        channel = self.channels[message["channel_id"]]
        payload = {
            "id": self.snowflake(),
            "application_id": APP_ID,
            "type": kind,
            "token": "aW50ZXJhY3Rpb24" + secrets.token_urlsafe(24),
            "version": 1,
            "guild_id": GUILD_ID,
            "channel_id": channel["id"],
            "channel": channel,
            "member": _member(who, roles) | {"user": who},
            "message": dict(message),
            "data": data,
            "app_permissions": "0",
            "locale": "en-US",
            "guild_locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": GUILD_ID},
            "context": 0,
            "attachment_size_limit": 10_485_760,
        }
        self.interactions[payload["id"]] = Interaction(payload, time.monotonic())
        await self.dispatch("INTERACTION_CREATE", payload)
        return payload["id"]

    async def post(
        self,
        channel_id: str,
        who: dict[str, Any],
        content: str,
        *,
        roles: list[str] | None = None,
        reply_to: str | None = None,
    ) -> str:
        """A person writes `content` in a channel or thread (MESSAGE_CREATE); returns the message id."""
        message: dict[str, Any] = {
            "id": self.snowflake(),
            "channel_id": channel_id,
            "guild_id": GUILD_ID,
            "author": who,
            "member": _member(who, roles),
            "content": content,
            "timestamp": "2026-12-06T02:00:00.000000+00:00",
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
        }
        if reply_to is not None:
            message["type"] = 19
            message["message_reference"] = {"message_id": reply_to, "channel_id": channel_id, "guild_id": GUILD_ID}
        self.messages[message["id"]] = message
        await self.dispatch("MESSAGE_CREATE", message)
        return message["id"]

    # --- reading what happened -------------------------------------------------------------------------------------

    def calls_to(self, route: str) -> list[Call]:
        """The successful calls whose "METHOD /path" starts with `route` (the path below /api/v10)."""
        return [call for call in self.calls if f"{call.method} {call.path}".startswith(route) and call.status < 300]

    def callbacks(self, interaction_id: str) -> list[dict[str, Any]]:
        return self.interactions[interaction_id].callbacks

    async def wait_for(self, route: str, count: int = 1, *, seconds: float = 5) -> list[Call]:
        with anyio.fail_after(seconds):
            while len(self.calls_to(route)) < count:
                await self._changed.wait()
        return self.calls_to(route)

    async def until(self, predicate: Any, *, seconds: float = 5) -> None:
        with anyio.fail_after(seconds):
            while not predicate():
                await self._changed.wait()

    def buttons(self, message_id: str) -> list[dict[str, Any]]:
        """Every component the message shows now, in order (buttons and selects)."""
        rows = self.messages[message_id].get("components") or []
        return [component for row in rows for component in row.get("components", [])]

    def in_channel(self, channel_id: str) -> list[dict[str, Any]]:
        return [message for message in self.messages.values() if message["channel_id"] == channel_id]

    def threads(self) -> list[dict[str, Any]]:
        return [channel for channel in self.channels.values() if channel["type"] == 11]

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # --- REST ------------------------------------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["path"]
        body, files = await _body(request)
        if body is None:
            return _error(400, 50109, "The request body contains invalid JSON.")
        callback = path.startswith("/interactions/")
        if not callback and request.headers.get("Authorization") != f"Bot {TOKEN}":
            self.calls.append(Call(request.method, path, body, 401))
            return _error(401, 0, "401: Unauthorized")
        route = f"{request.method} {path}"
        script = next((key for key, steps in self._scripts.items() if steps and route.startswith(key)), None)
        if script is not None:
            status, value = self._scripts[script].pop(0)
            self.calls.append(Call(request.method, path, body, status, files))
            self._notify()
            if status == 429:
                return _json_response(
                    {"message": "You are being rate limited.", "retry_after": value, "global": False},
                    status=429,
                    headers={"Retry-After": str(int(value) + 1), "X-RateLimit-Scope": "user"},
                )
            return _error(status, *value)
        try:
            status, result = await self._route(request.method, path, body, files, request.query)
        except _Refused as refused:
            status, result = refused.status, {"message": refused.message, "code": refused.code}
        self.calls.append(Call(request.method, path, body, status, files))
        self._notify()
        if status == 204:
            return web.Response(status=204)
        return _json_response(result, status=status)

    async def _route(
        self, method: str, path: str, body: dict[str, Any], files: tuple[str, ...], query: Any
    ) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        match method, parts:
            case "GET", ["users", "@me"]:
                return 200, BOT_USER
            case "GET", ["oauth2", "applications", "@me"]:
                return 200, APPLICATION
            case "GET", ["gateway", "bot"]:
                limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
                return 200, {"url": self.gateway_url, "shards": 1, "session_start_limit": limit}
            case "GET", ["gateway"]:
                return 200, {"url": self.gateway_url}
            case "GET", ["channels", channel_id]:
                return 200, self._channel(channel_id)
            case "POST", ["channels", channel_id, "threads"]:
                return 201, self._thread(channel_id, body)
            case "POST", ["channels", channel_id, "messages"]:
                message = self._send(channel_id, body, files)
                if self.on_post is not None:
                    await self.on_post(message)
                return 200, message
            case "PATCH", ["channels", channel_id, "messages", message_id]:
                return 200, self._edit(channel_id, message_id, body)
            case "POST", ["interactions", interaction_id, token, "callback"]:
                return self._callback(interaction_id, token, body, query)
            case _:
                raise _Refused(404, 0, "404: Not Found")

    @property
    def gateway_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/gateway"

    def _channel(self, channel_id: str) -> dict[str, Any]:
        if channel_id not in self.channels:
            raise _Refused(404, 10003, "Unknown Channel")
        return self.channels[channel_id]

    def _thread(self, channel_id: str, body: dict[str, Any]) -> dict[str, Any]:
        parent = self._channel(channel_id)
        if parent["type"] != 0:
            raise _Refused(400, 50024, "Cannot execute action on this channel type")
        name = body.get("name")
        if not isinstance(name, str) or not 1 <= len(name) <= 100:
            raise _Refused(400, 50035, "Invalid Form Body (name: Must be between 1 and 100 in length.)")
        if body.get("type") not in (11, 12):
            raise _Refused(400, 50035, "Invalid Form Body (type)")
        thread = {
            "id": self.snowflake(),
            "type": body["type"],
            "guild_id": GUILD_ID,
            "parent_id": channel_id,
            "name": name,
            "owner_id": APP_ID,
            "message_count": 0,
            "member_count": 1,
            "rate_limit_per_user": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": body.get("auto_archive_duration", 4320),
                "archive_timestamp": "2026-12-06T02:00:00.000000+00:00",
                "locked": False,
                "create_timestamp": "2026-12-06T02:00:00.000000+00:00",
            },
        }
        self.channels[thread["id"]] = thread
        return thread

    def _send(self, channel_id: str, body: dict[str, Any], files: tuple[str, ...]) -> dict[str, Any]:
        channel = self._channel(channel_id)
        _check_message(body, files)
        message = {
            "id": self.snowflake(),
            "channel_id": channel["id"],
            "guild_id": GUILD_ID,
            "author": BOT_USER,
            "content": body.get("content", ""),
            "components": body.get("components", []),
            "attachments": [{"id": self.snowflake(), "filename": name} for name in files],
            "embeds": [],
            "timestamp": "2026-12-06T02:00:00.000000+00:00",
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
        }
        self.messages[message["id"]] = message
        return message

    def _edit(self, channel_id: str, message_id: str, body: dict[str, Any]) -> dict[str, Any]:
        message = self.messages.get(message_id)
        if message is None or message["channel_id"] != channel_id:
            raise _Refused(404, 10008, "Unknown Message")
        if message["author"]["id"] != APP_ID:
            raise _Refused(403, 50005, "Cannot edit a message authored by another user")
        _check_message(body, ())
        for key in ("content", "components"):
            if key in body:
                message[key] = body[key]
        message["edited_timestamp"] = "2026-12-06T02:00:01.000000+00:00"
        return message

    def _callback(self, interaction_id: str, token: str, body: dict[str, Any], query: Any) -> tuple[int, Any]:
        interaction = self.interactions.get(interaction_id)
        if interaction is None or interaction.payload["token"] != token:
            raise _Refused(404, 10062, "Unknown interaction")
        if time.monotonic() - interaction.sent_at > INTERACTION_SECONDS:
            raise _Refused(404, 10062, "Unknown interaction")
        if interaction.callbacks:
            raise _Refused(400, 40060, "Interaction has already been acknowledged.")
        kind, data = body.get("type"), body.get("data") or {}
        if kind not in (4, 5, 6, 7, 9):
            raise _Refused(400, 50035, "Invalid Form Body (type)")
        if kind in (6, 7) and interaction.payload["type"] not in (3, 5):
            raise _Refused(400, 40004, "Interaction has no message to update")
        if kind == 9:
            if interaction.payload["type"] == 5:
                raise _Refused(400, 50035, "Invalid Form Body (a modal cannot open a modal)")
            _check_modal(data)
        elif kind in (4, 7):
            _check_message(data, ())
        interaction.callbacks.append(body)
        if kind == 7:
            message = self.messages[interaction.payload["message"]["id"]]
            for key in ("content", "components"):
                if key in data:
                    message[key] = data[key]
        response = {"id": interaction_id, "type": interaction.payload["type"]}
        if kind == 4:
            response |= {"response_message_id": self.snowflake(), "response_message_ephemeral": bool(data.get("flags"))}
        if str(query.get("with_response", "")).lower() in ("1", "true"):
            return 200, {"interaction": response, "resource": {"type": kind}}
        return 204, None

    # --- the Gateway -----------------------------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        self.gateway_urls.append(str(request.rel_url))
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        if request.query.get("v") != "10" or request.query.get("encoding") != "json":
            await ws.close(code=4012, message=b"Invalid API version")
            return ws
        compress = request.query.get("compress")
        if compress not in (None, "zlib-stream"):
            await ws.close(code=4000, message=b"unsupported compression")
            return ws
        connection = Connection(ws, zlib.compressobj() if compress == "zlib-stream" else None)
        self.connections.append(connection)
        await connection.send({"op": HELLO, "d": {"heartbeat_interval": self.heartbeat_ms}})
        self._notify()
        async for frame in ws:
            if frame.type != WSMsgType.TEXT:
                await ws.close(code=4002, message=b"Error while decoding payload.")
                break
            try:
                payload = json.loads(frame.data)
                await self._on_frame(connection, payload)
            except (ValueError, KeyError, TypeError, AttributeError):
                await ws.close(code=4002, message=b"Error while decoding payload.")
                break
            self._notify()
        if connection.session is not None and connection.session.socket is connection:
            connection.session.socket = None
        self._notify()
        return ws

    async def _on_frame(self, connection: Connection, payload: dict[str, Any]) -> None:
        op = payload["op"]
        data: Any = payload.get("d")
        if op == HEARTBEAT:
            connection.heartbeats.append(data)
            await connection.send({"op": HEARTBEAT_ACK})
        elif op == IDENTIFY:
            if data["token"] != TOKEN:
                await connection.ws.close(code=4004, message=b"Authentication failed.")
                return
            if not isinstance(data.get("intents"), int):
                await connection.ws.close(code=4013, message=b"Invalid intent(s).")
                return
            self.identified.append(data)
            session = Session(secrets.token_hex(16), data["intents"], socket=connection)
            self.sessions[session.id] = session
            connection.session = session
            ready = {
                "v": 10,
                "user": BOT_USER,
                "guilds": [],
                "session_id": session.id,
                "resume_gateway_url": self.url.replace("http://", "ws://") + "/resume-gateway",
                "application": {"id": APP_ID, "flags": 0},
                "session_type": "normal",
                "private_channels": [],
                "relationships": [],
                "presences": [],
                "guild_join_requests": [],
                "geo_ordered_rtc_regions": [],
                "auth_session_id_hash": "",
                "user_settings": {},
                "_trace": ["fake-gateway"],
            }
            if "shard" in data:
                ready["shard"] = data["shard"]
            await self.dispatch("READY", ready, session)
        elif op == RESUME:
            self.resumed.append(data)
            session = self.sessions.get(data["session_id"])
            if session is None or data["token"] != TOKEN or data["seq"] is None or data["seq"] > len(session.events):
                await connection.send({"op": INVALID_SESSION, "d": False})
                return
            session.socket = connection
            connection.session = session
            for event in session.events[data["seq"] :]:
                await connection.send(event)
            await self.dispatch("RESUMED", {"_trace": ["fake-gateway"]}, session)
        elif op in (3, 4, 8):
            pass  # presence, voice state, request guild members: nothing the fake keeps
        else:
            await connection.ws.close(code=4001, message=b"Unknown opcode.")


class _Refused(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _json_response(body: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """JSON as Discord sends it: `Content-Type: application/json` exactly, no charset (discord.py reads nothing else
    as JSON)."""
    sent = {"Content-Type": "application/json", "Via": "1.1 google"} | (headers or {})
    return web.Response(body=json.dumps(body).encode(), status=status, headers=sent)


def _error(status: int, code: int, message: str) -> web.Response:
    return _json_response({"message": message, "code": code}, status=status)


def _member(who: dict[str, Any], roles: list[str] | None) -> dict[str, Any]:
    return {
        "roles": list(roles or []),
        "joined_at": "2026-01-01T00:00:00.000000+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
        "nick": None,
        "avatar": None,
        "permissions": "0",
        "communication_disabled_until": None,
    }


def _check_message(body: dict[str, Any], files: tuple[str, ...]) -> None:
    """Refuse what Discord refuses in a message body (and what handraise promises never to send)."""
    content = body.get("content")
    if content is not None and (not isinstance(content, str) or len(content) > 2000):
        raise _Refused(400, 50035, "Invalid Form Body (content: Must be 2000 or fewer in length.)")
    if "content" in body and not content and not body.get("components") and not files and "components" not in body:
        raise _Refused(400, 50006, "Cannot send an empty message")
    mentions = body.get("allowed_mentions")
    if not isinstance(mentions, dict) or mentions.get("parse") != [] or mentions.get("users") or mentions.get("roles"):
        raise _Refused(400, 50035, "handraise sends allowed_mentions {parse: []} on everything (the fake insists)")
    rows = body.get("components") or []
    if len(rows) > 5:
        raise _Refused(400, 50035, "Invalid Form Body (components: Must be 5 or fewer in length.)")
    for row in rows:
        items = row.get("components") or []
        if row.get("type") != 1 or not 1 <= len(items) <= 5:
            raise _Refused(400, 50035, "Invalid Form Body (components.N: action row of 1-5 components)")
        if any(item.get("type") == 3 for item in items) and len(items) != 1:
            raise _Refused(400, 50035, "Invalid Form Body (a select takes a row alone)")
        for item in items:
            _check_component(item)


def _check_component(item: dict[str, Any]) -> None:
    custom_id = item.get("custom_id")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
        raise _Refused(400, 50035, "Invalid Form Body (custom_id: Must be between 1 and 100 in length.)")
    if item.get("type") == 2:
        label = item.get("label")
        if not isinstance(label, str) or not 1 <= len(label) <= 80 or item.get("style") not in (1, 2, 3, 4):
            raise _Refused(400, 50035, "Invalid Form Body (label: Must be between 1 and 80 in length.)")
    elif item.get("type") == 3:
        options = item.get("options") or []
        values = [option.get("value") for option in options]
        if not 1 <= len(options) <= 25 or len(set(values)) != len(values):
            raise _Refused(400, 50035, "Invalid Form Body (options: 1-25 options with distinct values)")
        for option in options:
            if not 1 <= len(option.get("label", "")) <= 100 or not 1 <= len(option.get("value", "")) <= 100:
                raise _Refused(400, 50035, "Invalid Form Body (options.N.label: Must be between 1 and 100)")
            if len(option.get("description") or "") > 100:
                raise _Refused(400, 50035, "Invalid Form Body (options.N.description: Must be 100 or fewer)")
        low, high = item.get("min_values", 1), item.get("max_values", 1)
        if not 0 <= low <= high <= len(options) or high > 25:
            raise _Refused(400, 50035, "Invalid Form Body (max_values: must fit the options)")
        if len(item.get("placeholder") or "") > 150:
            raise _Refused(400, 50035, "Invalid Form Body (placeholder: Must be 150 or fewer in length.)")
    else:
        raise _Refused(400, 50035, "Invalid Form Body (component type)")


def _check_modal(data: dict[str, Any]) -> None:
    title, custom_id = data.get("title"), data.get("custom_id")
    if not isinstance(title, str) or not 1 <= len(title) <= 45:
        raise _Refused(400, 50035, "Invalid Form Body (title: Must be between 1 and 45 in length.)")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
        raise _Refused(400, 50035, "Invalid Form Body (custom_id)")
    rows = data.get("components") or []
    if not 1 <= len(rows) <= 5:
        raise _Refused(400, 50035, "Invalid Form Body (components: a modal holds 1-5 rows)")
    for row in rows:
        for item in row.get("components") or []:
            label = item.get("label")
            if item.get("type") != 4 or not isinstance(label, str) or not 1 <= len(label) <= 45:
                raise _Refused(400, 50035, "Invalid Form Body (label: Must be between 1 and 45 in length.)")
            if not 1 <= item.get("max_length", 4000) <= 4000:
                raise _Refused(400, 50035, "Invalid Form Body (max_length)")


async def _body(request: web.Request) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """The JSON body (or a multipart body's `payload_json`) and the names of any files attached."""
    if request.content_type.startswith("multipart/"):
        reader = await request.multipart()
        body: dict[str, Any] | None = {}
        files: list[str] = []
        async for part in reader:
            if part is None or not hasattr(part, "name"):
                continue
            name = getattr(part, "name", None)
            if name == "payload_json":
                body = _json(await part.text())  # type: ignore[union-attr]
            elif isinstance(name, str) and name.startswith("files["):
                files.append(getattr(part, "filename", None) or name)
                await part.read()  # type: ignore[union-attr]
        return body, tuple(files)
    raw = await request.read()
    if not raw:
        return {}, ()
    return _json(raw.decode(errors="replace")), ()


def _json(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@asynccontextmanager
async def fake_discord(*, heartbeat_ms: int = 41_250) -> AsyncIterator[FakeDiscord]:
    """A FakeDiscord on a free loopback port; its `url` plus "/api" is the `api_url` to give the channel."""
    fake = FakeDiscord(heartbeat_ms=heartbeat_ms)
    app = web.Application()
    for path in ("/gateway", "/gateway/", "/resume-gateway", "/resume-gateway/"):
        app.router.add_get(path, fake._gateway)
    app.router.add_route("*", "/api/v10/{path:.+}", fake._rest)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    fake.url = f"http://{host}:{port}"
    try:
        yield fake
    finally:
        for connection in fake.connections:
            if not connection.ws.closed:
                await connection.ws.close(code=1001, message=b"the fake is stopping")
        await runner.cleanup()
