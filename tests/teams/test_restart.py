"""`handraise serve` as a process with Teams: SIGTERM stops it with exit 0 and the question pending; started again,
the old card's button still answers it, and nothing is posted again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import anyio
import pytest

from bot.teams.incoming import MESSAGES_PATH
from tests.bot.program_rig import free_port

from .fake_teams import ALICE, APP_ID, APP_PASSWORD, FakeTeams, fake_teams
from .questions import action
from .test_serve import QUESTION, teams_table

pytestmark = pytest.mark.anyio


def spawn(tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "serve"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ
        | {"PYTHONUNBUFFERED": "1", "HANDRAISE_CONFIG": "", "TEAMS_APP_ID": APP_ID, "TEAMS_APP_PASSWORD": APP_PASSWORD},
    )


async def start(tmp_path: Path) -> subprocess.Popen[str]:
    server = spawn(tmp_path)
    assert server.stdout is not None
    with anyio.fail_after(60):
        while "agents ask:" not in (line := await anyio.to_thread.run_sync(server.stdout.readline)):
            assert line, "serve exited early: " + (server.stderr.read() if server.stderr else "")
    return server


async def stop(server: subprocess.Popen[str]) -> int:
    server.send_signal(signal.SIGTERM)
    try:
        return await anyio.to_thread.run_sync(lambda: server.wait(timeout=15))
    finally:
        if server.poll() is None:
            server.kill()
        await anyio.to_thread.run_sync(lambda: server.communicate(timeout=15))


def configure(tmp_path: Path, fake: FakeTeams, port: int) -> None:
    server = f'[server]\nlisten = "127.0.0.1:{port}"\n'
    (tmp_path / "config.toml").write_text(server + teams_table(fake, tmp_path, [ALICE.email]))
    fake.bot_url = f"http://127.0.0.1:{port}{MESSAGES_PATH}"


async def test_an_old_card_answers_its_question_after_serve_is_stopped_and_started_again(tmp_path: Path) -> None:
    port = free_port()
    async with fake_teams() as fake:
        configure(tmp_path, fake, port)
        server = await start(tmp_path)
        try:
            ask = {"questions": [QUESTION], "agent": {"id": "deploy-7"}}
            url = f"http://127.0.0.1:{port}/v1/questions"
            async with aiohttp.ClientSession() as http, http.post(url, json=ask) as response:
                question_id = (await response.json())["id"]
            await fake.wait_for("POST", seconds=20)
        finally:
            assert await stop(server) == 0
        card_id = next(iter(fake.activities))
        server = await start(tmp_path)
        try:
            data = dict(action(fake.card(card_id), "Production")["data"])
            status, _ = await fake.send(fake.execute(card_id, ALICE, data))
            assert status == 200
            url = f"http://127.0.0.1:{port}/v1/questions/{question_id}?wait=20"
            async with aiohttp.ClientSession() as http, http.get(url) as response:
                body = await response.json()
            assert body["status"] == "answered" and body["answer"]["answers"][0]["selected"] == ["Production"]
            assert len(fake.posted()) == 1
            await fake.wait_for("PUT", seconds=20)
        finally:
            assert await stop(server) == 0
