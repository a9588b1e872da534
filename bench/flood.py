"""5,000 agents long-polling one `handraise serve` at once, every one answered through the web inbox exactly once.

Run: `uv run python bench/flood.py [AGENTS] [--server-files N] [--source DIR]`. Starts a real server in a subprocess
(web inbox only, a fresh SQLite store, loopback), asks AGENTS questions over the HTTP API (one per agent), then
opens AGENTS concurrent long-polls (`GET /v1/questions/{id}?wait=300`) and, once they all wait, answers every question
by POSTing the inbox's answer form. Throughout, a separate process loads the inbox page (a new connection each time)
every 100 ms and records how long it takes. Prints the figures for bench/RESULTS.md; exits non-zero if an answer
went missing or came twice. `--server-files 1024` gives the server a common default open-files limit; `--source DIR`
runs the server from another checkout (e.g. `git archive main | tar -x -C DIR`), for a before/after comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

import aiohttp
from serving import free_port, inbox_token, start_serve

from bot.store.sqlite.store import Store

ASK_CONCURRENCY = 32
ANSWER_CONCURRENCY = 32
SAMPLE_EVERY = 0.1
INBOX_TARGET = 1.0
TIME_LIMIT = 120
"""How long agents may still wait once every question was answered (a server that lost them never answers)."""
GIVE_UP_AFTER = 50
"""Failed answer POSTs (refused, timed out) after which answering stops: the inbox is unreachable."""
SAMPLE_TIMEOUT = 5.0
CONNECT_TIMEOUT = 30.0
"""An agent that cannot connect for this long counts as failed (a server out of open files stops accepting)."""


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    match = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.MULTILINE)
    assert match is not None
    return int(match[1]) / 1024


def raise_own_open_files_limit(needed: int) -> int:
    """The client holds one socket per agent too."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed <= hard or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft < needed:
        sys.exit(f"the client needs {needed} open files and may have {soft}; raise `ulimit -Hn`")
    return soft


