"""A cancellation channel shaped like the web's AbortController, usable from asyncio and trio.

The agent loop owns the controller; answerers and `ask()` watch the signal. Callbacks run synchronously inside
`abort()`, in registration order, so `ask()` can cancel a waiting answerer in the same step. Call `abort()` from
the event loop's thread (use `anyio.from_thread.run_sync` from elsewhere).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio

log = logging.getLogger(__name__)

Dispose = Callable[[], None]


class AbortSignal:
    """Read side of an `AbortController`: `aborted`, `reason`, `await wait()`, `on_abort(callback)`."""

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next_key = 0

    @property
    def aborted(self) -> bool:
        return self._aborted

    @property
    def reason(self) -> object:
        return self._reason

    def on_abort(self, callback: Callable[[], None]) -> Dispose:
        """Run `callback` once when the signal aborts (at once if it already has); returns an idempotent disposer."""
        if self._aborted:
            callback()
            return _noop
        key = self._next_key
        self._next_key += 1
        self._callbacks[key] = callback

        def dispose() -> None:
            self._callbacks.pop(key, None)

        return dispose

    async def wait(self) -> None:
        """Return when the signal aborts."""
        if self._aborted:
            return
        event = anyio.Event()
        dispose = self.on_abort(event.set)
        try:
            await event.wait()
        finally:
            dispose()

    def _abort(self, reason: object) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        callbacks = list(self._callbacks.values())
        self._callbacks.clear()
        for callback in callbacks:
            try:
                callback()
            except Exception:
                # One broken listener must not stop the others from learning of the abort.
                log.exception("an abort callback failed")


class AbortController:
    """Owns an `AbortSignal` and is the only way to abort it."""

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: object = None) -> None:
        """Abort the signal once; later calls do nothing."""
        self.signal._abort(reason)  # pyright: ignore[reportPrivateUsage]


def _noop() -> None:
    return None
