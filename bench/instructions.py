"""Instructions per ask and per answer: `handraise serve` beside the non-durable floor, counted by callgrind.

Run: `uv run python bench/instructions.py [REQUESTS] [--before DIR]` (default 300; needs `valgrind`, which it names
and skips without). Starts each server under `valgrind --tool=callgrind` with counting off, warms it up (60 asks and
their answers), then counts the instructions the whole process (every thread) executes while REQUESTS questions are
asked through the HTTP API by 32 clients (and a second after, for the delivery that follows a 202), and again while
they are answered through the web inbox's form; prints thousands of instructions (kIr) per request and each ratio to
the floor of `bench/api_floor.py` (`--floor-non-durable`: one row per ask, one UPDATE per answer, no fsync).

Why: on a shared VM the same code measures 380 to 650 µs of CPU per ask within an hour, so CPU time compares only
side by side; instructions do not depend on the neighbours (two runs agree within 1 %), so a change to the request
path can be weighed alone. They are not time: kernel work (the fsyncs, the sockets) is not counted, and an
instruction of a tight C loop (a `printf`, a hash) costs less than one of Python's. `api_floor.py` says what the
rates are; this says where a change moved the work.

`--before DIR` adds the same `handraise serve` on the `bot` and `core` packages of another checkout
(`git archive main | tar -x -C DIR`), counted the same way, for a before/after.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import aiohttp
from api_floor import Server, Target, handraise_target, wait_delivered
from serving import before_option, free_port, inbox_token

WARM_UP = 60
BENCH = Path(__file__).resolve().parent


def under_callgrind(argv: list[str], output: Path, cwd: str, python_path: str | None) -> subprocess.Popen[str]:
    """`python ARGV` under callgrind, counting nothing until told (`callgrind_control -i on`)."""
    environment = os.environ | {"PYTHONUNBUFFERED": "1"}
    if python_path is not None:
        environment["PYTHONPATH"] = python_path
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={output}"]
    return subprocess.Popen(
        [*command, sys.executable, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=environment,
        cwd=cwd,
    )


def control(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def counted(output: Path) -> dict[str, int]:
    """The instructions of each dump callgrind wrote for `output`, by the label it was dumped with."""
    found: dict[str, int] = {}
    for part in output.parent.glob(output.name + ".*"):
        text = part.read_text(errors="replace")
        label = re.search(r"^desc: Trigger: dump (\S+)", text, re.MULTILINE)
        total = re.search(r"^totals: (\d+)", text, re.MULTILINE)
        if label and total:
            found[label[1]] = int(total[1])
    return found


async def drive(target: Target, requests: int, pid: int, inbox: bool) -> None:
    """Warm up, then count an ask phase and an answer phase (dumped as `asks` and `answers`)."""

    async def asked(count: int) -> list[str]:
        _, ids = await target.ask_many(count)
        if inbox:
            await wait_delivered(target.http, target.base, ids)
        return ids

    await target.answer_all(await asked(WARM_UP))
    control(pid, "-i", "on")
    _, ids = await target.ask_many(requests)
    await asyncio.sleep(1.0)  # an ask's work includes the delivery that runs after its 202
    control(pid, "-d", "asks")
    if inbox:
        await wait_delivered(target.http, target.base, ids)
    control(pid, "-z")
    await target.answer_all(ids)
    await asyncio.sleep(0.5)
    control(pid, "-d", "answers")
    control(pid, "-i", "off")


async def count_serve(requests: int, tmp: Path, python_path: str | None) -> dict[str, int]:
    port = free_port()
    work = Path(tempfile.mkdtemp(dir=tmp))
    config = work / "config.toml"
    config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{work}/handraise.db"\n')
    output = work / "callgrind.out"
    cwd = python_path or str(BENCH.parent)
    process = under_callgrind(["-m", "bot.cli", "serve", "--config", str(config)], output, cwd, python_path)
    try:
        token = inbox_token(process)
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:
            target = await handraise_target(http, Server(base, process.pid))
            await drive(target, requests, process.pid, inbox=True)
    finally:
        process.terminate()
        process.wait(timeout=300)
    return counted(output)


async def count_floor(requests: int, tmp: Path) -> dict[str, int]:
    port = free_port()
    work = Path(tempfile.mkdtemp(dir=tmp))
    output = work / "callgrind.out"
    argv = [str(BENCH / "api_floor.py"), "--floor-non-durable", str(port), str(work / "floor.db")]
    process = under_callgrind(argv, output, str(work), None)
    try:
        assert process.stdout is not None
        assert "ready" in process.stdout.readline(), "the floor did not start"
        async with aiohttp.ClientSession() as http:
            target = Target("floor", Server(f"http://127.0.0.1:{port}", process.pid), http, "")
            await drive(target, requests, process.pid, inbox=False)
    finally:
        process.terminate()
        process.wait(timeout=300)
    return counted(output)


def main() -> None:
    args = sys.argv[1:]
    before = before_option(args)
    requests = int(args[0]) if args else 300
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("skipped: this needs valgrind (apt install valgrind)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        floor = asyncio.run(count_floor(requests, Path(tmp)))
        cases = {"handraise": asyncio.run(count_serve(requests, Path(tmp), None))}
        if before is not None:
            cases[f"handraise at {before}"] = asyncio.run(count_serve(requests, Path(tmp), before))
    print(f"{'kIr per request':<32} {'ask':>8} {'answer':>8}   ratio to the floor (ask, answer)")
    print(f"{'non-durable floor':<32} {floor['asks'] / requests / 1e3:>8.0f} {floor['answers'] / requests / 1e3:>8.0f}")
    for name, counts in cases.items():
        ask, answer = counts["asks"] / requests, counts["answers"] / requests
        ratios = f"{ask / floor['asks'] * requests:.2f}, {answer / floor['answers'] * requests:.2f}"
        print(f"{name:<32} {ask / 1e3:>8.0f} {answer / 1e3:>8.0f}   {ratios}")


if __name__ == "__main__":
    main()
