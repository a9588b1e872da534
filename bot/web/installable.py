"""The inbox as an installable app: its web app manifest and its service worker (static/sw.js), both at the root so
that the worker's scope is the whole inbox.

Both are public, as the stylesheet is: a browser fetches the manifest and updates the worker without cookies, and
neither holds anything of a person. Icons are static files (`/static/icon-192.png`, `/static/icon-512.png`).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from aiohttp import web

from bot.web.auth import secured

MANIFEST_PATH = "/manifest.webmanifest"
WORKER_PATH = "/sw.js"
THEME_COLOUR = "#ffffff"
"""The top bar's colour in the light scheme (inbox.css `--surface`): the installed app's title bar matches it."""
THEME_COLOUR_DARK = "#1b1e23"
"""`--surface` in the dark scheme."""
BACKGROUND_COLOUR = "#f4f5f7"
"""The page's background (inbox.css `--bg`), shown while the installed app starts."""
ICON_SIZES = (192, 512)


def icon_path(size: int) -> str:
    return f"/static/icon-{size}.png"


def app_manifest() -> dict[str, Any]:
    """The manifest: one icon file per size serves as `any` and as `maskable` (its hand stays in the safe circle)."""
    icons = [
        {"src": icon_path(size), "sizes": f"{size}x{size}", "type": "image/png", "purpose": purpose}
        for purpose in ("any", "maskable")
        for size in ICON_SIZES
    ]
    return {
        "name": "handraise",
        "short_name": "handraise",
        "description": "Questions from your agents, waiting for an answer.",
        "id": "/",
        "start_url": "/",
        "scope": "/",
        "display": "standalone",
        "theme_color": THEME_COLOUR,
        "background_color": BACKGROUND_COLOUR,
        "icons": icons,
    }


class AppShell:
    """Serves `/manifest.webmanifest` and `/sw.js` from memory."""

    def __init__(self) -> None:
        self._manifest = json.dumps(app_manifest(), indent=1).encode()
        self._worker = (resources.files("bot.web") / "static" / "sw.js").read_bytes()

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get(MANIFEST_PATH, self.manifest)
        app.router.add_get(WORKER_PATH, self.worker)

    async def manifest(self, request: web.Request) -> web.StreamResponse:
        response = web.Response(body=self._manifest, content_type="application/manifest+json", charset="utf-8")
        response.headers["Cache-Control"] = "public, max-age=3600"
        return secured(response)

    async def worker(self, request: web.Request) -> web.StreamResponse:
        # Revalidated on every update check, so a new handraise's worker replaces the old one at the next visit.
        response = web.Response(body=self._worker, content_type="text/javascript", charset="utf-8")
        response.headers["Cache-Control"] = "no-cache"
        return secured(response)
