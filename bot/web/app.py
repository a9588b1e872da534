"""The web inbox's HTTP side: the pages, the answer form's POST, the live event stream, and the static files.

Forms work without JavaScript (POST, then a redirect back to the inbox page it came from); the script only adds live
updates. Every route but the static files needs the session (see auth.py); every answer goes through `Ledger.submit`,
so the first answer from any channel wins and a late one is told who answered.

The live feed carries ids and a count, never rendered cards: a page fetches a card's HTML (`/questions/{id}/card`)
when it shows it, so memory does not grow with the size of the questions being pushed.

This class wires the parts together; each lives in its own module: `shown` (what is on show, and the count), `pages`,
`answering` (with `form_body`), `event_stream`, `static_files` and `responses`.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

import anyio
from aiohttp import web

from bot.channels.base import Channel, Sent
from bot.channels.replies import Replies
from bot.questions.ledger import Ledger
from bot.questions.routing import Route, Router
from bot.store.records import QuestionRecord
from bot.web.answering import Answering
from bot.web.bulk import BulkApproval
from bot.web.event_stream import EventStream
from bot.web.gate import Gate, TokenGate, guarded
from bot.web.installable import AppShell
from bot.web.pages import InboxPages
from bot.web.render import NO_TITLES, Titles
from bot.web.session import Sessions
from bot.web.settings import WebSettings
from bot.web.shown import ShownQuestions
from bot.web.sign_in import SignIn
from bot.web.static_files import StaticFiles

if TYPE_CHECKING:
    from bot.web.push.web_push import WebPush

SESSION_SECRET = "web.session_secret"
"""The store's name for the session key handraise made, used when `[web] session_secret_env` is not set."""


class WebInbox(Channel):
    """The web inbox as a channel: delivering a question only means the inbox now lists it.

    The store is the inbox's source of truth (a question with a `web` delivery is on show), so nothing is sent
    anywhere; `deliver` tells open pages about the new question. Answers come in through the answer form's POST.
    """

    name = "web"
    sends_out = False

    def __init__(
        self,
        ledger: Ledger,
        settings: WebSettings,
        *,
        token: str | None = None,
        titles: Titles = NO_TITLES,
        sign_in: SignIn | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self._store = ledger.store
        self.titles = titles
        """How people read the channels' names (the registry's titles), for who answered where."""
        self.token = token if token is not None else secrets.token_urlsafe(24)
        # Usable before it is installed (a page that only lists questions); install_channel attaches the program's.
        self.attach(Replies(self, ledger, Router([self.name], {self.name: settings.subscriptions})))
        self.sign_in = sign_in
        """With `[web.sign_in]`: the gate that signs people in; the token link then opens nothing."""
        self._auth: Gate = sign_in if sign_in is not None else TokenGate(self.token)
        self.shown = ShownQuestions(self, ledger)
        self._pages = InboxPages(self, self._auth, self.shown, titles)
        self._answering = Answering(self, self._auth, self.shown, self._pages)
        self._events = EventStream(self.shown)
        self._static = StaticFiles()
        self._app_shell = AppShell()
        self.push: WebPush | None = None
        """With `[web.push]`: new questions pushed to the devices of the people who may answer them."""
        if settings.pushes and settings.push is not None and sign_in is not None:
            from bot.web.push.web_push import WebPush  # its cryptography loads only when pushing

            self.push = WebPush(self, settings.push, sign_in, sign_in.public_url)
            self.offer_push()

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        await self.shown.show(question)
        if self.push is not None:
            self.push.announce(question)
        return Sent(key=question.id)

    def links(self, base_url: str) -> dict[str, str]:
        return {"web inbox": base_url.rstrip("/") + "/" if self.sign_in is not None else self.url(base_url)}

    def responders(self, route: Route) -> list[str]:
        """The route's own responders, else `[web] responders`; empty means anyone who can open the inbox."""
        return route.responders or list(self.settings.responders)

    async def responders_for(self, question: QuestionRecord) -> list[str]:
        """Who may answer `question` in the inbox, by the current config (the answer form asks for a name then)."""
        return await self.replies.responders(question)

    def offer_push(self, offered: bool = True) -> None:
        """Offer signed-in people "Turn on notifications" on the inbox page: call it when the server sends Web Push
        (`[web.push]`), whose routes (`/push/key`, `/push/subscriptions`) the page's script then uses."""
        self._pages.push_offered = offered

    def add_routes(self, app: web.Application) -> None:
        """Mount the inbox at `/` (with `/history`, `/events`, `/questions/{id}/card`, `/questions/{id}/answer`,
        `/static/…`, and the installable app's `/manifest.webmanifest` and `/sw.js`)."""
        app.router.add_get("/", self._pages.inbox)  # it checks the gate itself: `?token=` signs a browser in
        app.router.add_get("/history", guarded(self._auth, self._pages.history))
        app.router.add_get("/events", guarded(self._auth, self._events.serve))
        app.router.add_get("/questions/waiting", guarded(self._auth, self._pages.waiting))
        app.router.add_get("/questions/{id}/card", guarded(self._auth, self._pages.card_fragment))
        app.router.add_post("/questions/{id}/answer", guarded(self._auth, self._answering.answer))
        app.router.add_post("/questions/approve", guarded(self._auth, BulkApproval(self, self._auth).approve))
        app.router.add_get("/static/{name}", self._static.serve)
        self._app_shell.add_routes(app)  # public, as the static files are: browsers fetch them without cookies
        if self.sign_in is not None:
            self.sign_in.add_routes(app)
        if self.push is not None:
            self.push.add_routes(app)

    def url(self, base: str) -> str:
        """The link that opens the inbox and signs the browser in, e.g. `http://127.0.0.1:8765/?token=…`."""
        return f"{base.rstrip('/')}/?{urlencode({'token': self.token}, quote_via=quote)}"

    async def prepare(self) -> None:
        """With sign-in on and no `session_secret_env`: sign sessions with the key kept in the store, made on first
        start, so that sign-ins outlive restarts and every replica on the same store accepts them."""
        if self.sign_in is not None and self.settings.session_secret_env is None:
            secret = await self._store.keep_value(SESSION_SECRET, secrets.token_urlsafe(32))
            self.sign_in.sessions = Sessions(secret, self.settings.session_lifetime)
        if self.push is not None:
            await self.push.keys()  # made on first start, before anyone subscribes; a kept key that is bad stops here

    async def run(self) -> None:
        """Count the waiting questions again after other replicas' changes, a burst of them at once: this process
        counts its own as it goes, but cannot tell how another replica's change moved the count. With `[web.push]`,
        push new questions meanwhile."""
        if self.push is None:
            await self.shown.recount()
            return
        async with anyio.create_task_group() as group:
            group.start_soon(self.shown.recount)
            group.start_soon(self.push.run)

    async def close(self) -> None:
        """End the open event streams (so the server stops at once) and stop watching the ledger."""
        self.shown.close()
        if self.push is not None:
            await self.push.close()
