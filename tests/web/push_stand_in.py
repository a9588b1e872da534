"""A stand-in for the server's Web Push endpoints, as the page and the service worker use them (the real ones live in
bot/web/push/): `GET /push/key`, `POST`/`DELETE /push/subscriptions` (session cookie and CSRF header checked as the
real ones must) and an answer URL taking a bearer token. It records what it was sent, and answers as told."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import anyio
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from bot.questions.ledger import Ledger
from bot.web import WebInbox
from bot.web.session import SESSION_COOKIE, Sessions
from bot.web.settings import WebSettings
from bot.web.sign_in import SignIn
from bot.web.sign_in_settings import SignInSettings

SECRET = "the push tests' session secret"
PERSON = "alice@example.org"
ANSWER_TOKEN = "one-device-one-question-token"


def sessions() -> Sessions:
    return Sessions(SECRET, timedelta(hours=1))


def signed_in_inbox(ledger: Ledger) -> WebInbox:
    """An inbox with sign-in on, whose session cookie the tests make with `sessions().issue` (no provider is asked:
    a page's request with a valid cookie never goes there)."""
    settings = SignInSettings(
        issuer="http://127.0.0.1:9", client_id="handraise", client_secret_env="UNUSED", allowed=["@example.org"]
    )
    return WebInbox(ledger, WebSettings(), sign_in=SignIn(settings, "unused", sessions()))


def public_key() -> str:
    """A VAPID public key as the real endpoint gives it: an uncompressed P-256 point, base64url without padding."""
    point = (
        ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    )
    return base64.urlsafe_b64encode(point).rstrip(b"=").decode()


@dataclass
class Call:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class PushStandIn:
    key: str = field(default_factory=public_key)
    calls: list[Call] = field(default_factory=list[Call])
    subscription_status: int = 201
    """What `POST /push/subscriptions` answers (a 4xx to test the page's words)."""
    answer_status: int = 204
    answered: anyio.Event = field(default_factory=anyio.Event)
    """Set when an answer came in (make the stand-in inside the event loop)."""

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/push/key", self.give_key)
        app.router.add_post("/push/subscriptions", self.subscriptions)
        app.router.add_delete("/push/subscriptions", self.subscriptions)
        app.router.add_post("/push/answers/{id}", self.answer)

    def made(self, method: str, path: str) -> list[Call]:
        return [call for call in self.calls if call.method == method and call.path == path]

    async def _record(self, request: web.Request) -> Call:
        text = await request.text()
        try:
            body = json.loads(text) if text else None
        except ValueError:
            body = text
        call = Call(request.method, request.path, dict(request.headers), body)
        self.calls.append(call)
        return call

    @staticmethod
    def _person(request: web.Request) -> str | None:
        return sessions().email(request.cookies.get(SESSION_COOKIE))

    async def give_key(self, request: web.Request) -> web.StreamResponse:
        await self._record(request)
        if self._person(request) is None:
            return web.json_response({"error": "sign in"}, status=401)
        return web.json_response({"publicKey": self.key})

    async def subscriptions(self, request: web.Request) -> web.StreamResponse:
        call = await self._record(request)
        person = self._person(request)
        if person is None:
            return web.json_response({"error": "sign in"}, status=401)
        if call.headers.get("X-CSRF-Token") != sessions().csrf(person):
            return web.json_response({"error": "csrf"}, status=403)
        if request.method == "DELETE":
            return web.Response(status=204)
        status = self.subscription_status
        message = "notifications are on for this device" if status < 300 else "5 devices already get notifications"
        return web.json_response({"ok": status < 300, "message": message}, status=status)

    async def answer(self, request: web.Request) -> web.StreamResponse:
        call = await self._record(request)
        self.answered.set()
        if call.headers.get("Authorization") != f"Bearer {ANSWER_TOKEN}":
            return web.json_response({"error": "token"}, status=401)
        return web.Response(status=self.answer_status)
