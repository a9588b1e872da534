"""Who may use the inbox when `[web.sign_in]` is set: the people the company's OpenID Connect provider vouches for
and `allowed` lists. An unsigned visit goes straight to the provider; `/auth/callback` checks what comes back and
sets the session cookie (see session.py); `/auth/sign-out` ends it.

Refusals are 4xx pages that say why (with a link to sign in again), and go to the log, not the questions' audit:
no question was touched.
"""

from __future__ import annotations

import hmac
import logging

from aiohttp import web

from bot.web.auth import redirect
from bot.web.form_body import read_form
from bot.web.forms import FormData, first
from bot.web.oidc import Attempt, ProviderUnreachable, RelyingParty, SignInRefused
from bot.web.render import render_account, render_message
from bot.web.responses import html_page
from bot.web.session import FLOW_COOKIE, FLOW_LIFETIME, SESSION_COOKIE, Sessions
from bot.web.sign_in_settings import SignInSettings

log = logging.getLogger("handraise.web.sign_in")
CALLBACK = "/auth/callback"
PAGES = frozenset({"/", "/history"})
"""Where an unsigned visit goes straight to the provider; the card fragments, the event stream and the answer POSTs
are the page's own requests and get a 401 instead (a redirect there would lose what was typed)."""


class SignIn:
    """The inbox's gate with sign-in on; `InboxAuth`'s counterpart (same methods), and the `/auth/…` routes."""

    def __init__(
        self, settings: SignInSettings, client_secret: str, sessions: Sessions, public_url: str | None = None
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.public_url = public_url.rstrip("/") if public_url else None
        self.party = RelyingParty(settings.issuer, settings.client_id, client_secret)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/auth/sign-in", self.sign_in)
        app.router.add_get(CALLBACK, self.callback)
        app.router.add_post("/auth/sign-out", self.sign_out)

    # --- the gate's methods, as InboxAuth has them ---------------------------------------------------------------

    def person(self, request: web.Request) -> str | None:
        """The signed-in email, when the session cookie holds and the person is still allowed."""
        email = self.sessions.email(request.cookies.get(SESSION_COOKIE))
        return email if email is not None and self.settings.allows(email) else None

    def allows(self, request: web.Request) -> bool:
        return self.person(request) is not None

    async def refuse(self, request: web.Request) -> web.StreamResponse:
        if request.method == "GET" and request.path in PAGES:
            return await self._to_provider(request, request.path_qs)
        message = "Your session has ended (or this browser never signed in). Sign in again."
        return html_page(render_message("Sign in", message, sign_in=True), 401)

    def csrf_for(self, request: web.Request) -> str:
        email = self.person(request)
        return self.sessions.csrf(email) if email is not None else ""

    def csrf_ok(self, request: web.Request, form: FormData) -> bool:
        expected = self.csrf_for(request)
        return bool(expected) and hmac.compare_digest((first(form, "csrf") or "").encode(), expected.encode())

    async def open_link(self, request: web.Request, offered: str) -> web.StreamResponse | None:
        return None  # with sign-in on, the token link opens nothing

    def account(self, request: web.Request) -> str:
        email = self.person(request)
        return render_account(email, self.sessions.csrf(email)) if email is not None else ""

    # --- the routes ----------------------------------------------------------------------------------------------

    async def sign_in(self, request: web.Request) -> web.StreamResponse:
        return await self._to_provider(request, "/")

    async def callback(self, request: web.Request) -> web.StreamResponse:
        found = self.sessions.attempt(request.cookies.get(FLOW_COOKIE))
        state, code, error = (request.query.get(name) for name in ("state", "code", "error"))
        if error is not None:
            return self._refused(request, 400, f"the provider did not sign you in ({error[:100]})")
        if found is None:
            why = "this sign-in was not started in this browser, or took longer than ten minutes"
            return self._refused(request, 400, why)
        attempt, back_to = found
        if state is None or state != attempt.state:
            return self._refused(request, 400, "the sign-in's state does not match the one this browser started")
        if not code:
            return self._refused(request, 400, "the provider sent no authorization code")
        try:
            email = await self.party.finish(code, attempt, self._redirect_uri(request))
        except SignInRefused as refused:
            return self._refused(request, 401, str(refused))
        except ProviderUnreachable as down:
            return self._unreachable(down)
        if not self.settings.allows(email):
            return self._refused(request, 403, f"{email} is not among the people allowed to use this inbox", email)
        log.info("%s signed in to the web inbox", email)
        response = redirect(back_to)
        self._set(request, response, SESSION_COOKIE, self.sessions.issue(email), self.sessions.lifetime.total_seconds())
        response.del_cookie(FLOW_COOKIE, path="/")
        return response

    async def sign_out(self, request: web.Request) -> web.StreamResponse:
        if self.csrf_ok(request, await read_form(request)):
            response = html_page(render_message("Signed out", "You are signed out of the inbox.", sign_in=True))
            response.del_cookie(SESSION_COOKIE, path="/")
            return response
        return html_page(render_message("Form expired", "Reload the inbox and sign out again."), 403)

    # --- helpers -------------------------------------------------------------------------------------------------

    async def _to_provider(self, request: web.Request, back_to: str) -> web.StreamResponse:
        attempt = Attempt.new()
        try:
            location = await self.party.authorization_url(attempt, self._redirect_uri(request))
        except ProviderUnreachable as down:
            return self._unreachable(down)
        response = redirect(location)
        self._set(request, response, FLOW_COOKIE, self.sessions.start(attempt, _local(back_to)), FLOW_LIFETIME.seconds)
        return response

    def _redirect_uri(self, request: web.Request) -> str:
        base = self.public_url or f"{request.scheme}://{request.host}"
        return base + CALLBACK

    def _set(self, request: web.Request, response: web.StreamResponse, name: str, value: str, age: float) -> None:
        secure = request.secure or (self.public_url or "").startswith("https://")
        # Lax, not Strict: the provider's redirect back here is a cross-site navigation.
        response.set_cookie(
            name, value, max_age=int(age), path="/", httponly=True, samesite="Lax", secure=secure or None
        )

    def _refused(self, request: web.Request, status: int, why: str, email: str | None = None) -> web.StreamResponse:
        log.warning("web inbox sign-in refused (%s) from %s: %s", email or "unknown", request.remote, why)
        response = html_page(render_message("Not signed in", f"You are not signed in: {why}.", sign_in=True), status)
        response.del_cookie(FLOW_COOKIE, path="/")
        return response

    def _unreachable(self, down: Exception) -> web.StreamResponse:
        log.error("web inbox sign-in: the identity provider is unreachable: %s", down)
        message = "The company's sign-in service did not answer as expected; try again in a moment."
        response = html_page(render_message("Sign-in unavailable", message, sign_in=True), 502)
        response.headers["Retry-After"] = "5"
        return response


def _local(path: str) -> str:
    """`path` when it stays on this server, else `/` (never an open redirect)."""
    return path if path.startswith("/") and not path.startswith("//") and "\\" not in path else "/"
