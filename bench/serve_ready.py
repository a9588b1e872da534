"""Serve ready: from exec to the first 200 on `/healthz`, `handraise serve` beside a bare aiohttp app, in one run.

Run: `uv run python bench/serve_ready.py [ROUNDS] [--before DIR]` (default 7). Each round starts every case, one
after the other in alternating order, each a fresh process with a fresh store, and polls `/healthz` every 5 ms until
it answers 200; prints the medians and their ratio to the bare app. `handraise serve` runs on the embedded default
(the web inbox alone), as the README's first command does. The children may write bytecode caches
(PYTHONDONTWRITEBYTECODE is dropped) and a first round is not counted, so all start as they do from the second time
on. Target (#29): at most twice the bare app.

`--before DIR` adds a third case in the same rounds: the same `handraise` program on the `bot` and `core` packages of
another checkout (`git archive main | tar -x -C DIR`), for a before/after measured under the same load.
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving import before_option, free_port

BARE = """
import sys
from aiohttp import web

async def healthz(request):
    return web.json_response({"ok": True})

app = web.Application()
app.router.add_get("/healthz", healthz)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
"""
POLL_SECONDS = 0.005


def ready_after(argv: list[str], port: int, cwd: str, python_path: str | None = None) -> float:
    started = time.perf_counter()
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    if python_path is not None:
        env["PYTHONPATH"] = python_path
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if process.poll() is not None:
                raise SystemExit(f"{argv[0]} exited with {process.returncode} before it was ready")
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            try:
                connection.request("GET", "/healthz")
                if connection.getresponse().status == 200:
                    return time.perf_counter() - started
            except OSError:
                pass
            finally:
                connection.close()
            time.sleep(POLL_SECONDS)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)


def main() -> None:
    args = sys.argv[1:]
    before = before_option(args)
    rounds = int(args[0]) if args else 7
    handraise = shutil.which("handraise", path=os.path.dirname(sys.executable)) or "handraise"
    after = "handraise serve (web inbox only)"
    cases = ["bare aiohttp app", after] + ([f"the same at {before}"] if before else [])
    times: dict[str, list[float]] = {name: [] for name in cases}
    for round_number in range(-1, rounds):
        order = cases if round_number % 2 == 0 else list(reversed(cases))
        for name in order:
            with tempfile.TemporaryDirectory() as home:
                port = free_port()
                python_path = None
                if name.startswith("bare"):
                    argv = [sys.executable, "-c", BARE, str(port)]
                else:
                    config = Path(home) / "config.toml"
                    config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{home}/store.db"\n')
                    argv = [sys.executable, handraise, "serve", "--config", str(config)]
                    python_path = before if name != after else None
                took = ready_after(argv, port, home, python_path)
                if round_number >= 0:  # the first round writes the bytecode caches
                    times[name].append(took)
    bare = statistics.median(times["bare aiohttp app"])
    print(f"{rounds} rounds, Python {sys.version.split()[0]}, {os.cpu_count()} cores; medians, exec → first 200")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:36s} {median * 1000:7.0f} ms   {median / bare:4.2f} x the bare app")


if __name__ == "__main__":
    main()
