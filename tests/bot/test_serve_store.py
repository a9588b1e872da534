"""`handraise serve` as a process against a real failing disk: a full filesystem, a damaged file, a kill -9."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.store.records import QuestionRecord
from bot.store.sqlite.store import Store
from core import AskUserQuestionItem

from .program_rig import free_port

ASK = {"questions": [{"id": "go", "question": "Deploy v2?", "options": [{"label": "Yes"}]}]}


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted for the test: a disk that really fills up (needs root, as CI runs)."""
    if os.geteuid() != 0:
        message = "mounting a tiny tmpfs needs root"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def serve(tmp_path: Path, store_path: Path) -> tuple[subprocess.Popen[str], int, str]:
    port = free_port()
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{store_path}"\n')
    server = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "serve", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    assert server.stdout is not None
    token = None
    for line in server.stdout:
        if found := re.search(r"\?token=(\S+)", line):
            token = found[1]
            break
    assert token is not None, "serve exited early: " + (server.stderr.read() if server.stderr else "")
    return server, port, token


def fill(disk: Path) -> Path:
    """Write a file until the disk says it is full; returns it (unlink it to make room again)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with pytest.raises(OSError, match="No space left"):
            while True:
                os.write(fd, b"\0" * 65536)
    finally:
        os.close(fd)
    return filler


def stop(server: subprocess.Popen[str]) -> None:
    if server.poll() is None:
        server.kill()
    server.communicate(timeout=15)


def request(url: str, body: Any = None, *, method: str = "POST", **headers: str) -> tuple[int, str, dict[str, str]]:
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    sent = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"} | headers)
    try:
        with urllib.request.urlopen(sent, timeout=10) as reply:
            return reply.status, reply.read().decode(), dict(reply.headers)
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode(), dict(refused.headers)


def test_a_full_disk_answers_503_naming_the_file_and_serve_carries_on_once_there_is_room(
    tmp_path: Path, tiny_disk: Path
) -> None:
    store_path = tiny_disk / "handraise.db"
    server, port, _ = serve(tmp_path, store_path)
    base = f"http://127.0.0.1:{port}"
    try:
        status, body, _ = request(f"{base}/v1/questions", ASK)
        assert status == 202
        first = json.loads(body)["id"]
        filler = fill(tiny_disk)
        refused = [request(f"{base}/v1/questions", ASK) for _ in range(3)]  # the WAL may hold a frame or two
        status, body, headers = refused[-1]
        assert status == 503, body
        assert headers["Content-Type"].startswith("application/json")
        error = json.loads(body)["error"]
        assert error["code"] == "STORE_UNAVAILABLE" and str(store_path) in error["message"]
        filler.unlink()
        status, body, _ = request(f"{base}/v1/questions", ASK)
        assert status == 202
        second = json.loads(body)["id"]
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=15) == 0
    finally:
        stop(server)
    with Store.open(store_path) as store:
        for question_id in (first, second):
            record = store.get_question(question_id)
            assert record is not None and record.status == "pending"


def test_a_damaged_store_at_start_is_one_line_and_exit_1(tmp_path: Path) -> None:
    store_path = tmp_path / "handraise.db"
    with Store.open(store_path) as store:
        for _ in range(200):
            store.create_question(QuestionRecord(questions=[AskUserQuestionItem(id="q", question="x" * 300)]))
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with store_path.open("r+b") as file:
        file.seek(4096 * 3)  # a page of the questions table, past the header and the schema
        file.write(random.Random(9).randbytes(4096))
    port = free_port()
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{store_path}"\n')
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "serve", "--config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"handraise: the handraise store at {store_path} is damaged")


def test_an_acknowledged_ask_and_answer_survive_kill_9(tmp_path: Path) -> None:
    store_path = tmp_path / "handraise.db"
    server, port, token = serve(tmp_path, store_path)
    base = f"http://127.0.0.1:{port}"
    try:
        status, body, _ = request(f"{base}/v1/questions", ASK)
        assert status == 202
        answered = json.loads(body)["id"]
        status, body, _ = request(f"{base}/v1/questions", ASK)
        asked = json.loads(body)["id"]
        status, page, _ = request(f"{base}/", method="GET", Authorization=f"Bearer {token}")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        form = f"csrf={csrf[1]}&q0=0&action=send".encode()
        url = f"{base}/questions/{answered}/answer"
        sent = urllib.request.Request(
            url, data=form, headers={"Authorization": f"Bearer {token}"}, method="POST"
        )  # urllib follows the 303 to the inbox page
        with urllib.request.urlopen(sent, timeout=10) as reply:
            assert "Answer sent" in reply.read().decode()
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=15)
    finally:
        stop(server)
    with Store.open(store_path) as store:
        done = store.get_question(answered)
        waiting = store.get_question(asked)
    assert done is not None and done.status == "answered" and done.answered_via == "web"
    assert waiting is not None and waiting.status == "pending"


def test_every_ask_and_answer_acknowledged_under_load_survives_kill_9(tmp_path: Path) -> None:
    # 32 clients at once: most writes are grouped into shared commits. Killed mid-flood, every 202 and every 303
    # given before the kill must be in the store afterwards.
    store_path = tmp_path / "handraise.db"
    server, port, token = serve(tmp_path, store_path)
    base = f"http://127.0.0.1:{port}"
    try:
        asked, answered = asyncio.run(flood_then_kill(base, token, server))
    finally:
        stop(server)
    assert server.returncode == -signal.SIGKILL  # killed with answers in flight, not ended by itself
    assert len(asked) >= 100 and len(answered) >= 20, (len(asked), len(answered))
    with Store.open(store_path) as store:
        lost = [question_id for question_id in asked if store.get_question(question_id) is None]
        unanswered = [
            id for id in answered if (record := store.get_question(id)) is None or record.status != "answered"
        ]
    assert lost == [] and unanswered == []


async def flood_then_kill(base: str, token: str, server: subprocess.Popen[str]) -> tuple[list[str], list[str]]:
    """Ask 200 questions and answer them, 32 at a time; SIGKILL the server while the answers are in flight."""
    asked: list[str] = []
    answered: list[str] = []
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:

        async def ask() -> None:
            async with http.post(f"{base}/v1/questions", json=ASK) as reply:
                assert reply.status == 202
                asked.append((await reply.json())["id"])

        for _ in range(200 // 32 + 1):
            await asyncio.gather(*(ask() for _ in range(32)))
        async with http.get(f"{base}/") as page:
            found = re.search(r'name="csrf" value="([^"]+)"', await page.text())
        assert found is not None
        form = {"csrf": found[1], "q0": "0", "action": "send"}

        async def answer(question_id: str) -> None:
            with contextlib.suppress(aiohttp.ClientError):
                async with http.post(f"{base}/questions/{question_id}/answer", data=form, allow_redirects=False) as r:
                    if r.status == 303:
                        answered.append(question_id)
                        if len(answered) == 40:
                            server.send_signal(signal.SIGKILL)

        waiting = list(asked)
        while waiting:
            batch, waiting = waiting[:32], waiting[32:]
            await asyncio.gather(*(answer(question_id) for question_id in batch))
    server.wait(timeout=15)
    return asked, answered


def test_a_full_disk_under_concurrent_asks_refuses_some_whole_and_loses_none_acknowledged(
    tmp_path: Path, tiny_disk: Path
) -> None:
    # Grouped commits on a full disk: a group that cannot commit fails every ask in it (503), none half-stored.
    store_path = tiny_disk / "handraise.db"
    server, port, _ = serve(tmp_path, store_path)
    base = f"http://127.0.0.1:{port}"
    try:
        assert request(f"{base}/v1/questions", ASK)[0] == 202
        filler = fill(tiny_disk)
        full = asyncio.run(ask_at_once(base, 64))
        filler.unlink()
        room = asyncio.run(ask_at_once(base, 32))
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=15) == 0
    finally:
        stop(server)
    assert {status for status, _ in full} <= {202, 503} and any(status == 503 for status, _ in full)
    assert all(status == 202 for status, _ in room)
    acknowledged = [question_id for status, question_id in full + room if status == 202]
    with Store.open(store_path) as store:
        assert [id for id in acknowledged if store.get_question(id) is None] == []
        assert store.count_questions() == 1 + len(acknowledged)  # a refused ask left nothing behind


async def ask_at_once(base: str, count: int) -> list[tuple[int, str]]:
    """`count` asks at once (32 at a time); each one's status and, when it was acknowledged, its id."""
    async with aiohttp.ClientSession() as http:

        async def ask() -> tuple[int, str]:
            async with http.post(f"{base}/v1/questions", json=ASK) as reply:
                body = await reply.json()
                return reply.status, body.get("id", "")

        outcomes: list[tuple[int, str]] = []
        for start in range(0, count, 32):
            outcomes += await asyncio.gather(*(ask() for _ in range(min(32, count - start))))
        return outcomes
