"""Group commit for the store: every commit lands at once, and callers that acknowledge one wait for a shared fsync.

The store runs SQLite in WAL mode with `synchronous = NORMAL`: a commit is written to the -wal file but not
fsynced, so first-answer-wins stays one short conditional UPDATE and nothing waits on the disk inside the write
lock. What a power loss could take is exactly the WAL frames written since the last fsync. `await durable()` closes
that gap for everyone at once: it returns only after an fsync of the -wal file that *began after* the caller's
commit. One fsync covers every commit made before it started, so under load many acknowledgements share one, and
callers that arrive while an fsync runs wait for the next one.

The fsyncs run in a thread of the barrier's own that goes from one round to the next without sleeping while
acknowledgements wait: under load no round pays for waking a thread (handing each round to a thread pool, its queue
and condition, cost more of the event loop than the fsync saved). It is woken only from idle, at the end of the
event-loop turn that first needs it, so that the handlers woken in that turn commit first and join the round.
`durable()` runs on asyncio (the store's event loop).

SQLite itself syncs the -wal before a checkpoint copies it into the database file and syncs the database file after,
so checkpointed data is covered too. A -wal file that is new (the first one, or one recreated under another inode)
is followed by an fsync of the directory, so its name survives as well as its bytes.

Checkpoints run here too, after the fsync and in the same worker thread, every `checkpoint_commits` commits:
left to SQLite they run inside whichever COMMIT crosses its threshold, on the event loop, with two fsyncs of their own
that stall every request meanwhile. The store raises SQLite's own threshold well above ours, as a backstop for a
process whose writes nobody awaits `durable()` for.
"""

from __future__ import annotations

import asyncio
import os
import queue
import sqlite3
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

Fsync = Callable[[int], None]

CHECKPOINT_COMMITS = 200
"""Commits between checkpoints: about SQLite's own default of 1,000 pages at the store's 5 to 7 pages per commit.
(Counted in commits: the -wal file keeps its size when SQLite starts it over, so its size says nothing.)"""


