"""The SQLite file under the store: opening and migrating it, reads under the store's lock, and writes as one
transaction each or as a group under one commit (group commit), counted for the durability barrier; sqlite3's
errors become the store's (StoreUnavailable for the disk's, with what to do next).

Writes take the write lock up front (`BEGIN IMMEDIATE`): a read that later upgrades to a write can fail with
SQLITE_BUSY in WAL mode without waiting, which would break first-answer-wins between processes.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from bot.store.errors import StoreError, StoreUnavailable
from bot.store.sqlite.schema import configure, migrate
from bot.store.sqlite.sync import CHECKPOINT_COMMITS, DurabilityBarrier, Fsync

BACKSTOP_CHECKPOINT_PAGES = 10_000
"""-wal pages at which a COMMIT checkpoints by itself: only reached when nobody awaits `durable()` for a while."""


class StoreFile:
    """One SQLite connection shared between threads of one process (and the file between processes), with the
    transactions `bot.store.sqlite.store.Store`'s calls are made of."""

    def __init__(self, connection: sqlite3.Connection, path: str, barrier: DurabilityBarrier | None = None) -> None:
        """Use `open`; this only wraps an already-migrated connection."""
        self._db = connection
        self._path = path
        self._lock = threading.RLock()  # re-entered by the writes of a group (`write_together`)
        self._barrier = barrier or DurabilityBarrier(None)
        self._grouping: _Grouping | None = None  # inside `write_together`: how each write of the group is made
        self._group_failure: StoreError | None = None

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, fsync: Fsync = os.fsync, checkpoint_commits: int = CHECKPOINT_COMMITS
    ) -> Self:
        """Open (creating if needed) the store at `path`, or an in-memory one for `":memory:"`, and migrate it.

        `fsync` is what `durable()` calls on the files (tests count or slow it); `checkpoint_commits` is how many
        commits the durability barrier lets pass between checkpoints. Raises StoreError when the file is
        not a SQLite database, belongs to another application, or was written by a newer handraise, and
        StoreUnavailable when it is damaged.
        """
        name = os.fspath(path)
        if name != ":memory:":
            file = Path(name)
            # Answers can be sensitive: the file (and SQLite's -wal/-shm, which copy its mode) is the owner's only.
            try:
                file.parent.mkdir(parents=True, exist_ok=True)
                os.close(os.open(file, os.O_RDWR | os.O_CREAT, 0o600))
            except OSError as error:
                raise StoreError(f"cannot open the handraise store at {name}: {error.strerror}") from None
        # isolation_level=None: the store issues BEGIN/COMMIT itself; sqlite3's implicit transactions would defer the
        # write lock and break first-answer-wins between processes.
        connection = sqlite3.connect(name, isolation_level=None, check_same_thread=False)
        try:
            configure(connection, name)
            migrate(connection, name)
            # The durability barrier checkpoints off the event loop; SQLite's own (inside a COMMIT) is the backstop.
            connection.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_CHECKPOINT_PAGES}")
        except BaseException:
            connection.close()
            raise
        return cls(connection, name, DurabilityBarrier(None if name == ":memory:" else name, fsync, checkpoint_commits))

    @property
    def path(self) -> str:
        return self._path

    @property
    def schema_version(self) -> int:
        with self._read() as db:
            return int(db.execute("PRAGMA user_version").fetchone()[0])

    @property
    def connection(self) -> sqlite3.Connection:
        """The SQLite connection itself, outside the store's lock: for tests and tools that set a PRAGMA (a file
        turned read-only, a full disk) or force a checkpoint."""
        return self._db

    @property
    def barrier(self) -> DurabilityBarrier:
        """The durability barrier `durable()` waits on (tests swap its `fsync` for a slow or failing disk)."""
        return self._barrier

    @property
    def commits(self) -> int:
        """How many transactions this store has committed (a group of writes counts once): for benchmarks, tests."""
        return self._barrier.commits

    def close(self) -> None:
        """Close the connection. Idempotent; any later call raises StoreError."""
        with self._lock:
            self._db.close()
            self._barrier.close()

    async def durable(self) -> None:
        """Return once every write this store committed before the call is on disk (survives a power loss).

        Writes commit at once but are synced in batches: await this before acknowledging a write to anyone.
        Raises StoreUnavailable when the disk refuses the sync.
        """
        try:
            await self._barrier.durable()
        except OSError as error:
            raise StoreUnavailable(f"the handraise store at {self._path} cannot be synced to disk: {error}") from error

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def integrity_ok(self) -> bool:
        with self._read() as db:
            return [row[0] for row in db.execute("PRAGMA quick_check")] == ["ok"]

    def _read(self) -> _Reading:
        """`with self._read() as db`: the connection under the lock, sqlite3's errors turned into the store's."""
        return _Reading(self)

    def write_together(self, writes: Sequence[Callable[[], Any]]) -> list[tuple[Any, Exception | None]]:
        """Run several writes (calls of this store's write methods) as one transaction with one commit: group
        commit, so that concurrent callers share the commit's cost instead of paying one each.

        A write that raises is undone alone, and its error is returned in its place as `(None, error)`; the others
        return `(result, None)`. Raises StoreError (nothing of any of them is recorded) when the transaction itself
        fails: the disk is full, the file is damaged.

        Writes almost never raise, so the group first runs them bare, with no savepoint each (two statements fewer
        per write). If one does raise, that transaction is rolled back whole and the group runs again, each write in
        a savepoint of its own: a write's statements are all undone or none, and the writes that went well are
        made. (A write is a call of a store method: run again on a rolled-back file it does the same.)
        """
        with self._lock:
            try:
                return self._together(writes, savepoints=False)
            except _Undo:  # nothing of the group was made: again, each write in a savepoint
                return self._together(writes, savepoints=True)

    def _together(self, writes: Sequence[Callable[[], Any]], *, savepoints: bool) -> list[tuple[Any, Exception | None]]:
        """One try of `write_together`. Without `savepoints`, raises _Undo (the transaction rolled back) as soon as
        a write raises or ends the transaction under it."""
        outcomes: list[tuple[Any, Exception | None]] = []
        with self._transaction() as db:
            self._grouping, self._group_failure = "savepoint" if savepoints else "bare", None
            try:
                for write in writes:
                    try:
                        outcomes.append((write(), None))
                    except Exception as error:
                        if not savepoints:
                            raise _Undo from error
                        outcomes.append((None, error))
                    if self._group_failure is None and not db.in_transaction:
                        if not savepoints:
                            raise _Undo
                        self._group_failure = StoreUnavailable(
                            f"the handraise store at {self._path} lost a transaction; nothing was recorded"
                        )
                    if self._group_failure is not None:
                        raise self._group_failure
            finally:
                self._grouping = None
        return outcomes

    def _write(self) -> _Writing:
        """`with self._write() as db`: one write transaction holding the write lock from its first statement; rolled
        back on any error. Inside `write_together`, a savepoint of the group's transaction instead."""
        return _Writing(self)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT, counted for `durable()`; rolled back on any error. The caller holds the lock."""
        self._begin()
        try:
            yield self._db
        except BaseException as failure:
            self._end(failure)
            raise
        self._end(None)

    def _begin(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            raise self._failure(error) from error

    def _end(self, failure: BaseException | None) -> None:
        """COMMIT (counted for `durable()`) after a body that went well; ROLLBACK after `failure`, which the caller
        raises again unless this raises the store's error for it."""
        if failure is None:
            try:
                self._db.commit()
            except sqlite3.Error as error:
                # A COMMIT that failed (disk full) leaves the transaction open; end it so the next write can begin.
                with suppress(sqlite3.Error):
                    self._db.rollback()
                self._rolled_back()
                raise self._failure(error) from error
            self._barrier.committed()
            return
        with suppress(sqlite3.Error):
            self._db.rollback()
        self._rolled_back()
        if isinstance(failure, sqlite3.Error):
            raise self._failure(failure) from failure

    def _rolled_back(self) -> None:
        """Called when a transaction or a savepoint was undone: what the store keeps of its last writes may be gone."""

    def _begin_savepoint(self) -> None:
        try:
            self._db.execute("SAVEPOINT grouped_write")
        except sqlite3.Error as error:
            raise self._group_failed(error) from error

    def _end_savepoint(self, failure: BaseException | None) -> None:
        """RELEASE after a body that went well; undo it alone after `failure`, which the caller raises again unless
        this raises the store's error for it."""
        db = self._db
        if failure is None:
            try:
                db.execute("RELEASE grouped_write")
            except sqlite3.Error as error:
                raise self._group_failed(error) from error
            return
        self._rolled_back()
        try:
            db.execute("ROLLBACK TO grouped_write")
            db.execute("RELEASE grouped_write")
        except sqlite3.Error as error:
            # SQLite ended the whole transaction on the disk's error (it does on some): the group fails as one.
            raise self._group_failed(error) from failure
        if isinstance(failure, sqlite3.Error):
            raise self._failure(failure) from failure

    def _group_failed(self, error: sqlite3.Error) -> StoreError:
        failure = self._failure(error)
        self._group_failure = self._group_failure or failure
        return failure

    def _failure(self, error: sqlite3.Error) -> StoreError:
        # OperationalError is the disk's (full, read-only, I/O, locked too long); a bare DatabaseError is a damaged
        # file. The other subclasses (IntegrityError, ProgrammingError) are handraise's own mistakes.
        if type(error) is sqlite3.DatabaseError:
            return StoreUnavailable(
                f"the handraise store at {self._path} is damaged ({error}); restore the file "
                "from a backup, or move it aside (`sqlite3 FILE .recover` can save what is readable)"
            )
        if isinstance(error, sqlite3.OperationalError):
            return StoreUnavailable(
                f"the handraise store at {self._path} is unavailable ({error}); nothing was recorded. "
                "Free disk space or make the file writable: handraise carries on once it can write again"
            )
        return StoreError(f"the handraise store at {self._path} failed: {error}")


