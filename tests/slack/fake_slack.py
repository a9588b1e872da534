"""A local Slack Web API on 127.0.0.1:0 that records every call and can answer errors or 429s on cue."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from aiohttp import web

TOKEN = "xoxb-test-token"
BOT_USER = "U0BOT"


@dataclass(frozen=True)
class Call:
    method: str
    args: dict[str, Any]
    status: int


class FakeSlack:
    """Answers `auth.test`, `chat.*`, `views.open`, `conversations.open`, `conversations.history`,
    `conversations.replies`, `users.info` and `usergroups.users.list`.

    Posted messages are kept per conversation (with their metadata) for the two history methods, which serve them
    newest first in one page and return metadata only with `include_all_metadata`; their `ts` are not wall-clock
    times, so `oldest` is recorded with the call but does not filter."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.channels = {"#deploys": "C0DEPLOY", "#ops": "C0OPS"}
        self.groups: dict[str, list[str]] = {}
        self.emails: dict[str, str] = {}
        self.url = ""
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self._scripts: dict[str, list[tuple[str, Any]]] = {}
        self._ts = itertools.count(1)
        self._changed = anyio.Event()
        self.on_post: Callable[[str, str], Awaitable[None]] | None = None
        """Awaited with a new message's (channel, ts) once it is posted, before the poster hears back: a person
        who acts on the message at once."""

    # --- scripting -------------------------------------------------------------------------------------------------

    def fail(self, method: str, error: str, *, times: int = 1) -> None:
        """Answer the next `times` calls of `method` with `{"ok": false, "error": error}`."""
        self._scripts.setdefault(method, []).extend([("error", error)] * times)

    def rate_limit(self, method: str, *, times: int = 1, retry_after: int = 0) -> None:
        """Answer the next `times` calls of `method` with HTTP 429 and Retry-After."""
        self._scripts.setdefault(method, []).extend([("429", retry_after)] * times)

    def stall(self, method: str) -> anyio.Event:
        """Hold the next call of `method` unanswered (Slack has it, its caller waits for the reply) until the event
        returned is set: a delivery in flight, for a test that kills the caller meanwhile."""
        release = anyio.Event()
        self._scripts.setdefault(method, []).append(("stall", release))
        return release

    def add_message(self, channel: str, message: dict[str, Any]) -> None:
        """Put a message someone else posted (another app, a person) into `channel`'s history."""
        self.messages.setdefault(channel, []).append(message)

    # --- reading what happened -------------------------------------------------------------------------------------

    def message_ts(self) -> str:
        """The ts Slack would give a person's message posted now: later than every message posted before it."""
        return f"1700000000.{next(self._ts):06d}"

    def calls_to(self, method: str) -> list[dict[str, Any]]:
        return [call.args for call in self.calls if call.method == method and call.status == 200]

    def methods(self) -> list[str]:
        return [call.method for call in self.calls if call.method != "auth.test"]

    async def wait_for(self, method: str, count: int = 1, *, seconds: float = 5) -> list[dict[str, Any]]:
        """The successful calls to `method` once there are at least `count` of them."""
        with anyio.fail_after(seconds):
            while len(self.calls_to(method)) < count:
                await self._changed.wait()
        return self.calls_to(method)

    # --- serving ---------------------------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        args = await _arguments(request)
        script = self._scripts.get(method)
        kind, value = script.pop(0) if script else ("ok", None)
        status = 429 if kind == "429" else 200
        self.calls.append(Call(method, args, status))
        self._changed.set()
        self._changed = anyio.Event()
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"ok": False, "error": "invalid_auth"})
        if kind == "stall":
            assert isinstance(value, anyio.Event)
            await value.wait()
        if kind == "429":
            return web.json_response(
                {"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": str(value)}
            )
        if kind == "error":
            return web.json_response({"ok": False, "error": value})
        answer = self._answer(method, args)
        if method == "chat.postMessage" and "ts" in answer and self.on_post is not None:
            await self.on_post(answer["channel"], answer["ts"])
        return web.json_response({"ok": True} | answer)

    def _answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {"user_id": BOT_USER, "bot_id": "B0BOT", "team_id": "T0TEAM", "user": "handraise", "team": "Example"}
        if method == "chat.postMessage":
            name = str(args.get("channel", ""))
            channel = self.channels.get(name) if name.startswith("#") else name
            if channel is None:
                return {"ok": False, "error": "channel_not_found"}
            ts = f"1700000000.{next(self._ts):06d}"
            message: dict[str, Any] = {"type": "message", "ts": ts, "text": args.get("text"), "bot_id": "B0BOT"}
            if args.get("thread_ts"):
                message["thread_ts"] = args["thread_ts"]
            if args.get("metadata"):
                message["metadata"] = args["metadata"]
            self.add_message(channel, message)
            return {"channel": channel, "ts": ts, "message": {"text": args.get("text")}}
        if method in ("conversations.history", "conversations.replies"):
            return {"messages": self._history(method, args), "has_more": False}
        if method == "chat.update":
            return {"channel": args.get("channel"), "ts": args.get("ts")}
        if method == "chat.postEphemeral":
            return {"message_ts": f"1700000500.{next(self._ts):06d}"}
        if method == "conversations.open":
            return {"channel": {"id": "D" + str(args.get("users", "X"))[1:]}}
        if method == "users.info":
            user = str(args.get("user"))
            profile = {"email": self.emails[user]} if user in self.emails else {}
            return {"user": {"id": user, "profile": profile}}
        if method == "usergroups.users.list":
            return {"users": self.groups.get(str(args.get("usergroup")), [])}
        if method == "views.open":
            return {"view": {"id": "V0VIEW"} | args.get("view", {})}
        return {}

    def _history(self, method: str, args: dict[str, Any]) -> list[dict[str, Any]]:
        posted = self.messages.get(str(args.get("channel")), [])
        if method == "conversations.replies":
            thread = str(args.get("ts"))
            chosen = [m for m in posted if thread in (m.get("ts"), m.get("thread_ts"))]
        else:
            chosen = [m for m in reversed(posted) if m.get("thread_ts") in (None, m.get("ts"))]
        with_metadata = str(args.get("include_all_metadata")).lower() in ("1", "true")
        return [m if with_metadata else {k: v for k, v in m.items() if k != "metadata"} for m in chosen]


async def _arguments(request: web.Request) -> dict[str, Any]:
    args: dict[str, Any] = dict(request.query)
    if request.method == "GET":
        return args
    if request.content_type == "application/json":
        body = await request.json()
        args |= body if isinstance(body, dict) else {}
    else:
        for key, value in (await request.post()).items():
            text = str(value)
            args[key] = json.loads(text) if text[:1] in "[{" else text
    return args


@asynccontextmanager
async def fake_slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    app = web.Application()
    app.router.add_route("*", "/api/{method}", fake._handle)  # pyright: ignore[reportPrivateUsage]
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    fake.url = f"http://127.0.0.1:{port}/api/"
    try:
        yield fake
    finally:
        await runner.cleanup()
