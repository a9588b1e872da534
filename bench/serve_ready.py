"""Serve ready: from exec to the first 200 on `/healthz`, `handraise serve` beside a bare aiohttp app, in one run.

Run: `uv run python bench/serve_ready.py [ROUNDS]` (default 7). Each round starts both, one after the other in
alternating order, each a fresh process with a fresh store, and polls `/healthz` every 5 ms until it answers 200; prints
the medians and their ratio. `handraise serve` runs on the embedded default (the web inbox alone), as the README's
first command does. The children may write bytecode caches (PYTHONDONTWRITEBYTECODE is dropped) and a first round
is not counted, so both start as they do from the second time on. Target (#29): at most twice the bare app.
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

from serving import free_port

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


def ready_after(argv: list[str], port: int, cwd: str) -> float:
    started = time.perf_counter()
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
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
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    handraise = shutil.which("handraise", path=os.path.dirname(sys.executable)) or "handraise"
    times: dict[str, list[float]] = {"bare aiohttp app": [], "handraise serve (web inbox only)": []}
    for round_number in range(-1, rounds):
        order = list(times) if round_number % 2 == 0 else list(reversed(times))
        for name in order:
            with tempfile.TemporaryDirectory() as home:
                port = free_port()
                if name.startswith("bare"):
                    argv = [sys.executable, "-c", BARE, str(port)]
                else:
                    config = Path(home) / "config.toml"
                    config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{home}/store.db"\n')
                    argv = [handraise, "serve", "--config", str(config)]
                took = ready_after(argv, port, home)
                if round_number >= 0:  # the first round writes the bytecode caches
                    times[name].append(took)
    bare = statistics.median(times["bare aiohttp app"])
    print(f"{rounds} rounds, Python {sys.version.split()[0]}, {os.cpu_count()} cores; medians, exec → first 200")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:36s} {median * 1000:7.0f} ms   {median / bare:4.2f} x the bare app")


if __name__ == "__main__":
    main()
