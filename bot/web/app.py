"""The web inbox's HTTP side: the pages, the answer form's POST, the live event stream, and the static files.

Forms work without JavaScript (POST, then a redirect back to the inbox page it came from); the script only adds live
updates. Every route but the static files needs the session (see auth.py); every answer goes through `Ledger.submit`,
so the first answer from any channel wins and a late one is told who answered.

The live feed carries ids and a count, never rendered cards: a page fetches a card's HTML (`/questions/{id}/card`)
when it shows it, so memory does not grow with the size of the questions being pushed.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from importlib import resources
from urllib.parse import quote, quote_plus, urlencode

import anyio
from aiohttp import web
from yarl import query_to_pairs

from bot.channels.base import Channel, Sent
from bot.channels.replies import Answer, Ended, NotAllowed, Replies, Unreadable
from bot.questions.approvals import progress
from bot.questions.ledger import ChangeKind, Ledger
from bot.questions.routing import Route, Router
from bot.store.errors import StoreUnavailable
from bot.store.records import Delivery, QuestionRecord
from bot.web.auth import InboxAuth, redirect, secured
from bot.web.forms import (
    FormData,
    FormError,
    NotAResponder,
    first,
    not_a_responder,
    parse_answer_form,
    parse_responder,
)
from bot.web.live import LiveFeed
from bot.web.paging import Page
from bot.web.render import NO_TITLES, Card, Titles, render_card, render_history, render_inbox, render_message
from bot.web.settings import WebSettings

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

HEARTBEAT_SECONDS = 15
"""How often an idle event stream sends a comment: proxies keep it open, and a closed tab is noticed."""
PAGE_LIMIT = 100
STATIC_TYPES = {"inbox.css": "text/css", "inbox.js": "text/javascript"}
BY_COOKIE = "handraise_inbox_by"
URL_ENCODED = "application/x-www-form-urlencoded"
MAX_FORM_FIELDS = 1000
"""Fields one posted form may hold (aiohttp's own limit): an answer form has a few per question."""

UNAUTHORISED = (
    "This inbox needs its access link. Open the URL that `handraise serve` printed when it started "
    "(it ends in ?token=…); the token changes each time handraise starts unless one is configured."
)


class UnreadableBody(Exception):
    """A posted body that is not a form: not UTF-8, or too many fields. `status` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class WebInbox(Channel):
    """The web inbox as a channel: delivering a question only means the inbox now lists it.

    The store is the inbox's source of truth (a question with a `web` delivery is on show), so nothing is sent
    anywhere; `deliver` tells open pages about the new question. Answers come in through the answer form's POST.
    """

    name = "web"
    sends_out = False

    def __init__(
        self, ledger: Ledger, settings: WebSettings, *, token: str | None = None, titles: Titles = NO_TITLES
    ) -> None:
        super().__init__()
        self.settings = settings
        self.titles = titles
        """How people read the channels' names (the registry's titles), for who answered where."""
        self.token = token if token is not None else secrets.token_urlsafe(24)
        # Usable before it is installed (a page that only lists questions); install_channel attaches the program's.
        self.attach(Replies(self, ledger, Router([self.name], {self.name: settings.subscriptions})))
        self._auth = InboxAuth(self.token)
        self._feed = LiveFeed()
        self._waiting: int | None = None
        """Questions waiting in the inbox, for open pages; read from the store when first needed."""
        self._showing: set[str] = set()
        """Questions this process put in the inbox that have not ended: their changes need no look in the store."""
        self._unwatch = ledger.watch(self._changed)
        self._unwatch_shown = ledger.watch_shown(self._shown_elsewhere)
        self._recount = anyio.Event()
        self._count_stale = False
        """Other replicas' changes went uncounted while no page listened."""
        self._static = {name: (resources.files("bot.web") / "static" / name).read_bytes() for name in STATIC_TYPES}

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        await self._shown(question)
        return Sent(key=question.id)

    def links(self, base_url: str) -> dict[str, str]:
        return {"web inbox": self.url(base_url)}

    def responders(self, route: Route) -> list[str]:
        """The route's own responders, else `[web] responders`; empty means anyone who can open the inbox."""
        return route.responders or list(self.settings.responders)

    async def responders_for(self, question: QuestionRecord) -> list[str]:
        """Who may answer `question` in the inbox, by the current config (the answer form asks for a name then)."""
        return await self.replies.responders(question)

    def add_routes(self, app: web.Application) -> None:
        """Mount the inbox at `/` (with `/history`, `/events`, `/questions/{id}/card`, `/questions/{id}/answer` and
        `/static/…`)."""
        app.router.add_get("/", self._inbox)
        app.router.add_get("/history", self._guarded(self._history))
        app.router.add_get("/events", self._guarded(self._events))
        app.router.add_get("/questions/{id}/card", self._guarded(self._card_fragment))
        app.router.add_post("/questions/{id}/answer", self._guarded(self._answer))
        app.router.add_get("/static/{name}", self._static_file)

    def url(self, base: str) -> str:
        """The link that opens the inbox and signs the browser in, e.g. `http://127.0.0.1:8765/?token=…`."""
        return f"{base.rstrip('/')}/?{urlencode({'token': self.token}, quote_via=quote)}"

    async def run(self) -> None:
        """Count the waiting questions again after other replicas' changes, a burst of them at once: this process
        counts its own as it goes, but cannot tell how another replica's change moved the count."""
        while True:
            await self._recount.wait()
            self._recount = anyio.Event()
            if not self._feed.subscribers:
                # Nobody shows the count now, and counting grows with the backlog: the next page counts it afresh,
                # and an event stream that opens meanwhile asks for a recount.
                self._count_stale = True
                continue
            try:
                self._waiting = await self._count_waiting()
            except StoreUnavailable:
                continue  # the next change counts again
            self._feed.publish({"kind": "waiting", "waiting": self._waiting})

    async def close(self) -> None:
        """End the open event streams (so the server stops at once) and stop watching the ledger."""
        self._feed.close()
        self._unwatch()
        self._unwatch_shown()

    # --- pages ----------------------------------------------------------------------------------------------------

    async def _inbox(self, request: web.Request) -> web.StreamResponse:
        offered = request.query.get("token")
        if offered is not None:
            return self._auth.login(request, offered) or _page(render_message("Wrong link", UNAUTHORISED), 401)
        if not self._auth.allows(request):
            return _unauthorised()
        notice = await self._sent_notice(request.query.get("answered"))
        return await self._inbox_page(request, [], notice=notice, page=request.query.get("page"))

    async def _history(self, request: web.Request) -> web.StreamResponse:
        store = self.ledger.store
        records = [r for r in await store.list_questions(channel="web", limit=PAGE_LIMIT) if r.status != "pending"]
        return _page(
            render_history(
                [(record, await store.history(question_id=record.id)) for record in records], titles=self.titles
            )
        )

    async def _inbox_page(
        self,
        request: web.Request,
        leading: list[Card],
        *,
        notice: str | None = None,
        status: int = 200,
        page: str | None = None,
    ) -> web.StreamResponse:
        store = self.ledger.store
        # The count is the store's, not the page's: with thousands waiting, a page shows only some of them.
        self._waiting = waiting = await store.count_questions("pending", channel=self.name)
        shown = Page.at(waiting, page)
        offset = shown.first_shown - 1
        pending = await store.list_questions(status="pending", channel=self.name, limit=shown.size, offset=offset)
        listed = {card.record.id for card in leading}
        cards = leading + [await self._card(record) for record in pending if record.id not in listed]
        remembered = request.cookies.get(BY_COOKIE, "")
        html = render_inbox(
            cards, csrf=self._auth.csrf, notice=notice, remembered_by=remembered, page=shown, titles=self.titles
        )
        return _page(html, status)

    async def _card_fragment(self, request: web.Request) -> web.StreamResponse:
        """One question's card, as the live page inserts or refreshes it."""
        question_id = request.match_info["id"]  # the inbox's delivery key
        found = self._shown_and_held(question_id) or await self.replies.delivered(question_id)
        if found is None:
            return _page(render_message("No such question", "This inbox has no such question."), 404)
        remembered = request.cookies.get(BY_COOKIE, "")
        return _page(
            render_card(await self._card(found[0]), csrf=self._auth.csrf, remembered_by=remembered, titles=self.titles)
        )

    async def _card(self, record: QuestionRecord, values: FormData | None = None, error: str | None = None) -> Card:
        return Card(record, await self.responders_for(record), values or {}, error)

    async def _sent_notice(self, question_id: str | None) -> str | None:
        record = await self.ledger.store.get_question(question_id) if question_id else None
        if record is None:
            return None
        title = record.questions[0].header or record.questions[0].question
        if record.status == "pending" and any(approval.via == self.name for approval in record.approvals):
            needed = self.replies.approvals_needed(record, await self.ledger.store.get_delivery(record.id, self.name))
            return f"Approval recorded for “{title}”: {progress(record, needed)}."
        if record.status != "answered" or record.answered_via != "web":
            return None
        return f"Answer sent: “{title}”."

    # --- answering ------------------------------------------------------------------------------------------------

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._answer_form(request)
        except StoreUnavailable as down:
            # Say it to the person, in the page: their answer is not recorded, and it is worth trying again.
            message = f"Your answer was not sent: {down.message} ({down.code}). Go back and send it again later."
            response = _page(render_message("Answer not sent", message), 503)
            response.headers["Retry-After"] = "5"
            return response
        except UnreadableBody as unreadable:
            message = f"Your answer was not sent: {unreadable}."
            return _page(render_message("Answer not sent", message), unreadable.status)

    async def _answer_form(self, request: web.Request) -> web.StreamResponse:
        form = await _read_form(request)
        if not self._auth.csrf_ok(form):
            message = "This form is out of date (handraise may have restarted). Reload the inbox and answer again."
            return _page(render_message("Form expired", message), 403)
        question_id = request.match_info["id"]  # the inbox's delivery key
        found = self._shown_and_held(question_id) or await self.replies.delivered(question_id)
        if found is None:
            return _page(render_message("No such question", "This inbox has no such question."), 404)
        record, delivery = found
        try:
            name = parse_responder(form, await self.responders_for(record))
        except NotAResponder as refused:
            name = refused.name  # the base refuses it, and audits that
        except FormError as bad:
            return await self._not_sent(request, record, form, str(bad))

        def read(record: QuestionRecord, delivery: Delivery) -> Answer:
            return Answer(parse_answer_form(record.questions, form))

        outcome = await self.replies.answer(delivery.key, by=name or self.name, how="form", read=read, found=found)
        if isinstance(outcome, NotAllowed):
            return await self._refused(request, record, form, not_a_responder(outcome.person), 403)
        if isinstance(outcome, Unreadable):
            return await self._not_sent(request, outcome.record, form, outcome.reason)
        if isinstance(outcome, Ended):
            if outcome.record is None:
                return _page(render_message("No such question", "This inbox has no such question."), 404)
            return await self._refused(request, outcome.record, form, _not_sent(outcome.record), 409)
        response = redirect(_answered(record.id, _page_number(form)))
        if name is not None:
            response.set_cookie(BY_COOKIE, name, max_age=365 * 24 * 3600, path="/", httponly=True, samesite="Strict")
        return response

    def _shown_and_held(self, question_id: str) -> tuple[QuestionRecord, Delivery] | None:
        """An answer's question and its delivery here without reading the store, when this process showed it in the
        inbox and holds it (its record is the ledger's, kept current: no change feed runs).

        Only while its route still names the inbox: the delivery's stored part (who could answer and how many
        approvals, as they were when it was shown) counts only once the route is gone, and then it is read. The
        delivery's key is the question id. Anything else (another replica's question, a feed, a stopping ledger)
        is looked up in the store.
        """
        ledger = self.replies.ledger
        pending = ledger.get(question_id)
        if pending is None or question_id not in self._showing or ledger.following or ledger.closing:
            return None
        record = pending.record
        if self.replies.router.route(self.name, record.agent) is None:
            return None
        return record, Delivery(question_id=question_id, channel=self.name, key=question_id)

    async def _not_sent(
        self, request: web.Request, record: QuestionRecord, form: FormData, why: str
    ) -> web.StreamResponse:
        """A form that cannot be sent: what was wrong with it, unless it is too late anyway (that matters more)."""
        if record.status != "pending":
            return await self._refused(request, record, form, _not_sent(record), 409)
        return await self._refused(request, record, form, why, 400)

    async def _refused(
        self, request: web.Request, record: QuestionRecord, form: FormData, message: str, status: int
    ) -> web.StreamResponse:
        """The inbox again (the page the form was on), the refused form first with what was typed and why it was not
        sent."""
        page = str(_page_number(form))
        return await self._inbox_page(request, [await self._card(record, form, message)], status=status, page=page)

    # --- live updates ---------------------------------------------------------------------------------------------

    async def _shown(self, record: QuestionRecord) -> None:
        if self._waiting is not None:
            self._waiting += 1
        else:
            # A first count includes this question only when its delivery was stored with it (an API ask); else
            # the delivery is stored once `deliver` returns.
            counted = await self.ledger.store.has_delivery(record.id, self.name)
            self._waiting = await self._count_waiting() + (0 if counted else 1)
        self._showing.add(record.id)
        self._feed.publish({"kind": "asked", "id": record.id, "waiting": self._waiting})

    async def _shown_elsewhere(self, channel: str, record: QuestionRecord) -> None:
        # Another replica delivered it here: open pages add its card; the count follows.
        if channel == self.name:
            self._feed.publish({"kind": "asked", "id": record.id})
            self._recount.set()

    async def _changed(self, kind: ChangeKind, record: QuestionRecord) -> None:
        # "asked" comes from the channel's `deliver` instead: only then is it known to be the inbox's question.
        if kind == "asked":
            return
        ours = record.id in self._showing or await self.ledger.store.has_delivery(record.id, self.name)
        if not ours:
            return
        if kind == "partial":
            self._feed.publish({"kind": "partial", "id": record.id})
        else:
            self._showing.discard(record.id)
            # A first count is taken after the question ended, so it already leaves it out.
            waiting = self._waiting
            self._waiting = max(0, waiting - 1) if waiting is not None else await self._count_waiting()
            self._feed.publish({"kind": "resolved", "id": record.id, "status": record.status, "waiting": self._waiting})
            if self.ledger.following:
                self._recount.set()  # it may have ended before this process counted it

    async def _count_waiting(self) -> int:
        return await self.ledger.store.count_questions("pending", channel=self.name)

    async def _events(self, request: web.Request) -> web.StreamResponse:
        response = secured(
            web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        )
        await response.prepare(request)
        try:
            with self._feed.subscribe(request.headers.get("Last-Event-ID")) as (missed, stream):
                if self._count_stale:
                    self._count_stale = False
                    self._recount.set()
                await response.write(b"retry: 2000\n\n")
                for event in missed:
                    await response.write(event.encode())
                while True:
                    with anyio.move_on_after(HEARTBEAT_SECONDS) as idle:
                        try:
                            event = await stream.receive()
                        except anyio.EndOfStream:
                            break
                        await response.write(event.encode())
                    if idle.cancelled_caught:
                        await response.write(b": still here\n\n")
        except ConnectionResetError:
            pass  # the page went away
        return response

    # --- plumbing -------------------------------------------------------------------------------------------------

    def _guarded(self, handler: Handler) -> Handler:
        async def guarded(request: web.Request) -> web.StreamResponse:
            if not self._auth.allows(request):
                return _unauthorised()
            return await handler(request)

        return guarded

    async def _static_file(self, request: web.Request) -> web.StreamResponse:
        # Public on purpose: they hold nothing secret, and the sign-in page needs its stylesheet.
        name = request.match_info["name"]
        if name not in STATIC_TYPES:
            return _page(render_message("Not found", "There is no such file."), 404)
        response = web.Response(body=self._static[name], content_type=STATIC_TYPES[name], charset="utf-8")
        response.headers["Cache-Control"] = "no-cache"
        return secured(response)


