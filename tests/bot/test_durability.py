"""The store's durability barrier: an acknowledgement waits for an fsync that began after its commit, and fsyncs are
shared by every commit made before they started."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import anyio
import pytest

from bot.program import running
from bot.store.errors import StoreUnavailable
from bot.store.records import QuestionRecord
from bot.store.sqlite.store import Store
from core import AskUserQuestionItem

from .fakes import RecordingChannel, sync_store
from .program_rig import config_for

pytestmark = pytest.mark.anyio


def question() -> QuestionRecord:
    return QuestionRecord(questions=[AskUserQuestionItem(id="q", question="Ship it?")])


class Disk:
    """An fsync that records what it synced and can be held mid-sync, as a slow disk would."""

    def __init__(self) -> None:
        self.synced: list[str] = []
        self.started = threading.Semaphore(0)
        self.gate: threading.Event | None = None
        self.error: Exception | None = None

    def hold(self) -> None:
        self.gate = threading.Event()

    def release(self) -> None:
        assert self.gate is not None
        self.gate.set()

    def __call__(self, fd: int) -> None:
        self.synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        self.started.release()
        if self.gate is not None:
            self.gate.wait(10)
        if self.error is not None:
            raise self.error
        os.fsync(fd)


@pytest.fixture
def disk() -> Disk:
    return Disk()


@pytest.fixture
def store(tmp_path: Path, disk: Disk) -> Iterator[Store]:
    with Store.open(tmp_path / "handraise.db", fsync=disk) as opened:
        yield opened


async def started(disk: Disk) -> None:
    """Wait until the held fsync has begun in its worker thread."""
    with anyio.fail_after(5):
        while not disk.started.acquire(blocking=False):
            await anyio.sleep(0.001)


async def test_without_commits_durable_syncs_nothing(store: Store, disk: Disk) -> None:
    await store.durable()
    assert disk.synced == []


async def test_the_first_sync_covers_the_new_wal_file_its_database_and_their_directory(
    store: Store, disk: Disk, tmp_path: Path
) -> None:
    store.create_question(question())
    await store.durable()
    assert disk.synced == ["handraise.db-wal", "handraise.db", tmp_path.name]
    store.create_question(question())
    await store.durable()
    assert disk.synced[3:] == ["handraise.db-wal"]


async def test_a_second_durable_without_a_new_commit_does_not_sync_again(store: Store, disk: Disk) -> None:
    store.create_question(question())
    await store.durable()
    synced = len(disk.synced)
    await store.durable()
    assert len(disk.synced) == synced


async def test_a_commit_made_during_a_sync_waits_for_the_next_sync(store: Store, disk: Disk) -> None:
    store.create_question(question())
    await store.durable()  # the first round (new file) out of the way
    disk.synced.clear()
    while disk.started.acquire(blocking=False):
        pass
    disk.hold()
    released: list[str] = []

    async def acknowledge(name: str) -> None:
        await store.durable()
        released.append(name)

    async with anyio.create_task_group() as tasks:
        store.create_question(question())
        tasks.start_soon(acknowledge, "first")
        await started(disk)  # the sync covering "first" is under way, blocked
        store.create_question(question())
        tasks.start_soon(acknowledge, "second")
        await anyio.wait_all_tasks_blocked()
        assert released == []
        disk.release()
        with anyio.fail_after(5):
            while released != ["first", "second"]:
                await anyio.sleep(0.001)
    # "second" committed after the first sync began, so it needed a sync of its own.
    assert disk.synced == ["handraise.db-wal", "handraise.db-wal"]


async def test_many_concurrent_acknowledgements_share_fsyncs(store: Store, disk: Disk) -> None:
    store.create_question(question())
    await store.durable()
    # From rest: a thread still busy after that round would start the next one at the first commit it sees (and the
    # rest need a second), which a loaded machine made happen now and then.
    with anyio.fail_after(10):
        while not store.barrier.idle:
            await anyio.sleep(0.001)
    disk.synced.clear()
    disk.hold()

    async def ask_and_acknowledge() -> None:
        store.create_question(question())
        await store.durable()

    async with anyio.create_task_group() as tasks:
        for _ in range(50):
            tasks.start_soon(ask_and_acknowledge)
        await anyio.wait_all_tasks_blocked()
        disk.release()
    # The first caller lets the others woken with it commit before its fsync begins: one fsync covers all 50.
    assert len(disk.synced) == 1


async def test_an_acknowledgement_cancelled_mid_sync_leaves_the_others_theirs(store: Store, disk: Disk) -> None:
    store.create_question(question())
    await store.durable()
    disk.hold()
    released: list[str] = []

    async def acknowledge(name: str) -> None:
        await store.durable()
        released.append(name)

    store.create_question(question())
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(acknowledge, "kept")
        async with anyio.create_task_group() as cancelled:
            cancelled.start_soon(acknowledge, "cancelled")
            await started(disk)  # both wait for the held sync
            cancelled.cancel_scope.cancel()
        disk.release()
    assert released == ["kept"]
    store.create_question(question())
    with anyio.fail_after(5):
        await store.durable()  # the barrier still syncs for the next one


async def test_closing_the_store_stops_its_fsync_thread(tmp_path: Path) -> None:
    before = set(threading.enumerate())  # other tests' stores may still be closing theirs: watch this one's only
    with Store.open(tmp_path / "handraise.db") as opened:
        opened.create_question(question())
        await opened.durable()
        (ours,) = [thread for thread in set(threading.enumerate()) - before if thread.name == "handraise-fsync"]
        assert ours.is_alive()
    ours.join(5)
    assert not ours.is_alive()


async def test_a_failing_fsync_is_store_unavailable_naming_the_file(store: Store, disk: Disk) -> None:
    store.create_question(question())
    disk.error = OSError(5, "Input/output error")
    with pytest.raises(StoreUnavailable, match=r"handraise\.db cannot be synced to disk: .*Input/output error"):
        await store.durable()
    disk.error = None
    await store.durable()  # the disk recovered: the next acknowledgement syncs again and succeeds


async def test_a_sync_that_fails_otherwise_reaches_its_waiter_and_the_next_sync_works(store: Store, disk: Disk) -> None:
    store.create_question(question())
    await store.durable()
    store.create_question(question())
    disk.error = RuntimeError("a bug in the sync")  # not the disk refusing: whatever it is, the waiter hears it
    with pytest.raises(RuntimeError, match="a bug in the sync"), anyio.fail_after(5):
        await store.durable()
    disk.error = None
    with anyio.fail_after(5):
        await store.durable()


async def test_a_wal_file_replaced_under_another_inode_is_synced_with_its_directory(
    store: Store, disk: Disk, tmp_path: Path
) -> None:
    store.create_question(question())
    await store.durable()
    # Another process checkpointed and deleted the -wal file, and a new one took its name.
    wal = tmp_path / "handraise.db-wal"
    replacement = tmp_path / "replacement"
    replacement.write_bytes(wal.read_bytes())
    replacement.replace(wal)
    disk.synced.clear()
    store.create_question(question())
    await store.durable()
    assert disk.synced == ["handraise.db-wal", "handraise.db", tmp_path.name]


async def test_an_in_memory_store_has_nothing_to_sync() -> None:
    with Store.open(":memory:") as store:
        store.create_question(question())
        await store.durable()


async def test_an_ask_is_acknowledged_only_after_its_fsync(tmp_path: Path) -> None:
    async with running(config_for(tmp_path), channels=[RecordingChannel("web")]) as program:
        disk = Disk()
        disk.hold()
        sync_store(program.installation.store).barrier.fsync = disk
        replies: list[int] = []

        async def ask() -> None:
            body = {"questions": [{"id": "go", "question": "Deploy v2?"}]}
            async with aiohttp.ClientSession() as http, http.post(f"{program.base_url}/v1/questions", json=body) as r:
                replies.append(r.status)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            await started(disk)
            assert await program.installation.store.count_questions() == 1  # committed, not yet acknowledged
            await anyio.sleep(0.05)
            assert replies == []
            disk.release()
        assert replies == [202]


def stored_in_database_file(path: Path) -> int:
    """Questions in the database file itself, ignoring its -wal file: those a checkpoint has copied there."""
    raw = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        if raw.execute("SELECT 1 FROM sqlite_master WHERE name = 'questions'").fetchone() is None:
            return 0  # not even the schema is there yet
        return int(raw.execute("SELECT count(*) FROM questions").fetchone()[0])
    finally:
        raw.close()


async def test_every_so_many_commits_the_sync_checkpoints_them_into_the_database_file(tmp_path: Path) -> None:
    path = tmp_path / "handraise.db"
    with Store.open(path, checkpoint_commits=3) as opened:
        for _ in range(3):
            opened.create_question(question())
        await opened.durable()  # a new -wal file: synced, not yet checkpointed
        assert stored_in_database_file(path) == 0
        opened.create_question(question())
        await opened.durable()
        assert stored_in_database_file(path) == 4


async def test_fewer_commits_than_that_stay_in_the_wal_file(tmp_path: Path) -> None:
    path = tmp_path / "handraise.db"
    with Store.open(path, checkpoint_commits=10) as opened:
        opened.create_question(question())
        await opened.durable()
        opened.create_question(question())
        await opened.durable()
        assert stored_in_database_file(path) == 0
