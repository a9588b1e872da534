"""`handraise serve` as a real process with the Telegram channel on the fake Bot API: for what happens when it gets
SIGTERM in the middle of a tap."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import anyio
from anyio.abc import Process

from tests.bot.program_rig import free_port

from .fake_telegram import TOKEN, FakeTelegram
from .rig import CHAT

WEBHOOK_SECRET = "stop-test_secret"


@dataclass
class Served:
    """A running `serve`: its process, where it listens, and every line it has printed so far (stdout and log)."""

    process: Process
    base_url: str
    store: Path
    lines: list[str] = field(default_factory=list[str])
    _changed: anyio.Event = field(default_factory=anyio.Event)

    async def collect(self) -> None:
        assert self.process.stdout is not None
        pending = ""
        async for chunk in self.process.stdout:
            pending += chunk.decode(errors="replace")
            *complete, pending = pending.split("\n")
            self.lines.extend(complete)
            self._changed.set()
            self._changed = anyio.Event()

    async def line(self, containing: str, seconds: float = 30) -> str:
        """The first line printed that contains `containing`, once there is one."""
        with anyio.fail_after(seconds):
            while not (found := [line for line in self.lines if containing in line]):
                if self.process.returncode is not None:
                    raise AssertionError("serve exited early:\n" + "\n".join(self.lines))
                await self._changed.wait()
        return found[0]

    async def ask(self, question: dict[str, Any]) -> str:
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.base_url}/v1/questions", json={"questions": [question]}) as response,
        ):
            assert response.status == 202, await response.text()
            return str((await response.json())["id"])


@asynccontextmanager
async def serving(tmp_path: Path, fake: FakeTelegram, *, webhook: bool = False) -> AsyncIterator[Served]:
    """`handraise serve` with the Telegram channel long-polling `fake` (or, with `webhook`, taking its updates at
    /telegram/webhook), ready; killed on the way out if it has not exited by then."""
    port, store = free_port(), tmp_path / "handraise.db"
    mode = (
        'mode = "webhook"\nwebhook_url = "https://bot.example.org/telegram/webhook"\n'
        'webhook_secret_env = "TELEGRAM_WEBHOOK_SECRET"\n'
        if webhook
        else ""
    )
    config = tmp_path / "config.toml"
    config.write_text(
        f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{store}"\n'
        f'[telegram]\napi_url = "{fake.url}"\n{mode}[[telegram.subscriptions]]\nchat = {CHAT}\n'
    )
    env = os.environ | {
        "PYTHONUNBUFFERED": "1",
        "HANDRAISE_CONFIG": str(config),
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_WEBHOOK_SECRET": WEBHOOK_SECRET,
    }
    command = [sys.executable, "-m", "bot.cli", "serve"]
    async with (
        await anyio.open_process(command, cwd=tmp_path, env=env, stderr=subprocess.STDOUT) as process,
        anyio.create_task_group() as tasks,
    ):
        served = Served(process, f"http://127.0.0.1:{port}", store)
        tasks.start_soon(served.collect)
        try:
            await served.line("web inbox:")
            yield served
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()
            tasks.cancel_scope.cancel()
