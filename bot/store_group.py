"""Small writes grouped into one transaction: the commit is most of what a one-row write costs.

A background write that acknowledges nothing by itself (recording where a question was delivered) can wait for the
rest of the current turn of the event loop. Every such write queued in that turn runs in one transaction, each in its
own savepoint, so one that fails (a duplicate key) fails alone while the others are committed together.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Generic, TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]


class _Queued(Generic[T]):
    def __init__(self, work: Work[T]) -> None:
        self.work = work
        self.done: anyio.Event | None = None  # only a waiting follower needs one; creating it is not free
        self.result: T | None = None
        self.error: Exception | None = None


class WriteGroup:
    """Runs queued writes together. `write()` opens the store's write transaction; `failure` maps a SQLite error to
    the store's own."""

    def __init__(
        self,
        write: Callable[[], AbstractContextManager[sqlite3.Connection]],
        failure: Callable[[sqlite3.Error], Exception],
    ) -> None:
        self._write = write
        self._failure = failure
        self._queue: list[_Queued[Any]] = []

    async def run(self, work: Work[T]) -> T:
        """`work(db)` inside a transaction shared with the other writes of this turn; its result, or its error."""
        entry = _Queued(work)
        self._queue.append(entry)
        if len(self._queue) == 1:
            # The first one writes for everyone, and must, even if its own caller is cancelled meanwhile.
            with anyio.CancelScope(shield=True):
                await anyio.lowlevel.checkpoint()
                self._flush()
        else:
            entry.done = anyio.Event()
            await entry.done.wait()
        if entry.error is not None:
            raise entry.error
        return entry.result  # type: ignore[return-value]

    def _flush(self) -> None:
        batch, self._queue = self._queue, []
        try:
            with self._write() as db:
                for entry in batch:
                    db.execute("SAVEPOINT grouped_write")
                    try:
                        entry.result = entry.work(db)
                    except Exception as error:
                        db.execute("ROLLBACK TO grouped_write")
                        entry.error = self._failure(error) if isinstance(error, sqlite3.Error) else error
                    db.execute("RELEASE grouped_write")
        except Exception as failure:
            # The transaction itself failed (disk full at COMMIT): none of it was written.
            for entry in batch:
                entry.error = failure
        finally:
            for entry in batch:
                if entry.done is not None:
                    entry.done.set()
