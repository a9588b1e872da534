"""The responses every inbox route answers with: HTML pages that are never cached, and the refusal that a browser
without the session gets from a guarded route (see gate.guarded)."""

from __future__ import annotations

from aiohttp import web

from bot.web.auth import secured
from bot.web.render import render_message

UNAUTHORISED = (
    "This inbox needs its access link. Open the URL that `handraise serve` printed when it started "
    "(it ends in ?token=…); the token changes each time handraise starts unless one is configured."
)


def html_page(text: str, status: int = 200) -> web.StreamResponse:
    """An HTML page, never cached: what it shows changes as questions are answered."""
    response = web.Response(text=text, status=status, content_type="text/html", charset="utf-8")
    response.headers["Cache-Control"] = "no-store"
    return secured(response)


def no_such_question() -> web.StreamResponse:
    return html_page(render_message("No such question", "This inbox has no such question."), 404)


def unauthorised() -> web.StreamResponse:
    response = html_page(render_message("Open the inbox link", UNAUTHORISED), 401)
    response.headers["WWW-Authenticate"] = 'Bearer realm="handraise inbox"'
    return response