class DurabilityBarrier:
    """Counts the store's commits and makes them durable in batches. `committed()` after each commit (from any
    thread), `await durable()` before acknowledging one."""

    def __init__(
        self, database: str | None, fsync: Fsync = os.fsync, checkpoint_commits: int = CHECKPOINT_COMMITS
    ) -> None:
        """`database` is the SQLite file's path, or None for an in-memory store (nothing to sync)."""
        self._database = database
        self.fsync = fsync
        """What a sync calls on each file; tests swap it for a disk that holds, slows or fails."""
        self._checkpoint_commits = checkpoint_commits
        self._checkpointed = 0  # the commit count the last checkpoint began at
        self._checkpointer: sqlite3.Connection | None = None
        self._commits = 0
        self._synced = 0  # commits known to be on disk
        self._file: tuple[int, int, int] | None = None  # (fd, st_dev, st_ino) of the synced -wal file
        # The event loop's side: who waits for which commit count, and the loop that runs them.
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake_due = False
        # Shared with the thread (plain reads and writes of ints and bools, each atomic under the GIL): a round
        # begins by taking `_requests` as served, so a request counted after that start needs another round.
        self._requests = 0
        self._served = 0
        self._idle = False
        self._closed = False
        self._bell: queue.SimpleQueue[None] = queue.SimpleQueue()  # rung to wake the idle thread (C-level, cheap)
        self._thread: threading.Thread | None = None

    @property
    def commits(self) -> int:
        """How many commits it has counted: a figure for benchmarks and tests."""
        return self._commits

    @property
    def idle(self) -> bool:
        """Whether the fsync thread sleeps, waiting to be woken: for tests whose next round must start from rest."""
        return self._idle

    def committed(self) -> None:
        """Count one commit; call it after the COMMIT returned, before anyone learns of the write."""
        self._commits += 1

    async def durable(self) -> None:
        """Return once every commit counted before this call is on disk. Raises OSError when the fsync fails."""
        target = self._commits
        if self._synced >= target:
            return
        if self._database is None:  # in memory: nothing to sync
            self._synced = max(self._synced, target)
            return
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop = loop
            self._start_thread()
        waiting = loop.create_future()
        self._waiters.append((target, waiting))
        self._requests += 1
        if not self._wake_due:
            # Woken at the end of this turn: the handlers woken with this one commit first and join the round.
            self._wake_due = True
            loop.call_soon(self._wake_thread)
        try:
            await waiting
        except asyncio.CancelledError:
            self._waiters = [waiter for waiter in self._waiters if waiter[1] is not waiting]
            raise

    def _wake_thread(self) -> None:
        self._wake_due = False
        if self._idle:
            self._bell.put(None)  # a ring it does not need only makes it look once more

    def _start_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._closed = False
            self._thread = threading.Thread(target=self._rounds, name="handraise-fsync", daemon=True)
            self._thread.start()

    def _rounds(self) -> None:
        """The thread: an fsync round while any acknowledgement waits, sleeping only when none does."""
        while not self._closed:
            if self._requests == self._served:
                self._idle = True
                if self._requests == self._served and not self._closed:  # a request may have come meanwhile
                    self._bell.get()
                self._idle = False
                continue
            self._served = self._requests
            covers = self._commits
            error: Exception | None = None
            try:
                self._sync()
            except Exception as failure:  # the waiters get it (an OSError from the disk, or a bug): never lost here
                error = failure
            loop = self._loop
            if loop is not None:
                with suppress(RuntimeError):  # that loop is closed: nobody waits there any more
                    loop.call_soon_threadsafe(self._round_done, covers, error)

    def _round_done(self, covers: int, error: Exception | None) -> None:
        """On the event loop: settle the waiters that the round covered, with its outcome."""
        if error is None:
            self._synced = max(self._synced, covers)
        still: list[tuple[int, asyncio.Future[None]]] = []
        for target, waiting in self._waiters:
            if waiting.done():
                continue
            if target > covers:
                still.append((target, waiting))
            elif error is None:
                waiting.set_result(None)
            else:
                waiting.set_exception(error)
        self._waiters = still

    def close(self) -> None:
        thread = self._thread
        if thread is not None:
            self._closed = True
            self._bell.put(None)
            if thread is not threading.current_thread():
                thread.join()
            self._thread = None
        self._close_wal()
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None

    def _close_wal(self) -> None:
        if self._file is not None:
            os.close(self._file[0])
            self._file = None

    def _sync(self) -> None:
        if self._database is None:
            return
        wal = f"{self._database}-wal"
        try:
            status = os.stat(wal)
        except FileNotFoundError:
            # No -wal file (the last connection checkpointed and removed it): the data is in the database file.
            self._sync_path(self._database)
            return
        if self._file is None or (self._file[1], self._file[2]) != (status.st_dev, status.st_ino):
            self._close_wal()
            fd = os.open(wal, os.O_RDONLY | os.O_CLOEXEC)
            self._file = (fd, status.st_dev, status.st_ino)
            self.fsync(fd)
            # A new -wal file: make its directory entry durable too, with the database file's own header.
            self._sync_path(self._database)
            self._sync_path(str(Path(self._database).parent))
            return
        self.fsync(self._file[0])
        covers = self._commits
        if covers - self._checkpointed >= self._checkpoint_commits:
            self._checkpointed = covers
            self._checkpoint(self._database)

    def _checkpoint(self, database: str) -> None:
        """Copy the -wal file's pages into the database file without waiting for anyone (PASSIVE), on a connection
        of its own, so that the next writer can start the -wal file over."""
        if self._checkpointer is None:
            self._checkpointer = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
        # The commits are durable already (the -wal file was synced); a checkpoint that fails is tried again after
        # the next fsync, and SQLite's own threshold still bounds the file.
        with suppress(sqlite3.Error):
            self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _sync_path(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self.fsync(fd)
        finally:
            os.close(fd)
