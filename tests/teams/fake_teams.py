"""A local Microsoft Teams on 127.0.0.1:0: the Microsoft Entra token endpoint (client credentials), the Bot
Connector API the bot posts to (POST/PUT activities, GET a member), and people's side: clicks, card submits and
thread replies posted to the bot's `/teams/messages` with tokens signed by the local identity provider.

It refuses what Teams refuses: a call without a token it issued (401), a body over 28,000 bytes (413), an update
of an activity it never posted (404); and it answers 429 with Retry-After on cue."""

from __future__ import annotations

import itertools
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import anyio
from aiohttp import web

from .fake_identity import FakeIdentity, fake_identity

APP_ID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
APP_PASSWORD = "app-password-for-tests"
TENANT = "contoso.example"
CONVERSATION = "19:deploys@thread.tacv2"
BOT_ACCOUNT = {"id": f"28:{APP_ID}", "name": "handraise"}
MAX_BODY = 28_000
CARD = "application/vnd.microsoft.card.adaptive"


@dataclass(frozen=True)
class Person:
    id: str
    name: str
    email: str
    aad: str

    @property
    def account(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "aadObjectId": self.aad}

    @property
    def member(self) -> dict[str, Any]:
        """The member as GET …/members/{id} returns it (a TeamsChannelAccount)."""
        return self.account | {"email": self.email, "userPrincipalName": self.email, "givenName": self.name}


ALICE = Person("29:1alice", "Alice Archer", "alice@example.org", "aaaaaaaa-0000-4000-8000-000000000001")
BOB = Person("29:1bob", "Bob Baker", "bob@example.org", "bbbbbbbb-0000-4000-8000-000000000002")
MALLORY = Person("29:1mallory", "Mallory", "mallory@example.net", "cccccccc-0000-4000-8000-000000000003")


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: Any
    status: int
    size: int


