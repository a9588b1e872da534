"""The push routes: the page's (`GET /push/key`, `POST` and `DELETE /push/subscriptions`, signed in, with the
inbox's CSRF token in `X-CSRF-Token` and no foreign `Origin`) and the service worker's answer from a notification's
button (`POST /push/answer/{id}`, with the device's one-time answer token as its only credential: no cookie, no
CSRF). Every answer is JSON `{"ok", "message"}`, refusals 4xx, and nothing changes on a refusal.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiohttp import web

from bot.channels.base import Channel
from bot.channels.one_tap import Spent, answer_once
from bot.channels.replies import Accepted, Ended, NotAllowed, Noted, Outcome, Unreadable
from bot.channels.tap_tokens import TapTokenError, TapTokens, device_of
from bot.store.errors import StoreUnavailable
from bot.store.interface import AsyncStore
from bot.store.records import PushSubscription
from bot.web.push.notification import option_of, tappable_options
from bot.web.push.subscription_body import MAX_BODY, BadSubscription, parse_endpoint, parse_subscription
from bot.web.sign_in import SignIn

log = logging.getLogger("handraise.web.push")

MAX_ANSWER_BODY = 1024
MAX_DEVICES = 20
"""Devices one person may subscribe: a phone, a tablet, a few browsers. More is a script, not a person."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Ready = Callable[[], Awaitable[tuple[str, TapTokens]]]
"""The VAPID public key and the answer tokens, once the kept key is read."""
Parsed = TypeVar("Parsed")


def say(status: int, message: str, **more: Any) -> web.Response:
    response = web.json_response({"ok": 200 <= status < 300, "message": message, **more}, status=status)
    response.headers["Cache-Control"] = "no-store"
    return response


