"""The inbox's stylesheet, scripts and icons, read once from the package and served from memory."""

from __future__ import annotations

from importlib import resources

from aiohttp import web

from bot.web.auth import secured
from bot.web.render import render_message
from bot.web.responses import html_page

STATIC_TYPES = {
    "inbox.css": "text/css",
    "inbox.js": "text/javascript",
    "push.js": "text/javascript",
    "icon-192.png": "image/png",
    "icon-512.png": "image/png",
}
IMMUTABLE = frozenset({"icon-192.png", "icon-512.png"})
"""Files a browser may keep a day without asking again: the icons change only with a new drawing."""


class StaticFiles:
    """Serves `/static/{name}`."""

    def __init__(self) -> None:
        self._files = {name: (resources.files("bot.web") / "static" / name).read_bytes() for name in STATIC_TYPES}

    async def serve(self, request: web.Request) -> web.StreamResponse:
        # Public on purpose: they hold nothing secret, and the sign-in page needs its stylesheet.
        name = request.match_info["name"]
        if name not in STATIC_TYPES:
            return html_page(render_message("Not found", "There is no such file."), 404)
        kind = STATIC_TYPES[name]
        text = kind.startswith("text/")
        response = web.Response(body=self._files[name], content_type=kind, charset="utf-8" if text else None)
        response.headers["Cache-Control"] = "public, max-age=86400" if name in IMMUTABLE else "no-cache"
        return secured(response)
