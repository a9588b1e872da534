"""What the inbox's pages ask of whoever guards them: the token link (`TokenGate`) or sign-in (`sign_in.SignIn`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from aiohttp import web

from bot.web.auth import InboxAuth
from bot.web.forms import FormData
from bot.web.render import render_message
from bot.web.responses import UNAUTHORISED, html_page, unauthorised

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Gate(Protocol):
    def allows(self, request: web.Request) -> bool: ...

    async def refuse(self, request: web.Request) -> web.StreamResponse:
        """What a request that `allows` refused gets instead."""
        ...

    def person(self, request: web.Request) -> str | None:
        """Who is signed in, when the gate knows people (None with the token link: everyone is the same)."""
        ...

    def csrf_for(self, request: web.Request) -> str: ...

    def csrf_ok(self, request: web.Request, form: FormData) -> bool: ...

    def account(self, request: web.Request) -> str:
        """The page header's "Signed in as …" and sign-out form (nothing with the token link)."""
        ...

    async def open_link(self, request: web.Request, offered: str) -> web.StreamResponse | None:
        """`/?token=`: the token link's sign-in, or None when this gate has no token link."""
        ...


class TokenGate(InboxAuth):
    """The token link printed at start-up, as a gate: the inbox without `[web.sign_in]`."""

    async def refuse(self, request: web.Request) -> web.StreamResponse:
        return unauthorised()

    def person(self, request: web.Request) -> str | None:
        return None

    def csrf_for(self, request: web.Request) -> str:
        return self.csrf

    def csrf_ok(self, request: web.Request, form: FormData) -> bool:  # pyright: ignore[reportIncompatibleMethodOverride]
        return super().csrf_ok(form)

    def account(self, request: web.Request) -> str:
        return ""

    async def open_link(self, request: web.Request, offered: str) -> web.StreamResponse | None:
        return self.login(request, offered) or html_page(render_message("Wrong link", UNAUTHORISED), 401)


def guarded(auth: Gate, handler: Handler) -> Handler:
    """`handler` for signed-in browsers only; others are told to open the inbox link, or sent to sign in."""

    async def guard(request: web.Request) -> web.StreamResponse:
        if not auth.allows(request):
            return await auth.refuse(request)
        return await handler(request)

    return guard
