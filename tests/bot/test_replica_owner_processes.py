"""Two `handraise serve` processes on one PostgreSQL database, as an operator runs them: killing the owner of a
pending question with a timer due (kill -9, nothing handed over) leaves the other to take it over and fire it once."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import psycopg

from tests.postgres_server import PostgresServer, free_port

URL_ENV = "HANDRAISE_DATABASE_URL"
ASK = {"questions": [{"id": "go", "question": "Deploy v2?", "options": [{"label": "Yes"}]}]}


def start_serve(tmp_path: Path, name: str, url: str) -> tuple[subprocess.Popen[str], int]:
    folder = tmp_path / name
    folder.mkdir()
    port = free_port()
    config = folder / "config.toml"
    config.write_text(
        f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{folder / "unused.db"}"\nurl_env = "{URL_ENV}"\n'
        'lease_seconds = 1.5\n[[web.subscriptions]]\nexpire_after = "6s"\n'
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "serve", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {URL_ENV: url, "PYTHONUNBUFFERED": "1"},
    )
    assert server.stdout is not None
    assert next((line for line in server.stdout if "?token=" in line), None) is not None, "serve exited early"
    return server, port


def ask(port: int) -> str:
    sent = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/questions",
        data=json.dumps(ASK).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(sent, timeout=30) as reply:
        return json.loads(reply.read())["id"]


def test_killing_the_owner_of_a_question_leaves_its_timer_to_another_replica_which_fires_it_once(
    tmp_path: Path, postgres_server: PostgresServer, postgres_url: str
) -> None:
    database = postgres_url.rsplit("/", 1)[1]
    a, a_port = start_serve(tmp_path, "a", postgres_url)
    b: subprocess.Popen[str] | None = None
    try:
        b, _ = start_serve(tmp_path, "b", postgres_url)
        question_id = ask(a_port)
        with postgres_server.admin(database) as db:
            until(lambda: kinds(db, question_id).count("delivered") == 1)
            a.send_signal(signal.SIGKILL)
            a.wait(timeout=15)
            until(lambda: status(db, question_id) == "expired")
            owner = db.execute("SELECT owner FROM questions WHERE id = %s", (question_id,)).fetchone()
            events = kinds(db, question_id)
        assert b.poll() is None
        b.send_signal(signal.SIGTERM)
        assert b.wait(timeout=15) == 0
    finally:
        for server in (a, b):
            if server is not None and server.poll() is None:
                server.kill()
    _, a_log = a.communicate(timeout=15)
    _, b_log = b.communicate(timeout=15) if b is not None else ("", "")
    a_id, b_id = replica_id(a_log), replica_id(b_log)
    assert owner is not None and owner[0] == b_id != a_id
    assert [events.count(kind) for kind in ("asked", "delivered", "expired")] == [1, 1, 1]


def replica_id(log: str) -> str:
    found = re.search(r"replica (r-[0-9a-f]{6}) on PostgreSQL", log)
    assert found is not None, log
    return found[1]


def kinds(db: psycopg.Connection, question_id: str) -> list[str]:
    rows = db.execute("SELECT kind FROM audit WHERE question_id = %s ORDER BY seq", (question_id,)).fetchall()
    return [row[0] for row in rows]


def status(db: psycopg.Connection, question_id: str) -> str | None:
    row = db.execute("SELECT status FROM questions WHERE id = %s", (question_id,)).fetchone()
    return None if row is None else row[0]


def until(done: Callable[[], bool], seconds: float = 30) -> None:
    """Poll the database (another process's doings raise no event here)."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
