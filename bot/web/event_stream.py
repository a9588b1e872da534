"""The live event stream of one open page (`/events`): server-sent events from the feed, with a heartbeat while idle.

The stream carries ids and a count, never rendered cards: a page fetches a card's HTML when it shows it, so memory
does not grow with the size of the questions being pushed.
"""

from __future__ import annotations

import anyio
from aiohttp import web

from bot.web.auth import secured
from bot.web.shown import ShownQuestions

HEARTBEAT_SECONDS = 15
"""How often an idle event stream sends a comment: proxies keep it open, and a closed tab is noticed."""


class EventStream:
    """Serves `/events` from `shown`'s feed, for as long as the page listens or the feed is open."""

    def __init__(self, shown: ShownQuestions) -> None:
        self.shown = shown

    async def serve(self, request: web.Request) -> web.StreamResponse:
        response = secured(
            web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        )
        await response.prepare(request)
        try:
            with self.shown.feed.subscribe(request.headers.get("Last-Event-ID")) as (missed, stream):
                self.shown.stream_opened()
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
