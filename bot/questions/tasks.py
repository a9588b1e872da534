"""Many long-waiting tasks, cheaply: one per pending API question, each waiting for its question to be resolved.

anyio's `start_soon` gives every task its own cancel scope and completion event (about 2 KB on asyncio). At 10,000
pending questions that is a fifth of the memory budget, so these waits run as plain asyncio tasks in a bag that the
program closes on shutdown, and wait on a `Latch` rather than an `anyio.Event` (whose asyncio.Event carries a 624-byte
waiter deque). The bot is asyncio-only anyway (aiohttp, slack-sdk, aiosmtplib, aioimaplib); `core` stays on anyio.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

log = logging.getLogger(__name__)


class Latch:
    """Set once, awaited by any number of tasks: `anyio.Event`'s `set`, `is_set` and `wait`, in a fraction of the
    memory (a list of waiters instead of a deque, no wrapper). A waiter that is cancelled just leaves."""

    __slots__ = ("_set", "_waiters")

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[asyncio.Future[None]] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self) -> None:
        if self._set:
            await anyio.lowlevel.checkpoint()
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            self._waiters.remove(waiter)


class TaskBag:
    """Fire-and-forget tasks that are still owned: `close()` cancels whatever is left and waits for it."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, function: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run `function(*args)` in a new task. Raises RuntimeError once the bag is closed."""
        if self._closed:
            raise RuntimeError("the task bag is closed")
        task = asyncio.ensure_future(function(*args))
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("a background task failed", exc_info=error)

    async def close(self) -> None:
        """Cancel every task still running and wait until they have all finished."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
