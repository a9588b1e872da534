"""Debian's Chromium, launched headless through Playwright: one way to start it for every browser test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from aiohttp import web
from playwright.async_api import Browser, async_playwright

from bot.web import WebInbox
from tests.system_packages import require_debian_package

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@asynccontextmanager
async def chromium_running(
    *more_args: str, why: str = "the browser tests drive a real Chromium"
) -> AsyncIterator[Browser]:
    """Chromium with `CHROMIUM_ARGS` and `more_args`; installed with apt when missing and we are root, else the test
    skips (or fails under CI), as `require_debian_package` says."""
    require_debian_package("chromium", CHROMIUM, why=why)
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, *more_args])
        try:
            yield launched
        finally:
            await launched.close()


@asynccontextmanager
async def inbox_on_a_socket(
    chromium: Browser, inbox: WebInbox, *more_routes: Callable[[web.Application], None]
) -> AsyncIterator[str]:
    """The inbox (and `more_routes`) on a real socket, 127.0.0.1 and a free port; yields its base URL.

    Every page is closed before the server stops: fixtures tear down in reverse, so the test's page would otherwise
    outlive the server, and its event stream reconnecting into the shutdown leaves a socket that a later test's
    garbage collection reports as a ResourceWarning."""
    app = web.Application()
    inbox.add_routes(app)
    for add_routes in more_routes:
        add_routes(app)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        port = next(address[1] for address in runner.addresses if isinstance(address, tuple))
        yield f"http://127.0.0.1:{port}"
        for context in chromium.contexts:
            await context.close()
        await inbox.close()
    finally:
        await runner.cleanup()
