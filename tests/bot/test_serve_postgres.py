"""`handraise serve`, `history` and `routes` on PostgreSQL (`[store] url_env`), as an operator runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from bot.cli import main
from bot.store.postgres.store import PostgresStore
from tests.postgres_server import PASSWORD, PostgresServer, free_port

from .store_backends import record

URL_ENV = "HANDRAISE_DATABASE_URL"
ASK = {"questions": [{"id": "go", "question": "Deploy v2?", "options": [{"label": "Yes"}]}]}


def write_config(tmp_path: Path, port: int = 0) -> Path:
    config = tmp_path / "config.toml"
    sqlite = tmp_path / "unused.db"
    config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{sqlite}"\nurl_env = "{URL_ENV}"\n')
    return config


def test_serve_with_the_database_unreachable_at_start_is_one_line_and_exit_1(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    closed = free_port()
    url = postgres_server.url("handraise", port=closed)
    command = [sys.executable, "-m", "bot.cli", "serve", "--config", str(write_config(tmp_path))]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=os.environ | {URL_ENV: url})
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(
        f"handraise: cannot connect to the handraise store, PostgreSQL at 127.0.0.1:{closed}/handraise"
    )
    assert PASSWORD not in result.stderr + result.stdout
    assert not (tmp_path / "unused.db").exists()


def test_serve_without_the_variable_is_a_config_error_naming_it(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if name != URL_ENV}
    command = [sys.executable, "-m", "bot.cli", "serve", "--config", str(write_config(tmp_path))]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert URL_ENV in line and "store.url_env" in line


def test_serve_keeps_the_questions_it_acknowledges_in_postgresql(
    tmp_path: Path, postgres_server: PostgresServer, postgres_url: str
) -> None:
    port = free_port()
    with serving(tmp_path, port, postgres_url):
        status, body = post(port, ASK)
        assert status == 202
        question_id = json.loads(body)["id"]
    with postgres_server.admin(postgres_url.rsplit("/", 1)[1]) as db:
        row = db.execute("SELECT status FROM questions WHERE id = %s", (question_id,)).fetchone()
    assert row == ("pending",)
    assert not (tmp_path / "unused.db").exists()


@pytest.mark.anyio
async def test_history_reads_the_audit_log_from_postgresql(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await PostgresStore.open(postgres_url)
    try:
        original = record()
        await store.create_question(original)
        await store.audit(original.id, "escalated", channel="email", actor="bot")
    finally:
        await store.close()
    monkeypatch.setenv(URL_ENV, postgres_url)
    assert await anyio.to_thread.run_sync(main, ["history", "--config", str(write_config(tmp_path))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[2:4] for line in lines] == [[original.id, "asked"], [original.id, "escalated"]]


def test_routes_reads_a_postgresql_config_without_the_database_or_its_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)
    assert main(["routes", "--config", str(write_config(tmp_path)), "--agent", "deploy-7"]) == 0
    assert capsys.readouterr().out.startswith("agent deploy-7: web\n")


def test_serve_answers_503_while_postgresql_is_down_and_carries_on_once_it_is_back(
    tmp_path: Path, postgres_server: PostgresServer, postgres_url: str
) -> None:
    port = free_port()
    asked: list[str] = []
    with serving(tmp_path, port, postgres_url) as server:
        status, body = post(port, ASK)
        assert status == 202
        asked.append(json.loads(body)["id"])
        postgres_server.stop()
        try:
            status, body = post(port, ASK)
        finally:
            postgres_server.start()
        assert status == 503
        error = json.loads(body)["error"]
        assert error["code"] == "STORE_UNAVAILABLE" and "PostgreSQL at 127.0.0.1" in error["message"]
        assert PASSWORD not in body
        status, body = post(port, ASK)
        assert status == 202
        asked.append(json.loads(body)["id"])
        assert server.poll() is None
    with postgres_server.admin(postgres_url.rsplit("/", 1)[1]) as db:
        rows = db.execute("SELECT id FROM questions ORDER BY created_at").fetchall()
    assert [row[0] for row in rows] == asked


@contextmanager
def serving(tmp_path: Path, port: int, url: str) -> Iterator[subprocess.Popen[str]]:
    """A real `handraise serve` on `url`, up once it printed the inbox link; stopped with SIGTERM, which must exit 0."""
    server = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "serve", "--config", str(write_config(tmp_path, port))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {URL_ENV: url, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert server.stdout is not None
        ready = next((line for line in server.stdout if "?token=" in line), None)  # the inbox link: it is up
        assert ready is not None, "serve exited early: " + (server.stderr.read() if server.stderr else "")
        yield server
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=15) == 0
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate(timeout=15)


def post(port: int, body: Any) -> tuple[int, str]:
    sent = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/questions",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(sent, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()