@dataclass
class FakeTeams:
    identity: FakeIdentity
    url: str = ""
    bot_url: str = ""
    """The bot's `/teams/messages`, once the test knows it."""
    calls: list[Call] = field(default_factory=list[Call])
    activities: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    """What each posted activity looks like now, by id (updates applied)."""
    history: dict[str, list[dict[str, Any]]] = field(default_factory=dict[str, list[dict[str, Any]]])
    tokens: dict[str, float] = field(default_factory=dict[str, float])
    token_requests: int = 0
    members: dict[str, Person] = field(default_factory=lambda: {p.id: p for p in (ALICE, BOB, MALLORY)})
    scripts: dict[str, list[tuple[int, str]]] = field(default_factory=dict[str, list[tuple[int, str]]])
    token_lifetime: int = 3599
    on_post: Callable[[str], object] | None = None
    """Called with a card's id as it is posted, before the bot hears back (a press within moments of the post)."""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1_700_000_000_001))
    _changed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def service_url(self) -> str:
        return f"{self.url}/amer/"

    @property
    def token_url(self) -> str:
        return f"{self.url}/{TENANT}/oauth2/v2.0/token"

    # --- scripting -------------------------------------------------------------------------------------------------

    def rate_limit(self, method: str, *, retry_after: str = "1", times: int = 1) -> None:
        """Answer the next `times` calls of `method` (POST, PUT, GET) with 429 and this Retry-After."""
        self.scripts.setdefault(method, []).extend([(429, retry_after)] * times)

    def fail(self, method: str, status: int, *, times: int = 1) -> None:
        self.scripts.setdefault(method, []).extend([(status, "")] * times)

    # --- reading what happened -------------------------------------------------------------------------------------

    def posted(self) -> list[dict[str, Any]]:
        return [call.body for call in self.calls if call.method == "POST" and call.status == 201]

    def updates(self, activity_id: str | None = None) -> list[dict[str, Any]]:
        return [
            call.body
            for call in self.calls
            if call.method == "PUT" and call.status == 200 and (activity_id is None or call.path.endswith(activity_id))
        ]

    def card(self, activity_id: str) -> dict[str, Any]:
        """The Adaptive Card the activity shows now."""
        return card_of(self.activities[activity_id])

    async def wait_for(self, what: str, count: int = 1, *, seconds: float = 5) -> list[dict[str, Any]]:
        """The successful POSTs (`what` = "POST") or PUTs once there are at least `count`."""
        read = self.posted if what == "POST" else self.updates
        with anyio.fail_after(seconds):
            while len(read()) < count:
                await self._changed.wait()
        return read()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # --- people's side ---------------------------------------------------------------------------------------------

    def activity(self, kind: str, who: Person, **fields: Any) -> dict[str, Any]:
        """An activity as Teams posts it to the bot, from `who` in the channel conversation."""
        return {
            "type": kind,
            "id": f"f:{secrets.token_hex(8)}",
            "timestamp": "2026-12-06T10:00:00.000Z",
            "serviceUrl": self.service_url,
            "channelId": "msteams",
            "from": who.account,
            "conversation": {"id": CONVERSATION, "isGroup": True, "conversationType": "channel", "tenantId": TENANT},
            "recipient": BOT_ACCOUNT,
            "channelData": {"tenant": {"id": TENANT}, "team": {"id": "19:team@thread.tacv2", "name": "Platform"}},
        } | fields

    def execute(self, card_id: str, who: Person, data: dict[str, Any], **fields: Any) -> dict[str, Any]:
        """An `Action.Execute` press on the card of activity `card_id` (inputs already merged into `data`)."""
        value = {"action": {"type": "Action.Execute", "verb": data.get("verb", ""), "data": data}, "trigger": "manual"}
        return self.activity("invoke", who, name="adaptiveCard/action", value=value, replyToId=card_id, **fields)

    def submit(self, card_id: str, who: Person, data: dict[str, Any]) -> dict[str, Any]:
        """An older client's `Action.Submit`: a message with the data as its value, in the card's thread."""
        thread = {"id": f"{CONVERSATION};messageid={card_id}", "isGroup": True, "conversationType": "channel"}
        return self.activity("message", who, value=data, replyToId=card_id, conversation=thread)

    def reply(self, card_id: str, who: Person, text: str) -> dict[str, Any]:
        """A reply in the card's thread."""
        thread = {"id": f"{CONVERSATION};messageid={card_id}", "isGroup": True, "conversationType": "channel"}
        return self.activity("message", who, text=text, textFormat="plain", conversation=thread)

    async def send(self, activity: dict[str, Any], *, token: str | None = None) -> tuple[int, Any]:
        """Post `activity` to the bot as the Bot Framework would; returns (status, body)."""
        header = token if token is not None else self.identity.header(activity["serviceUrl"])
        headers = {"Authorization": header, "Content-Type": "application/json"}
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.bot_url, data=json.dumps(activity).encode(), headers=headers) as response,
        ):
            text = await response.text()
            return response.status, json.loads(text) if text else None

    # --- serving ---------------------------------------------------------------------------------------------------

    async def _token(self, request: web.Request) -> web.Response:
        self.token_requests += 1
        form = await request.post()
        good = (
            form.get("grant_type") == "client_credentials"
            and form.get("client_id") == APP_ID
            and form.get("client_secret") == APP_PASSWORD
            and form.get("scope") == "https://api.botframework.com/.default"
        )
        if not good:
            return web.json_response({"error": "invalid_client", "error_description": "AADSTS7000215"}, status=401)
        token = secrets.token_urlsafe(24)
        self.tokens[token] = time.time() + self.token_lifetime
        body = {"token_type": "Bearer", "expires_in": self.token_lifetime, "access_token": token}
        return web.json_response(body)

    def _authorized(self, request: web.Request) -> bool:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        return scheme == "Bearer" and self.tokens.get(token, 0) > time.time()

    async def _connector(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw) if raw else None
        script = self.scripts.get(request.method)
        status, value = script.pop(0) if script else (0, "")
        if not self._authorized(request):
            status, value = 401, ""
        elif len(raw) > MAX_BODY:
            status = 413
        answer = await self._answer(request, body) if status == 0 else None
        payload: Any = None
        if answer is not None:
            status, payload = answer
        self.calls.append(Call(request.method, request.path, body, status, len(raw)))
        self._notify()
        if status == 429:
            return web.json_response({"error": {"code": "TooManyRequests"}}, status=429, headers={"Retry-After": value})
        if answer is None:
            code = {401: "Unauthorized", 413: "MessageSizeTooBig"}.get(status, "ServiceError")
            return web.json_response({"error": {"code": code, "message": code}}, status=status)
        return web.json_response(payload, status=status)

    async def _answer(self, request: web.Request, body: Any) -> tuple[int, Any]:
        conversation = request.match_info["conversation"]
        if request.method == "GET":
            person = self.members.get(request.match_info["rest"].removeprefix("members/"))
            if person is None:
                return 404, {"error": {"code": "NotFound", "message": "member not found"}}
            return 200, person.member
        if not isinstance(body, dict) or body.get("type") != "message":
            return 400, {"error": {"code": "BadArgument", "message": "not an activity"}}
        if request.method == "POST":
            activity_id = str(next(self._ids))
            thread = conversation.partition(";messageid=")[2] or activity_id
            self.activities[activity_id] = body | {"id": activity_id, "conversation": {"id": conversation}}
            self.history.setdefault(thread, []).append(self.activities[activity_id])
            if self.on_post is not None and body.get("attachments"):
                self.on_post(activity_id)
                await anyio.sleep(0.05)  # the press is on its way before the bot has its answer
            return 201, {"id": activity_id}
        activity_id = request.match_info["rest"].removeprefix("activities/")
        if activity_id not in self.activities:
            return 404, {"error": {"code": "NotFound", "message": "activity not found"}}
        self.activities[activity_id] = body | {"id": activity_id, "conversation": {"id": conversation}}
        return 200, {"id": activity_id}


def card_of(activity: dict[str, Any]) -> dict[str, Any]:
    (attachment,) = [a for a in activity.get("attachments", []) if a.get("contentType") == CARD]
    return attachment["content"]


@asynccontextmanager
async def fake_teams() -> AsyncIterator[FakeTeams]:
    """A FakeTeams (with its identity provider) serving on a free loopback port."""
    async with fake_identity() as identity:
        fake = FakeTeams(identity)
        app = web.Application(client_max_size=4 << 20)
        app.router.add_post(f"/{TENANT}/oauth2/v2.0/token", fake._token)
        app.router.add_route("*", "/amer/v3/conversations/{conversation}/{rest:.*}", fake._connector)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        fake.url = f"http://{host}:{port}"
        try:
            yield fake
        finally:
            await runner.cleanup()
