"""The answer form and the store: "Answer sent" only once the answer is on disk, and a 503 page that names the file
when the store cannot write."""

from __future__ import annotations

import threading

import anyio
import pytest

from bot.store.sqlite.store import Store
from tests.web.helpers import Client, answer, csrf_of, web_question

pytestmark = pytest.mark.anyio


async def test_an_answer_the_store_cannot_write_is_503_naming_the_file_and_is_not_recorded(
    client: Client, store: Store
) -> None:
    record = web_question(store)
    csrf = csrf_of(await (await client.get("/")).text())
    store.connection.execute("PRAGMA query_only = ON")  # the file turned read-only
    try:
        response = await answer(client, record.id, [("q0", "0")], csrf=csrf)
        page = await response.text()
    finally:
        store.connection.execute("PRAGMA query_only = OFF")
    assert response.status == 503
    assert response.content_type == "text/html"
    assert "STORE_UNAVAILABLE" in page and store.path in page
    assert "not sent" in page
    current = store.get_question(record.id)
    assert current is not None and current.status == "pending"
    response = await answer(client, record.id, [("q0", "0")], csrf=csrf)
    assert response.status == 303  # the same form works once the store does


async def test_answer_sent_is_said_only_after_the_answer_is_fsynced(client: Client, store: Store) -> None:
    record = web_question(store)
    csrf = csrf_of(await (await client.get("/")).text())
    syncing, go = threading.Event(), threading.Event()

    def slow_fsync(fd: int) -> None:
        syncing.set()
        go.wait(10)

    store.barrier.fsync = slow_fsync  # a disk that takes its time
    replies: list[int] = []

    async def post() -> None:
        replies.append((await answer(client, record.id, [("q0", "0")], csrf=csrf)).status)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(post)
        with anyio.fail_after(5):
            while not syncing.is_set():
                await anyio.sleep(0.005)
        current = store.get_question(record.id)
        assert current is not None and current.status == "answered"  # committed, not yet acknowledged
        await anyio.sleep(0.05)
        assert replies == []
        go.set()
    assert replies == [303]
