"""What the benchmarks that drive a real `handraise serve` share: a free port, the process, its inbox token, and a
fixed number of concurrent clients working through a list of jobs."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cpu_seconds(pid: int, *, reaped_children: bool = False) -> float:
    """User + system CPU time of a process so far: what a request costs, whatever else loads the machine.
    `reaped_children` adds that of its children that have ended and been waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    times = fields[11:15] if reaped_children else fields[11:13]
    return sum(int(ticks) for ticks in times) / os.sysconf("SC_CLK_TCK")


def machine_busy() -> tuple[int, int]:
    """Clock ticks so far of all CPUs: (busy, total), from /proc/stat; their difference over a span says how much of
    the machine was in use (a server bound by one core while the rest idles, or every core taken)."""
    values = [int(field) for field in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle and iowait
    return sum(values) - idle, sum(values)


def before_option(args: list[str]) -> str | None:
    """Take `--before DIR` out of `args` (a benchmark's command line): DIR made absolute, or None without it."""
    if "--before" not in args:
        return None
    at = args.index("--before")
    before = str(Path(args[at + 1]).resolve())
    del args[at : at + 2]
    return before


def start_python(argv: list[str], **popen: Any) -> subprocess.Popen[str]:
    """This interpreter running `argv`, its stdout readable line by line as the lines come."""
    environment = os.environ | {"PYTHONUNBUFFERED": "1"} | popen.pop("env", {})
    stderr = popen.pop("stderr", subprocess.DEVNULL)
    return subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.PIPE, stderr=stderr, text=True, env=environment, **popen
    )


def start_serve(config: Path, **popen: Any) -> subprocess.Popen[str]:
    """`handraise serve --config CONFIG` in a child process (read its banner with `inbox_token`)."""
    return start_python(["-m", "bot.cli", "serve", "--config", str(config)], **popen)


def inbox_token(server: subprocess.Popen[str]) -> str:
    """The access token of the inbox URL that a starting `serve` prints; raises if it ends without printing one."""
    assert server.stdout is not None
    for line in server.stdout:
        if found := re.search(r"\?token=(\S+)", line):
            return found[1]
    raise RuntimeError("the server did not print its inbox URL")


async def in_parallel(count: int, job: Callable[[int], Awaitable[None]], concurrency: int = 32) -> float:
    """Run `job(0)` … `job(count - 1)` on `concurrency` clients; the seconds it took."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(count):
        queue.put_nowait(index)

    async def worker() -> None:
        while not queue.empty():
            await job(queue.get_nowait())

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start
