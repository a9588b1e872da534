"""A local stand-in for an ntfy server's publish API, strict about ntfy's documented JSON format
(https://docs.ntfy.sh/publish/#publish-as-json and #action-buttons, and the server's own checks: the topic's shape,
at most three actions, a label on each, a URL on `view` and `http` ones, no body on a GET). Whatever breaks a rule
is answered as ntfy answers it (400, or 401 without the token) and kept in `problems`.

It is also the phone: `tap` sends an `http` action's request as ntfy's apps do (its method, POST by default, its
headers and body, to its URL).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import anyio
from aiohttp import web

TOKEN = "tk_handraisetestaccesstoken0001"

MESSAGE_FIELDS = {
    "topic": str,
    "message": str,
    "title": str,
    "tags": list,
    "priority": int,
    "actions": list,
    "click": str,
    "attach": str,
    "markdown": bool,
    "icon": str,
    "filename": str,
    "delay": str,
    "email": str,
    "call": str,
    "cache": str,
    "firebase": str,
}
"""The fields of ntfy's JSON publish format and their types."""
ACTION_FIELDS = {
    "action": str,
    "label": str,
    "clear": bool,
    "url": str,
    "method": str,
    "headers": dict,
    "body": str,
    "intent": str,
    "extras": dict,
}
TOPIC = re.compile(r"[-_A-Za-z0-9]{1,64}")
MAX_MESSAGE_BYTES = 4096


def problems_in(body: Any) -> list[str]:
    """What in `body` ntfy's documented format does not allow."""
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    found: list[str] = []
    for key, value in body.items():
        kind = MESSAGE_FIELDS.get(key)
        if kind is None:
            found.append(f"unknown field {key!r}")
        elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            found.append(f"{key!r} is not a {kind.__name__}")
    topic = body.get("topic")
    if not isinstance(topic, str) or not TOPIC.fullmatch(topic):
        found.append("'topic' is missing or not a topic name")
    if "priority" in body and body["priority"] not in (1, 2, 3, 4, 5):
        found.append("'priority' is not 1 to 5")
    if isinstance(body.get("tags"), list) and not all(isinstance(tag, str) for tag in body["tags"]):
        found.append("'tags' holds a non-string")
    message = body.get("message")
    if isinstance(message, str) and len(message.encode("utf-8")) > MAX_MESSAGE_BYTES:
        found.append("'message' is over 4,096 bytes (ntfy would turn it into an attachment)")
    for url_key in ("click", "attach", "icon"):
        if isinstance(body.get(url_key), str) and not re.match(r"https?://", body[url_key]):
            found.append(f"{url_key!r} is not an http(s) URL")
    actions = body.get("actions", [])
    if isinstance(actions, list):
        if len(actions) > 3:
            found.append("only 3 actions allowed")
        for action in actions:
            found += _action_problems(action)
    return found


def _action_problems(action: Any) -> list[str]:
    if not isinstance(action, dict):
        return ["an action is not a JSON object"]
    found = [f"unknown action field {key!r}" for key in action if key not in ACTION_FIELDS]
    found += [
        f"action {key!r} is not a {ACTION_FIELDS[key].__name__}"
        for key, value in action.items()
        if key in ACTION_FIELDS and not isinstance(value, ACTION_FIELDS[key])
    ]
    kind = str(action.get("action", "")).lower()
    if kind not in ("view", "broadcast", "http"):
        found.append(f"parameter 'action' cannot be {kind!r}")
    if not action.get("label"):
        found.append("parameter 'label' is required")
    if kind in ("view", "http") and not action.get("url"):
        found.append(f"parameter 'url' is required for action {kind!r}")
    if kind == "http" and str(action.get("method", "POST")).upper() in ("GET", "HEAD") and action.get("body"):
        found.append("parameter 'body' cannot be set if method is GET")
    headers = action.get("headers", {})
    if isinstance(headers, dict) and not all(isinstance(v, str) for v in headers.values()):
        found.append("action headers must be strings")
    return found


@dataclass
class FakeNtfy:
    url: str = ""
    published: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """Every message accepted, as ntfy returns it (with its id and its actions' ids)."""
    problems: list[str] = field(default_factory=list[str])
    authorizations: list[str] = field(default_factory=list[str])
    status: int | None = None
    """Answer every publish with this status instead (401, 429, 500)."""

    async def publish(self, request: web.Request) -> web.Response:
        self.authorizations.append(request.headers.get("Authorization", ""))
        if self.status is not None:
            return _error(self.status, "forced by the test")
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return _error(401, "unauthorized")
        try:
            body = json.loads(await request.read())
        except ValueError:
            self.problems.append("the body is not JSON")
            return _error(400, "invalid request: request body must be message JSON")
        if found := problems_in(body):
            self.problems += found
            return _error(400, "; ".join(found))
        now = int(time.time())
        message = {"id": secrets.token_urlsafe(9)[:12], "time": now, "expires": now + 43_200, "event": "message"}
        message |= body
        message["actions"] = [{"id": secrets.token_hex(5)} | action for action in body.get("actions", [])]
        self.published.append(message)
        return web.json_response(message)

    async def until(self, count: int, seconds: float = 5) -> dict[str, Any]:
        """The `count`-th message published, once it is."""
        with anyio.fail_after(seconds):
            while len(self.published) < count:
                await anyio.sleep(0.005)
        return self.published[count - 1]

    async def tap(self, message: dict[str, Any], label: str, *, body: str | None = None) -> tuple[int, str]:
        """Tap the `http` action labelled `label` as ntfy's app does; `body` replaces the action's body (a forger)."""
        action = next(action for action in message["actions"] if action["label"] == label)
        assert action["action"] == "http"
        async with (
            aiohttp.ClientSession() as http,
            http.request(
                action.get("method", "POST"),
                action["url"],
                headers=action.get("headers", {}),
                data=(body if body is not None else action.get("body", "")).encode(),
            ) as reply,
        ):
            return reply.status, await reply.text()


def _error(status: int, text: str) -> web.Response:
    return web.json_response({"code": status * 100 + 1, "http": status, "error": text}, status=status)


@asynccontextmanager
async def fake_ntfy() -> AsyncIterator[FakeNtfy]:
    """A FakeNtfy on a free loopback port; its `url` is the `server` to give the channel."""
    fake = FakeNtfy()
    app = web.Application()
    app.router.add_post("/", fake.publish)
    app.router.add_put("/", fake.publish)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    fake.url = f"http://{host}:{port}"
    try:
        yield fake
    finally:
        await runner.cleanup()