async def _read_form(request: web.Request) -> dict[str, list[str]]:
    """The posted form: each field's text values, in order.

    The inbox's own forms are URL-encoded UTF-8: their body is split here by the parser aiohttp's `post()` uses, with
    its limit on fields, but without the two multidicts `post()` builds that this would then copy (every answer pays
    for them). Anything else (multipart, another charset) goes through `post()`.
    """
    if request.content_type != URL_ENCODED or request.charset not in (None, "utf-8"):
        posted = await request.post()
        return {key: [value for value in posted.getall(key) if isinstance(value, str)] for key in set(posted.keys())}
    try:
        text = (await request.read()).rstrip().decode()
    except UnicodeDecodeError:
        raise UnreadableBody(400, "the form did not come as UTF-8 text; reload the inbox and answer again") from None
    try:
        pairs = query_to_pairs(text, max_fields=MAX_FORM_FIELDS)
    except ValueError:
        raise UnreadableBody(413, f"a form holds at most {MAX_FORM_FIELDS} fields") from None
    form: dict[str, list[str]] = {}
    for name, value in pairs:
        form.setdefault(name, []).append(value)
    return form


def _page_number(form: FormData) -> int:
    """The inbox page a form was sent from (its hidden `page` field), 1 when it says nothing sensible."""
    requested = first(form, "page")
    return Page.at(10**9, requested).number if requested else 1


def _answered(question_id: str, page: int) -> str:
    """Where a browser goes once its answer is sent: the page it answered on, with a notice about the question."""
    back = f"page={page}&" if page > 1 else ""
    return f"/?{back}answered={quote_plus(question_id)}"


def _not_sent(record: QuestionRecord) -> str:
    return f"Your answer was not sent: this question was already {record.status}."


def _page(text: str, status: int = 200) -> web.StreamResponse:
    response = web.Response(text=text, status=status, content_type="text/html", charset="utf-8")
    response.headers["Cache-Control"] = "no-store"
    return secured(response)


def _unauthorised() -> web.StreamResponse:
    response = _page(render_message("Open the inbox link", UNAUTHORISED), 401)
    response.headers["WWW-Authenticate"] = 'Bearer realm="handraise inbox"'
    return response
