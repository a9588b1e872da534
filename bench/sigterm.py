"""How long `handraise serve` takes to stop on SIGTERM with COUNT pending API questions (target: under 5 s at 100,000).

Run: `uv run python bench/sigterm.py [COUNT]`. Fills a fresh store with COUNT pending API questions already on show
in the web inbox (one transaction), starts a real server on it, waits until every question is resumed (each one a
waiting task), sends SIGTERM and times the exit. Prints the start-up and the stop times.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from serving import free_port, start_serve

from bot.store.records import QuestionRecord
from bot.store.sqlite.store import Store
from core import AskUserQuestionItem


def fill(path: Path, count: int) -> None:
    """COUNT pending API questions with their web deliveries, written as the store writes them, in one go."""
    with Store.open(path) as store, store._write() as db:  # one transaction: a benchmark's set-up, not an API
        for index in range(count):
            item = AskUserQuestionItem(id="go", question=f"Deploy build {index}?", options=[{"label": "Yes"}])  # type: ignore[list-item]
            record = QuestionRecord(questions=[item], origin="api")
            created = record.created_at.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
            row = record.model_dump_json(by_alias=True, exclude_none=True)
            db.execute("INSERT INTO questions VALUES (?, ?, NULL, 'pending', ?)", (record.id, created, row))
            db.execute("INSERT INTO deliveries VALUES (?, 'web', ?, '{}', ?)", (record.id, record.id, created))


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "sigterm.db"
        started = time.perf_counter()
        fill(store, count)
        print(f"filled the store with {count:,} pending questions in {time.perf_counter() - started:.1f} s")
        port = free_port()
        config = Path(tmp) / "config.toml"
        config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{store}"\n')
        started = time.perf_counter()
        server = start_serve(config)
        try:
            assert server.stdout is not None
            resumed = 0
            for line in server.stdout:
                if found := re.search(r"resumed (\d+) pending", line):
                    resumed = int(found[1])
                    break
            assert resumed == count, f"resumed {resumed} of {count}"
            ready = time.perf_counter() - started
            # Resuming spawns the waits; let them all reach their wait (a /healthz answer means the loop is free).
            time.sleep(2.0)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=120) as reply:
                assert json.loads(reply.read())["pending"] == count
            settled = time.perf_counter() - started
            rss = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{server.pid}/status").read_text())
            assert rss is not None
            spy = None
            if profile := os.environ.get("PYSPY_OUT"):
                # `PYSPY_OUT=stop.txt`: a py-spy profile of the stop, folded stacks (needs root or ptrace rights).
                extra = os.environ.get("PYSPY_ARGS", "").split()
                spy = subprocess.Popen(["py-spy", "record", "-p", str(server.pid), "-f", "raw", "-o", profile, *extra])
                time.sleep(1.0)
            fields = Path(f"/proc/{server.pid}/stat").read_text().rpartition(")")[2].split()
            cpu_before = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            stopping = time.perf_counter()
            server.send_signal(signal.SIGTERM)
            _, status, usage = os.wait4(server.pid, 0)
            stopped = time.perf_counter() - stopping
            server.returncode = code = os.waitstatus_to_exitcode(status)
            cpu = usage.ru_utime + usage.ru_stime - cpu_before
            if spy is not None:
                spy.wait(timeout=60)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
        memory = int(rss[1]) // 1024
        print(f"serve printed its banner after {ready:.1f} s; settled after {settled:.1f} s; RSS {memory} MiB")
        print(f"SIGTERM → exit (code {code}):  {stopped:.2f} s, {cpu:.2f} s of CPU   (target < 5 s)")


if __name__ == "__main__":
    main()