class PushRoutes:
    def __init__(
        self, channel: Channel, gate: SignIn, store: AsyncStore, ready: Ready, public_url: str | None = None
    ) -> None:
        self.channel = channel
        self.gate = gate
        self.store = store
        self.ready = ready
        self.public_origin = _origin(public_url) if public_url else None

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/push/key", self._json(self.key))
        app.router.add_post("/push/subscriptions", self._json(self.subscribe))
        app.router.add_delete("/push/subscriptions", self._json(self.unsubscribe))
        app.router.add_post("/push/answer/{id}", self._json(self.answer))

    def _json(self, handler: Handler) -> Handler:
        async def answering(request: web.Request) -> web.StreamResponse:
            try:
                return await handler(request)
            except StoreUnavailable as down:
                response = say(503, f"nothing was changed: {down.message}; try again in a moment")
                response.headers["Retry-After"] = "5"
                return response

        return answering

    # --- the page's routes -----------------------------------------------------------------------------------------

    async def key(self, request: web.Request) -> web.StreamResponse:
        if self.gate.person(request) is None:
            return say(401, "sign in to the inbox first")
        public_key, _ = await self.ready()
        return say(200, "the application server key", publicKey=public_key)

    async def subscribe(self, request: web.Request) -> web.StreamResponse:
        read = await self._page_body(request, parse_subscription)
        if isinstance(read, web.Response):
            return read
        person, device = read
        theirs = await self.store.list_push_subscriptions([person])
        again = any(known.endpoint == device.endpoint for known in theirs)
        if not again and len(theirs) >= MAX_DEVICES:
            return say(409, f"{MAX_DEVICES} devices already get notifications for you; turn one off first")
        now = self.channel.ledger.clock.now()
        await self.store.save_push_subscription(
            PushSubscription(
                endpoint=device.endpoint, person=person, p256dh=device.p256dh, auth=device.auth, created_at=now
            )
        )
        log.info("%s turned notifications on for a device", person)
        return say(200 if again else 201, "notifications are on for this device")

    async def unsubscribe(self, request: web.Request) -> web.StreamResponse:
        read = await self._page_body(request, parse_endpoint)
        if isinstance(read, web.Response):
            return read
        person, endpoint = read
        removed = await self.store.delete_push_subscription(endpoint, person=person)
        return say(200, "notifications are off for this device", removed=removed)

    async def _page_body(
        self, request: web.Request, parse: Callable[[bytes], Parsed]
    ) -> tuple[str, Parsed] | web.Response:
        """Who sent a request of the inbox page and its body as `parse` reads it, or the refusal: those of
        `_page_request`, a body over `MAX_BODY` (413), or one `parse` refuses."""
        person, refused = self._page_request(request)
        if refused is not None:
            return refused
        assert person is not None
        raw = await request.content.read(MAX_BODY + 1)
        if len(raw) > MAX_BODY:
            return say(413, "this is not a push subscription: it is too large")
        try:
            return person, parse(raw)
        except BadSubscription as bad:
            return say(bad.status, str(bad))

    def _page_request(self, request: web.Request) -> tuple[str | None, web.Response | None]:
        """Who sent a request of the inbox page, or the refusal: no session (401), another site (403), no or a
        wrong CSRF token (403)."""
        person = self.gate.person(request)
        if person is None:
            return None, say(401, "sign in to the inbox first")
        if self._cross_site(request):
            return None, say(403, "another web site cannot change your notifications")
        expected = self.gate.csrf_for(request)
        given = request.headers.get("X-CSRF-Token", "")
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            return None, say(403, "the X-CSRF-Token header is missing or out of date; reload the inbox")
        return person, None

    def _cross_site(self, request: web.Request) -> bool:
        if request.headers.get("Sec-Fetch-Site", "").lower() in ("cross-site", "same-site"):
            return True
        origin = request.headers.get("Origin")
        if origin is None:
            return False  # not sent by a browser's script (which always sends Origin on a POST or DELETE)
        origin = origin.lower()
        host = request.host.lower()
        return origin not in (f"http://{host}", f"https://{host}") and origin != self.public_origin

    # --- the service worker's answer ------------------------------------------------------------------------------

    async def answer(self, request: web.Request) -> web.StreamResponse:
        """A button of a notification: answers once, as the device's owner; refused with a 4xx otherwise."""
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer "):
            return say(401, "this needs the notification's answer token")
        _, tokens = await self.ready()
        try:
            token = tokens.read(header.removeprefix("Bearer ").strip())
        except TapTokenError:
            log.warning("web push: an answer with a token this server did not sign was refused")
            return say(401, "this answer token is not valid; nothing was changed")
        question_id = request.match_info["id"]
        if token.question_id != question_id:
            return say(403, "this answer token belongs to another question; nothing was changed")
        if not self.gate.settings.allows(token.person) or not await self._subscribed(token.person, token.device):
            return say(403, "this device no longer gets notifications for you; open the inbox instead")
        option = await _option(request)
        if option is None:
            return say(400, 'send {"action": "<the button\'s action>"}; nothing was changed')
        found = await self.channel.replies.find(question_id, question_id)
        if found is None:
            return say(404, "this inbox has no such question")
        record = found[0]
        if record.status != "pending":
            return _told(Ended(record))
        if option not in tappable_options(record):
            return say(400, "this button answers nothing here; open the question instead")
        outcome = await answer_once(self.channel, token, found, (0, option), how="push")
        if isinstance(outcome, Spent):
            return say(409, "this button was already used; nothing was changed")
        return _told(outcome)

    async def _subscribed(self, person: str, device: str) -> bool:
        return any(device_of(known.endpoint) == device for known in await self.store.list_push_subscriptions([person]))


async def _option(request: web.Request) -> int | None:
    raw = await request.content.read(MAX_ANSWER_BODY + 1)
    if len(raw) > MAX_ANSWER_BODY:
        return None
    try:
        body: Any = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    action = body.get("action") if isinstance(body, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return option_of(action) if isinstance(action, str) else None


def _told(outcome: Outcome) -> web.Response:
    if isinstance(outcome, Accepted):
        if outcome.repeated:
            return say(409, "you already approved this; a second device adds no second approval")
        return say(200, outcome.progress or "Answered. Thank you.")
    if isinstance(outcome, Ended):
        record = outcome.record
        if record is None:
            return say(409, "this question is no longer open; nothing was changed")
        if record.status == "answered":
            return say(409, f"this question was already answered by {record.answered_by}; nothing was changed")
        return say(409, f"this question is closed: it was {record.status}; nothing was changed")
    if isinstance(outcome, NotAllowed):
        return say(403, "you may not answer this question; nothing was changed")
    if isinstance(outcome, Noted):
        return say(200, "Noted.")
    assert isinstance(outcome, Unreadable)
    return say(400, f"{outcome.reason} Nothing was changed.")


def _origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}".lower()
