"""`handraise serve` with its real web inbox, the hook run as Claude Code runs it, and answers posted in the inbox."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from bot.program import Running, running
from bot.store.records import QuestionRecord
from bot.web import WebInbox
from tests.bot.fakes import sync_store
from tests.bot.program_rig import config_for

TOKEN_ENV = "HANDRAISE_TEST_API_TOKEN"


@asynccontextmanager
async def serve_with_inbox(tmp_path: Path, extra: str = "", *, api_token: str | None = None) -> AsyncIterator[Running]:
    """The program with its real web inbox; with `api_token`, /v1 (and /mcp) require it as a bearer token."""
    config = config_for(tmp_path, extra)
    with pytest.MonkeyPatch.context() as env:
        if api_token is not None:
            env.setenv(TOKEN_ENV, api_token)
            server = config.server.model_copy(update={"api_token_env": TOKEN_ENV})
            config = config.model_copy(update={"server": server})
        async with running(config) as program:
            yield program


@dataclass
class HookRun:
    code: int
    stdout: str
    stderr: str


def hook_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "bot.cli", "claude-hook", *args]


async def run_hook(stdin: str, *args: str, env: dict[str, str] | None = None) -> HookRun:
    result = await anyio.run_process(hook_argv(*args), input=stdin.encode(), check=False, env=os.environ | (env or {}))
    return HookRun(result.returncode, result.stdout.decode(), result.stderr.decode())


class HookProcess:
    """A hook started in the background, to be answered, cancelled or signalled while it waits."""

    def __init__(self, stdin: str, *args: str) -> None:
        self.process = subprocess.Popen(
            hook_argv(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.process.stdin is not None
        self.process.stdin.write(stdin)
        self.process.stdin.close()
        self.process.stdin = None  # communicate() would flush it again

    def signal(self, sig: signal.Signals = signal.SIGTERM) -> None:
        self.process.send_signal(sig)

    async def finish(self) -> HookRun:
        stdout, stderr = await anyio.to_thread.run_sync(lambda: self.process.communicate(timeout=30))
        return HookRun(self.process.returncode, stdout, stderr)


async def pending_question(program: Running) -> QuestionRecord:
    with anyio.fail_after(20):
        while not (pending := await program.installation.store.list_questions(status="pending")):
            await anyio.sleep(0.02)
        # A question is in the store before its asker hears the 202 (that waits for the fsync): wait until the
        # asker is long-polling for it, so that a signal sent now finds it waiting (its handlers installed).
        while not program.installation.ledger.waiting:
            await anyio.sleep(0.02)
    return pending[0]


async def answer_in_inbox(program: Running, question_id: str, fields: list[tuple[str, str]]) -> None:
    """Post the inbox's answer form as a person's browser does (signed in by the inbox token, with its CSRF field)."""
    inbox = program.installation.channel("web")
    assert isinstance(inbox, WebInbox)
    store = program.installation.store
    with anyio.fail_after(10):
        while await store.get_delivery(question_id, "web") is None:
            await anyio.sleep(0.02)
    headers = {"Authorization": f"Bearer {inbox.token}"}
    async with aiohttp.ClientSession(program.base_url, headers=headers) as session:
        async with session.get("/") as page:
            found = re.search(r'name="csrf" value="([^"]+)"', await page.text())
        assert found is not None
        form = [("csrf", found[1]), ("action", "send"), *fields]
        async with session.post(f"/questions/{question_id}/answer", data=form, allow_redirects=False) as reply:
            assert reply.status == 303, await reply.text()


def status_of(program: Running, question_id: str) -> Any:
    record = sync_store(program.installation.store).get_question(question_id)
    assert record is not None
    return record.status
