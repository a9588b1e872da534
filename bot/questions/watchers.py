"""Who hears of questions changing (the web inbox, the channels that follow other replicas), and telling them: one
watcher that fails is logged and never stops the others."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal

from bot.store.records import QuestionRecord

# The ledger's name, as before its watchers had a module of their own: log filters that name it keep working.
log = logging.getLogger("bot.questions.ledger")

ChangeKind = Literal["asked", "partial", "resolved"]
ChangeListener = Callable[[ChangeKind, QuestionRecord], Awaitable[None]]
ShownListener = Callable[[str, QuestionRecord], Awaitable[None]]
"""Called with a channel's name when another replica has shown a question there."""


class Watchers:
    """The listeners of one ledger: for changes to questions, and for questions other replicas have shown."""

    def __init__(self) -> None:
        self._changes: list[ChangeListener] = []
        self._shown: list[ShownListener] = []

    def watch(self, listener: ChangeListener) -> Callable[[], None]:
        """Call `listener(kind, record)` on every new, partially answered or resolved question; returns a disposer."""
        self._changes.append(listener)

        def dispose() -> None:
            if listener in self._changes:
                self._changes.remove(listener)

        return dispose

    def watch_shown(self, listener: ShownListener) -> Callable[[], None]:
        """Call `listener(channel, record)` when the change feed finds a question shown on `channel` by another
        replica (this process's own channels show theirs themselves); returns a disposer."""
        self._shown.append(listener)

        def dispose() -> None:
            if listener in self._shown:
                self._shown.remove(listener)

        return dispose

    async def tell(self, kind: ChangeKind, record: QuestionRecord) -> None:
        for listener in list(self._changes):
            try:
                await listener(kind, record)
            except Exception:
                log.exception("a question watcher failed")

    async def tell_shown(self, channel: str, record: QuestionRecord) -> None:
        for listener in list(self._shown):
            try:
                await listener(channel, record)
            except Exception:
                log.exception("a question watcher failed")
