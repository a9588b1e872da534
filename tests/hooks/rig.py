"""Run `handraise hook <agent>` as the agent runs it, on the fixtures in ./fixtures (each agent's documented events)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

FIXTURES = Path(__file__).resolve().parent / "fixtures"
AGENTS = ("claude", "codex", "gemini", "cursor")


def fixture(name: str) -> dict[str, Any]:
    """`codex/permission_request_bash` → that event."""
    return json.loads((FIXTURES / f"{name}.json").read_text())


@dataclass
class HookRun:
    code: int
    stdout: str
    stderr: str
    seconds: float

    def output(self) -> Any:
        """The one JSON object on stdout."""
        lines = self.stdout.splitlines()
        assert len(lines) == 1, self.stdout
        return json.loads(lines[0])


def hook_argv(agent: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "bot.cli", "hook", agent, *args]


async def run_hook(agent: str, stdin: str | bytes, *args: str, env: dict[str, str] | None = None) -> HookRun:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    started = time.monotonic()
    result = await anyio.run_process(hook_argv(agent, *args), input=data, check=False, env=os.environ | (env or {}))
    return HookRun(result.returncode, result.stdout.decode(), result.stderr.decode(), time.monotonic() - started)


class HookProcess:
    """A hook started in the background, to be answered, cancelled or signalled while it waits."""

    def __init__(self, agent: str, event: dict[str, Any], *args: str) -> None:
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            hook_argv(agent, *args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(event))
        self.process.stdin.close()
        self.process.stdin = None  # communicate() would flush it again

    def signal(self, sig: signal.Signals = signal.SIGTERM) -> None:
        self.process.send_signal(sig)

    async def finish(self) -> HookRun:
        stdout, stderr = await anyio.to_thread.run_sync(lambda: self.process.communicate(timeout=30))
        return HookRun(self.process.returncode, stdout, stderr, time.monotonic() - self.started)
