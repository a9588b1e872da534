"""The web inbox as a channel: delivering a question only means the inbox now lists it.

The store is the inbox's source of truth (a question with a `web` delivery is on show), so nothing is sent anywhere;
`deliver` only tells open pages about the new question.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.channel import Channel, Sent
from bot.config import WebSettings
from bot.records import QuestionRecord
from bot.routing import Route, Router

ShownListener = Callable[[QuestionRecord], None]


class WebChannel(Channel):
    """Delivers to the web inbox; `on_shown` hears of each question as it goes on show."""

    name = "web"

    def __init__(self, settings: WebSettings | None = None, on_shown: ShownListener | None = None) -> None:
        super().__init__()
        self.settings = settings or WebSettings()
        self.on_shown = on_shown
        self._router = Router([self.name], {self.name: self.settings.subscriptions})

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        if self.on_shown is not None:
            self.on_shown(question)
        return Sent(key=question.id)

    def responders_for(self, question: QuestionRecord) -> list[str]:
        """Who may answer `question` in the inbox, by the current config; empty means anyone who can open it.

        The route's own responders, else `[web] responders`. Read at answer time, not stored at delivery, so that
        removing someone from the config takes effect for questions already waiting.
        """
        route = self._router.route(self.name, question.agent)
        return (route.responders if route is not None else []) or list(self.settings.responders)