def sample_inbox(
    base: str, headers: dict[str, str], stop: EventType, samples: multiprocessing.Queue[list[tuple[float, float, bool]]]
) -> None:
    """Load the inbox page on a fresh connection every SAMPLE_EVERY seconds: (started at, seconds taken, ok)."""
    taken: list[tuple[float, float, bool]] = []
    while not stop.is_set():
        at, start = time.time(), time.perf_counter()
        try:
            with urllib.request.urlopen(
                urllib.request.Request(f"{base}/", headers=headers), timeout=SAMPLE_TIMEOUT
            ) as page:
                page.read()
                ok = page.status == 200
        except OSError:
            ok = False
        taken.append((at, time.perf_counter() - start, ok))
        stop.wait(SAMPLE_EVERY)
    samples.put(taken)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Flood:
    def __init__(self, agents: int, base: str, token: str, server: subprocess.Popen[str]) -> None:
        self.agents = agents
        self.base = base
        self.server = server
        self.headers = {"Authorization": f"Bearer {token}"}
        self.ids: list[str] = []
        self.results: Counter[str] = Counter()  # question id → answered results its agent received
        self.turned_away = 0
        self.failures: list[str] = []
        self.samples: list[tuple[str, float, float]] = []  # (phase, at, seconds)
        self.phases: list[tuple[float, str]] = [(0.0, "idle")]
        self.cpu: list[tuple[str, float]] = []  # (phase entered, server CPU seconds used so far)

    def enter(self, phase: str) -> None:
        self.phases.append((time.time(), phase))
        self.cpu.append((phase, cpu_seconds(self.server.pid)))

    def phase_at(self, at: float) -> str:
        return next(name for start, name in reversed(self.phases) if start <= at)

    async def ask_all(self, http: aiohttp.ClientSession) -> float:
        self.ids = [""] * self.agents
        queue: asyncio.Queue[int] = asyncio.Queue()
        for index in range(self.agents):
            queue.put_nowait(index)

        async def worker() -> None:
            while not queue.empty():
                index = queue.get_nowait()
                body = {
                    "questions": [{"id": "go", "question": f"Deploy build {index}?", "options": [{"label": "Yes"}]}],
                    "agent": {"id": f"agent-{index}"},
                }
                async with http.post(f"{self.base}/v1/questions", json=body) as reply:
                    assert reply.status == 202, await reply.text()
                    self.ids[index] = (await reply.json())["id"]

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(ASK_CONCURRENCY)))
        return time.perf_counter() - start

    async def agent(self, http: aiohttp.ClientSession, question_id: str) -> None:
        """One agent: long-poll until its question resolves, as `handraise ask` does (honouring Retry-After)."""
        while True:
            try:
                async with http.get(f"{self.base}/v1/questions/{question_id}?wait=300") as reply:
                    body = await reply.json()
                    if reply.status == 503:
                        self.turned_away += 1
                        await asyncio.sleep(float(reply.headers.get("Retry-After", "5")))
                        continue
            except (aiohttp.ClientError, TimeoutError) as error:
                self.failures.append(f"{question_id}: {error!r}")
                return
            if reply.status != 200:
                self.failures.append(f"{question_id}: HTTP {reply.status} {body}")
                return
            if body["status"] == "pending":
                continue
            if body["status"] == "answered" and body["answer"]["answers"][0]["selected"] == ["Yes"]:
                self.results[question_id] += 1
            else:
                self.failures.append(f"{question_id}: {body['status']}")
            return

    async def until_connected(self, files: int) -> int:
        """Until the server holds `files` open files, or their count stopped growing for 10 s; returns the count."""
        peak, grew = 0, time.perf_counter()
        # Another process's sockets: there is no event to await, so watch its descriptor table fill up.
        while (now := open_files(self.server.pid)) < files and time.perf_counter() - grew < 10:
            if now > peak:
                peak, grew = now, time.perf_counter()
            await asyncio.sleep(0.1)
        return max(peak, now)

    async def answer_all(self, http: aiohttp.ClientSession, csrf: str) -> tuple[float, Counter[int]]:
        statuses: Counter[int] = Counter()
        queue: asyncio.Queue[str] = asyncio.Queue()
        for question_id in self.ids:
            queue.put_nowait(question_id)

        async def worker() -> None:
            while not queue.empty() and statuses[0] < GIVE_UP_AFTER:
                question_id = queue.get_nowait()
                form = {"csrf": csrf, "q0": "0", "action": "send"}
                url = f"{self.base}/questions/{question_id}/answer"
                try:
                    async with http.post(url, data=form, allow_redirects=False) as reply:
                        statuses[reply.status] += 1
                except (aiohttp.ClientError, TimeoutError):
                    statuses[0] += 1

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(ANSWER_CONCURRENCY)))
        return time.perf_counter() - start, statuses

    async def run(self) -> bool:
        pid = self.server.pid
        async with aiohttp.ClientSession(headers=self.headers) as http:
            asked = await self.ask_all(http)
            async with http.get(f"{self.base}/") as page:
                found = re.search(r'name="csrf" value="([^"]+)"', await page.text())
            assert found is not None, "could not read the inbox's CSRF token"
        await asyncio.sleep(1.0)  # the server closes the asking connections
        idle_files = open_files(pid)
        # In a process of its own, so that the 5,000 agents' client work here does not delay the samples.
        stop, samples = multiprocessing.Event(), multiprocessing.Queue()
        sampler = multiprocessing.Process(target=sample_inbox, args=(self.base, self.headers, stop, samples))
        sampler.start()
        # This process stands for 5,000 agents on other machines: it must not starve the server of its CPU.
        os.nice(10)
        polls = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(
            connector=polls, timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT)
        ) as flood:
            self.enter("connecting")
            start = time.perf_counter()
            agents = [asyncio.create_task(self.agent(flood, question_id)) for question_id in self.ids]
            peak_files = await self.until_connected(idle_files + self.agents)
            all_waiting = time.perf_counter() - start
            self.enter("waiting")
            await asyncio.sleep(3.0)  # the inbox, sampled with every agent waiting
            rss = rss_mib(pid)
            self.enter("answering")
            async with aiohttp.ClientSession(headers=self.headers, timeout=aiohttp.ClientTimeout(total=10)) as http:
                answering, statuses = await self.answer_all(http, found[1])
            _, stuck = await asyncio.wait(agents, timeout=TIME_LIMIT)
            for agent in stuck:
                agent.cancel()
            self.failures += ["an agent still waiting after the time limit"] * len(stuck)
            self.enter("done")
        stop.set()
        for at, took, ok in samples.get(timeout=60):
            phase = self.phase_at(at)
            self.samples.append((phase if ok else f"{phase} FAILED", at, took))
        sampler.join()
        return self.report(asked, all_waiting, peak_files, idle_files, rss, answering, statuses)

    def report(
        self,
        asked: float,
        all_waiting: float,
        peak_files: int,
        idle_files: int,
        rss: float,
        answering: float,
        statuses: Counter[int],
    ) -> bool:
        count = self.agents
        exactly_once = sum(1 for question_id in self.ids if self.results[question_id] == 1)
        print(f"agents                          {count:>10,}")
        print(f"asked over the API              {count / asked:>10,.0f} asks/s")
        print(f"all long-polls waiting after    {all_waiting:>10.2f} s   (server files {idle_files} → {peak_files})")
        print(f"server RSS with all waiting     {rss:>10.1f} MiB")
        print(
            f"answered in the web inbox       {count / answering:>10,.0f} answers/s   (form replies {dict(statuses)})"
        )
        print(f"agents answered exactly once    {exactly_once:>10,}   (turned away with 503: {self.turned_away})")
        for phase in ("connecting", "waiting", "answering"):
            took = [seconds for name, _, seconds in self.samples if name == phase]
            failed = sum(1 for name, _, _ in self.samples if name == f"{phase} FAILED")
            if took:
                print(
                    f"inbox page while {phase:<11}   p50 {percentile(took, 0.5) * 1000:6.1f} ms   "
                    f"p99 {percentile(took, 0.99) * 1000:6.1f} ms   max {max(took) * 1000:6.1f} ms   "
                    f"({len(took)} loads, {failed} failed)"
                )
        used = ", ".join(
            f"{phase} {after - before:.1f} s"
            for (phase, before), (_, after) in zip(self.cpu, self.cpu[1:], strict=False)
        )
        print(f"server CPU per phase            {used}")
        worst = max((seconds for _, _, seconds in self.samples), default=0.0)
        failed = sum(1 for name, _, _ in self.samples if name.endswith("FAILED"))
        within = "yes" if worst <= INBOX_TARGET and not failed else "NO"
        print(f"inbox within {INBOX_TARGET:.0f} s throughout       {within}")
        if self.failures or exactly_once != count:
            print(f"FAILED: {len(self.failures)} agents failed, e.g. {self.failures[:3]}")
        return not self.failures and exactly_once == count


