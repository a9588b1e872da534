"""A real `handraise serve` in a process of its own, for tests that kill it (-9) or read what it printed."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.abc import Process

from bot.webhooks.sender import TIMING_FOR_TESTS

BANNER = re.compile(r"handraise is serving (http://\S+)")


def read(log: Path) -> str:
    """What the processes wrote to `log` so far ("" before the first)."""
    return log.read_text() if log.exists() else ""


@asynccontextmanager
async def serve(
    config: Path, log: Path, timing: dict[str, float] | None = None, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[Process, str]]:
    """`handraise serve` in a process of its own, up once it printed its banner; stopped with SIGTERM if alive."""
    environment = os.environ | {"PYTHONUNBUFFERED": "1", TIMING_FOR_TESTS: json.dumps(timing or {})}
    start = len(read(log))  # a log shared by several runs: this run's banner comes after
    with log.open("a") as out:
        command = [sys.executable, "-m", "bot.cli", "serve", "--config", str(config)]
        process = await anyio.open_process(command, stdout=out, stderr=out, env=environment | (env or {}))
    try:
        with anyio.fail_after(60):
            while not (found := BANNER.search(read(log), start)):
                assert process.returncode is None, read(log)
                await anyio.sleep(0.05)
        yield process, found[1]
    finally:
        if process.returncode is None:
            process.terminate()
            with anyio.move_on_after(20):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


async def kill_9(process: Process) -> None:
    process.kill()
    await process.wait()