_Grouping = Literal["bare", "savepoint"]
"""How the writes of a group are made: bare in the group's transaction, or each in a savepoint of its own."""


class _Undo(Exception):
    """A write of a group made without savepoints raised: its transaction is rolled back, to run with them."""


class _Reading:
    """What `StoreFile._read` returns. A class rather than a generator: every store call goes through one of these
    two, and a generator-based context manager costs several times as much (≈1.5 µs against 0.3 µs)."""

    __slots__ = ("_file",)

    def __init__(self, file: StoreFile) -> None:
        self._file = file

    def __enter__(self) -> sqlite3.Connection:
        self._file._lock.acquire()
        return self._file._db

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._file._lock.release()
        if isinstance(exc, sqlite3.Error):
            raise self._file._failure(exc) from exc


class _Writing:
    """What `StoreFile._write` returns: a transaction of its own, or inside `write_together`'s either a savepoint or
    nothing at all (a bare write, whose error undoes the group)."""

    __slots__ = ("_file", "_grouping")

    def __init__(self, file: StoreFile) -> None:
        self._file = file
        self._grouping: _Grouping | None = None  # None: a transaction of its own

    def __enter__(self) -> sqlite3.Connection:
        file = self._file
        file._lock.acquire()
        try:
            self._grouping = file._grouping
            if self._grouping is None:
                file._begin()
            elif self._grouping == "savepoint":
                file._begin_savepoint()
        except BaseException:
            file._lock.release()
            raise
        return file._db

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        file = self._file
        try:
            if self._grouping is None:
                file._end(exc)
            elif self._grouping == "savepoint":
                file._end_savepoint(exc)
            # Bare in a group: an error goes up to `write_together`, which undoes the whole group.
        finally:
            file._lock.release()
