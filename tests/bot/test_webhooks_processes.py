"""Webhooks through real `handraise serve` processes: a bad table stops serve in one line, kill -9 before or during a
delivery loses nothing (the restarted serve delivers it, with the same id), and two replicas on one PostgreSQL send
each delivery once. Fast polls and retries come from `HANDRAISE_WEBHOOK_TIMING_FOR_TESTS`; the defaults are
checked in test_webhooks.py."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from .serve_process import kill_9, read, serve
from .webhook_receiver import SECRET, receiving

pytestmark = pytest.mark.anyio

BANNER = re.compile(r"handraise is serving (http://\S+)")
URL_ENV = "HANDRAISE_DATABASE_URL"
FAST: dict[str, float] = {"poll_seconds": 0.1, "first_retry_seconds": 0.2, "lease_seconds": 1.5, "attempt_seconds": 30}
HOOK = {"HOOK_SECRET": SECRET}
ASK = {"questions": [{"id": "q1", "question": "Deploy v2?", "options": [{"label": "Yes"}]}]}


def write_config(tmp_path: Path, url: str, *, postgres: bool = False, events: str = "") -> Path:
    config = tmp_path / "config.toml"
    store = f'[store]\npath = "{tmp_path / "handraise.db"}"\n' + (f'url_env = "{URL_ENV}"\n' if postgres else "")
    hook = f'[[webhooks]]\nurl = "{url}"\nsecret_env = "HOOK_SECRET"\n{events}'
    config.write_text(f'[server]\nlisten = "127.0.0.1:0"\n{store}{hook}')
    return config


async def ask_and_cancel(session: aiohttp.ClientSession, base: str, cancel_at: str | None = None) -> str:
    async with session.post(f"{base}/v1/questions", json=ASK) as reply:
        assert reply.status == 202
        question_id = str((await reply.json())["id"])
    async with session.delete(f"{cancel_at or base}/v1/questions/{question_id}") as reply:
        assert reply.status == 200
    return question_id


def stored_bytes(folder: Path) -> bytes:
    """The store's file and its -wal, as a tamperer or a backup would read them."""
    return b"".join(path.read_bytes() for path in folder.glob("handraise.db*"))


def deliveries_in(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT event, state, attempts FROM webhook_deliveries").fetchall()
    db.close()
    return rows


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ('[[webhooks]]\nurl = "ftp://ci.example.org/x"\nsecret_env = "HOOK_SECRET"\n', "webhooks[0].url"),
        (
            '[[webhooks]]\nurl = "https://ci.example.org/x"\nsecret_env = "UNSET_HOOK_SECRET"\n',
            "webhooks[0].secret_env",
        ),
        (
            '[[webhooks]]\nurl = "https://a.example.org"\nsecret_env = "HOOK_SECRET"\n'
            '[[webhooks]]\nurl = "https://b.example.org"\nsecret_env = "EMPTY_HOOK_SECRET"\n',
            "webhooks[1].secret_env",
        ),
    ],
)
def test_a_bad_webhook_table_stops_serve_with_one_line_naming_the_key(tmp_path: Path, table: str, key: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\nlisten = "127.0.0.1:0"\n[store]\npath = "{tmp_path / "h.db"}"\n{table}')
    env = {name: value for name, value in os.environ.items() if name != "UNSET_HOOK_SECRET"}
    env |= {"HOOK_SECRET": SECRET, "EMPTY_HOOK_SECRET": ""}
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "serve", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode != 0
    [line] = result.stdout.splitlines()
    assert f" {key}: " in line, line
    assert not (tmp_path / "h.db").exists()  # nothing started


async def test_kill_9_before_the_delivery_loses_nothing(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    async with receiving() as receiver, aiohttp.ClientSession() as session:
        config = write_config(tmp_path, receiver.url)
        asleep = FAST | {"poll_seconds": 3600}  # it reads the queue once at start, then not for an hour
        async with serve(config, log, asleep, HOOK) as (process, base):
            question_id = await ask_and_cancel(session, base)
            await anyio.sleep(0.5)
            assert receiver.got == []
            await kill_9(process)
        assert deliveries_in(tmp_path / "handraise.db") == [("cancelled", "pending", 0)]
        async with serve(config, log, FAST, HOOK):
            await receiver.wait_for(1)
            await anyio.sleep(0.5)
    [got] = receiver.got
    assert got.signed and got.body["event"] == "cancelled" and got.body["question"]["id"] == question_id
    assert deliveries_in(tmp_path / "handraise.db") == [("cancelled", "delivered", 1)]
    assert SECRET not in read(log)


async def test_kill_9_during_a_delivery_sends_it_again_with_the_same_id(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    async with receiving() as receiver, aiohttp.ClientSession() as session:
        receiver.hold = True
        config = write_config(tmp_path, receiver.url)
        async with serve(config, log, FAST, HOOK) as (process, base):
            await ask_and_cancel(session, base)
            with anyio.fail_after(20):
                await receiver.arrived.wait()
            await kill_9(process)  # the attempt is under way: the receiver holds it
        receiver.release()
        async with serve(config, log, FAST, HOOK):
            await receiver.wait_for(2)
            await anyio.sleep(0.5)  # several polls and more than the lease: nothing more comes
    first, second = receiver.got
    assert first.delivery == second.delivery and first.raw == second.raw
    assert first.signed and second.signed
    assert deliveries_in(tmp_path / "handraise.db") == [("cancelled", "delivered", 2)]
    assert SECRET.encode() not in stored_bytes(tmp_path) and SECRET not in read(log)


async def test_two_replicas_on_one_postgresql_send_each_delivery_once(tmp_path: Path, postgres_url: str) -> None:
    logs = [tmp_path / "one.log", tmp_path / "two.log"]
    env = HOOK | {URL_ENV: postgres_url}
    async with receiving() as receiver, aiohttp.ClientSession() as session:
        receiver.statuses = [500, 503]  # two retries among them, taken by whichever replica is free
        config = write_config(tmp_path, receiver.url, postgres=True, events='events = ["asked", "cancelled"]\n')
        async with serve(config, logs[0], FAST, env) as (_, one), serve(config, logs[1], FAST, env) as (_, two):
            asked = [
                await ask_and_cancel(session, base, cancel_at=other) for base, other in [(one, two), (two, one)] * 5
            ]
            await receiver.wait_for(22)
            await anyio.sleep(1)
    delivered = {(got.body["question"]["id"], got.body["event"]) for got in receiver.got}
    assert delivered == {(question_id, event) for question_id in asked for event in ("asked", "cancelled")}
    assert len(receiver.got) == 22  # 20 deliveries, two of them twice (500, then 503)
    assert all(got.signed for got in receiver.got)
