"""A store that cannot write (disk full, read-only file): a clear 503 naming the file, nothing acknowledged lost, and
questions already accepted delivered once it can write again, without a restart."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from bot.program import running
from bot.questions.routing import Route
from bot.store.errors import StoreError, StoreUnavailable
from bot.store.records import QuestionRecord
from bot.store.sqlite.store import Store
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

from .fakes import RecordingChannel, sync_store
from .program_rig import config_for

pytestmark = pytest.mark.anyio

ASK = {"questions": [{"id": "go", "question": "Deploy v2?", "options": [{"label": "Yes"}, {"label": "No"}]}]}


@contextmanager
def read_only(store: Store) -> Iterator[None]:
    """The store's file turns read-only under the running program (SQLite reports it as it would for the file)."""
    store.connection.execute("PRAGMA query_only = ON")
    try:
        yield
    finally:
        store.connection.execute("PRAGMA query_only = OFF")


def question(text: str = "Ship it?") -> QuestionRecord:
    return QuestionRecord(questions=[AskUserQuestionItem(id="q", question=text)])


async def call(method: str, url: str, body: Any = None) -> tuple[int, dict[str, Any], dict[str, str]]:
    async with aiohttp.ClientSession() as session, session.request(method, url, json=body) as response:
        return response.status, await response.json(), dict(response.headers)


# --- the store ------------------------------------------------------------------------------------------------------


def test_a_write_to_a_read_only_store_is_store_unavailable_naming_the_file(tmp_path: Path) -> None:
    with Store.open(tmp_path / "handraise.db") as store, read_only(store):
        with pytest.raises(StoreUnavailable) as raised:
            store.create_question(question())
        assert raised.value.code == "STORE_UNAVAILABLE"
        assert str(tmp_path / "handraise.db") in raised.value.message
        assert "readonly" in raised.value.message


def test_a_full_disk_records_nothing_and_the_next_write_works_once_there_is_room(tmp_path: Path) -> None:
    with Store.open(tmp_path / "handraise.db") as store:
        kept = question()
        store.create_question(kept)
        pages = store.connection.execute("PRAGMA page_count").fetchone()[0]
        store.connection.execute(f"PRAGMA max_page_count = {pages}")
        big = question("x" * 50_000)  # needs new pages the "disk" cannot give
        with pytest.raises(StoreUnavailable, match="database or disk is full"):
            store.create_question(big)
        store.connection.execute("PRAGMA max_page_count = 1000000")
        assert store.get_question(big.id) is None
        assert [event.kind for event in store.history()] == ["asked"]
        store.create_question(big)  # no transaction was left open by the failed one
        assert store.get_question(big.id) is not None


def test_a_store_mistake_stays_a_plain_store_error(tmp_path: Path) -> None:
    with Store.open(tmp_path / "handraise.db") as store:
        record = question()
        store.create_question(record)
        with pytest.raises(StoreError) as raised:
            store.create_question(record)
        assert not isinstance(raised.value, StoreUnavailable)


def test_a_damaged_page_is_store_unavailable_saying_the_file_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "handraise.db"
    with Store.open(path) as store:
        for _ in range(200):
            store.create_question(question("x" * 300))
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with path.open("r+b") as file:
        file.seek(4096 * 3)
        file.write(random.Random(9).randbytes(4096))
    with Store.open(path) as store, pytest.raises(StoreUnavailable, match=r"handraise\.db is damaged"):
        store.list_questions(status="pending", limit=1000)


# --- the program ----------------------------------------------------------------------------------------------------


class HeldChannel(RecordingChannel):
    """Delivers only once `go` is set: the window between accepting a question and recording its delivery."""

    def __init__(self) -> None:
        super().__init__("web")
        self.go = anyio.Event()
        self.waiting = anyio.Event()

    async def deliver(self, question: QuestionRecord, route: Route) -> Any:
        self.waiting.set()
        await self.go.wait()
        return await super().deliver(question, route)


async def test_asking_while_the_store_cannot_write_is_503_naming_the_file(tmp_path: Path) -> None:
    async with running(config_for(tmp_path), channels=[RecordingChannel("web")]) as program:
        store = program.installation.store
        with read_only(sync_store(store)):
            status, body, headers = await call("POST", f"{program.base_url}/v1/questions", ASK)
            assert status == 503
            assert body["error"]["code"] == "STORE_UNAVAILABLE"
            assert str(tmp_path / "handraise.db") in body["error"]["message"]
            assert headers["Retry-After"].isdigit()
            assert await store.count_questions() == 0
        status, body, _ = await call("POST", f"{program.base_url}/v1/questions", ASK)
        assert status == 202


async def test_cancelling_while_the_store_cannot_write_is_503_and_cancels_nothing(tmp_path: Path) -> None:
    async with running(config_for(tmp_path), channels=[RecordingChannel("web")]) as program:
        _, body, _ = await call("POST", f"{program.base_url}/v1/questions", ASK)
        question_id = body["id"]
        with read_only(sync_store(program.installation.store)):
            status, body, _ = await call("DELETE", f"{program.base_url}/v1/questions/{question_id}")
        assert (status, body["error"]["code"]) == (503, "STORE_UNAVAILABLE")
        status, body, _ = await call("GET", f"{program.base_url}/v1/questions/{question_id}")
        assert body["status"] == "pending"


async def test_a_question_accepted_but_not_delivered_is_delivered_once_the_store_works(tmp_path: Path) -> None:
    channel = HeldChannel()
    async with running(config_for(tmp_path), channels=[channel]) as program:
        program.remote.store_retry = 0.01
        store = program.installation.store
        status, body, _ = await call("POST", f"{program.base_url}/v1/questions", ASK)
        assert status == 202
        question_id = body["id"]
        with anyio.fail_after(5):
            await channel.waiting.wait()
        with read_only(sync_store(store)):
            channel.go.set()  # the delivery happens, but recording it fails
            with anyio.fail_after(5):
                while not channel.delivered:
                    await anyio.sleep(0.01)
            assert await store.get_delivery(question_id, "web") is None
        with anyio.fail_after(5):
            while await store.get_delivery(question_id, "web") is None:
                await anyio.sleep(0.01)
        # Sent again once the store works (the first was never recorded), not again and again while it refused:
        # each retry first records its intent, which the read-only store refused.
        assert len(channel.delivered) == 2
        record = await store.get_question(question_id)
        assert record is not None and record.status == "pending"
        yes = AskUserQuestionAnswerItem(id="go", selected=["Yes"])
        await program.installation.ledger.submit(question_id, {"go": yes}, by="alice", via="web")
        status, body, _ = await call("GET", f"{program.base_url}/v1/questions/{question_id}?wait=5")
    assert body["answer"] == {"answers": [{"id": "go", "selected": ["Yes"]}]}