def limit_server_files(count: int | None) -> Callable[[], None] | None:
    if count is None:
        return None
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


def main() -> None:
    parser = argparse.ArgumentParser(description="5,000 agents long-polling one handraise serve")
    parser.add_argument("agents", type=int, nargs="?", default=5_000)
    parser.add_argument("--server-files", type=int, help="the server's open-files limit (soft and hard), e.g. 1024")
    parser.add_argument("--source", type=Path, help="run the server from this checkout (e.g. an older commit)")
    args = parser.parse_args()
    agents = args.agents
    raise_own_open_files_limit(agents + 512)
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        config = Path(tmp) / "config.toml"
        config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{tmp}/flood.db"\n')
        server = start_serve(
            config,
            stderr=(Path(tmp) / "serve.log").open("w"),
            env={"PYTHONPATH": str(args.source)} if args.source else {},
            cwd=args.source,
            preexec_fn=limit_server_files(args.server_files),
        )
        ok = False
        try:
            assert server.stdout is not None
            token = inbox_token(server)
            ok = asyncio.run(Flood(agents, f"http://127.0.0.1:{port}", token, server).run())
        finally:
            server.terminate()
            server.wait(timeout=60)
        with Store.open(f"{tmp}/flood.db") as store:
            answered = Counter(
                event.question_id for event in store.history(limit=10 * agents) if event.kind == "answered"
            )
        logged = (Path(tmp) / "serve.log").read_text()
        print(f"server log: 'Too many open files' {logged.count('Too many open files'):>6}   ({len(logged):,} bytes)")
        records = Counter(re.sub(r"^\S+ \S+ ", "", line)[:100] for line in logged.splitlines() if line[:2] == "20")
        for line, times in records.most_common(4):
            print(f"  {times:>6} times: {line}")
        print(
            f"audit: questions answered once  {sum(1 for n in answered.values() if n == 1):>10,}   (twice or more: "
            f"{sum(1 for n in answered.values() if n > 1)})"
        )
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
