"""Several `handraise serve` replicas on one PostgreSQL, beside the SQLite single process, measured in the same run.

Run: `uv run python bench/replicas.py [--rounds R] [--per-round N] [--samples K] [--pending P]` as root or a user who
may run PostgreSQL (Debian's package; fsync on, as in production). Three parts:

1. Throughput: the SQLite process and 1, 2 and 3 PostgreSQL replicas (each set on its own fresh database) all run at
   once; each round asks N questions of each set over the API with 32 concurrent clients spread round-robin over its
   replicas (as a load balancer without sticky sessions does), then answers them all in the web inbox of the next
   replica over. The sets take turns in a rotating order. Prints asks/s and answers/s per round and the medians.
2. Cross-replica latency: K times, an agent long-polls replica A, a person answers in replica B's inbox; the time
   from sending the answer to the long-poll returning it (p50, p99; target p50 ≤ 50 ms on loopback).
3. P pending questions (default 100,000) asked across 3 fresh replicas: time to create them, each replica's RSS
   before and after, and how long the inbox, /healthz, /v1/questions and one ask → answer → long-poll take then.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from latency import percentiles
from scale import rss_kib
from serving import in_parallel, start_serve

from bot.web.auth import InboxAuth
from tests.postgres_server import PostgresServer, server_binaries

URL_ENV = "HANDRAISE_DATABASE_URL"
CONCURRENCY = 32
LONG_POLL = 10


@dataclass
class Replica:
    process: subprocess.Popen[str]
    base: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def csrf(self) -> str:
        return InboxAuth(self.token).csrf


def start_set(directory: Path, count: int, url: str | None) -> list[Replica]:
    """`count` replicas sharing one config (`listen` port 0: each prints where it serves); SQLite when `url` is None."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "config.toml"
    store = f'path = "{directory / "handraise.db"}"\n' + (f'url_env = "{URL_ENV}"\n' if url else "")
    config.write_text(f'[server]\nlisten = "127.0.0.1:0"\n[store]\n{store}')
    processes = [start_serve(config, env={URL_ENV: url} if url else {}, cwd=directory) for _ in range(count)]
    return [_ready(process) for process in processes]


def _ready(process: subprocess.Popen[str]) -> Replica:
    assert process.stdout is not None
    base = ""
    for line in process.stdout:
        if found := re.search(r"handraise is serving (http://\S+)", line):
            base = found[1]
        elif found := re.search(r"\?token=(\S+)", line):
            return Replica(process, base, found[1])
    raise RuntimeError("a replica ended before serving")


class Client:
    """Asks and answers on a set of replicas, spread round-robin."""

    def __init__(self, http: aiohttp.ClientSession, replicas: list[Replica]) -> None:
        self.http = http
        self.replicas = replicas

    async def ask(self, replica: Replica, text: str) -> str:
        body = {"questions": [{"id": "go", "question": text, "options": [{"label": "Yes"}, {"label": "No"}]}]}
        async with self.http.post(f"{replica.base}/v1/questions", json=body) as reply:
            assert reply.status == 202, await reply.text()
            return str((await reply.json())["id"])

    async def answer(self, replica: Replica, question_id: str) -> None:
        form = {"csrf": replica.csrf, "q0": "0", "action": "send"}
        url = f"{replica.base}/questions/{question_id}/answer"
        async with self.http.post(url, data=form, headers=replica.headers, allow_redirects=False) as reply:
            assert reply.status == 303, (reply.status, await reply.text())

    async def shown(self, replica: Replica, question_id: str) -> None:
        """Until `replica`'s inbox shows the question (delivery runs after the ask's 202)."""
        while True:
            async with self.http.get(f"{replica.base}/questions/{question_id}/card", headers=replica.headers) as card:
                if card.status == 200:
                    return
            await asyncio.sleep(0.01)

    async def ask_many(self, count: int, label: str = "") -> tuple[float, list[str]]:
        ids = [""] * count

        async def one(index: int) -> None:
            ids[index] = await self.ask(self.replicas[index % len(self.replicas)], f"Deploy {label}{index}?")

        return count / await in_parallel(count, one, CONCURRENCY), ids

    async def answer_all(self, ids: list[str]) -> float:
        for question_id in ids[-CONCURRENCY:]:
            await self.shown(self.replicas[0], question_id)

        async def one(index: int) -> None:
            await self.answer(self.replicas[(index + 1) % len(self.replicas)], ids[index])

        return len(ids) / await in_parallel(len(ids), one, CONCURRENCY)


async def throughput(sets: dict[str, list[Replica]], rounds: int, per_round: int) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=200)) as http:
        clients = {label: Client(http, replicas) for label, replicas in sets.items()}
        for client in clients.values():  # warm: imports, pools, caches
            _, ids = await client.ask_many(100, "warm ")
            await client.answer_all(ids)
        asks: dict[str, list[float]] = {label: [] for label in sets}
        answers: dict[str, list[float]] = {label: [] for label in sets}
        labels = list(sets)
        print(f"{'round':>5}  " + "  ".join(f"{label:>24}" for label in labels) + "   (asks/s | answers/s)")
        for round_ in range(rounds):
            order = labels[round_ % len(labels) :] + labels[: round_ % len(labels)]
            for label in order:
                rate, ids = await clients[label].ask_many(per_round, f"r{round_} ")
                asks[label].append(rate)
                answers[label].append(await clients[label].answer_all(ids))
            print(
                f"{round_ + 1:>5}  "
                + "  ".join(f"{asks[label][-1]:>11,.0f} | {answers[label][-1]:>10,.0f}" for label in labels)
            )
        print(
            f"{'median':>5}  "
            + "  ".join(
                f"{statistics.median(asks[k]):>11,.0f} | {statistics.median(answers[k]):>10,.0f}" for k in labels
            )
        )


async def cross_replica_latency(replicas: list[Replica], samples: int) -> None:
    a, b = replicas[0], replicas[1]
    times: list[float] = []
    async with aiohttp.ClientSession() as http:
        client = Client(http, replicas)
        for index in range(samples):
            question_id = await client.ask(a, f"Latency {index}?")
            await client.shown(b, question_id)
            poll = asyncio.create_task(_long_poll(http, a, question_id))
            await asyncio.sleep(0.05)  # the long-poll reaches `a` first
            start = time.perf_counter()
            await client.answer(b, question_id)
            status = await poll
            times.append(time.perf_counter() - start)
            if status != "answered":
                print(f"the long-poll on a returned {status!r} after {times[-1]:.1f} s: no cross-replica wake-up")
                return
    p50, p99 = percentiles(times)
    print(f"answer in b's inbox → agent long-polling a: p50 {p50:.1f} ms, p99 {p99:.1f} ms over {samples} answers")


async def _long_poll(http: aiohttp.ClientSession, replica: Replica, question_id: str) -> str:
    async with http.get(f"{replica.base}/v1/questions/{question_id}?wait={LONG_POLL}") as reply:
        return str((await reply.json())["status"])


async def pending(replicas: list[Replica], count: int) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=200)) as http:
        client = Client(http, replicas)
        before = [rss_kib(replica.process.pid) for replica in replicas]
        rate, ids = await client.ask_many(count)
        print(f"{count:,} questions asked across {len(replicas)} replicas at {rate:,.0f} asks/s ({count / rate:.0f} s)")
        await client.shown(replicas[-1], ids[-1])
        after = [rss_kib(replica.process.pid) for replica in replicas]
        for name, (was, now) in zip("abc", zip(before, after, strict=True), strict=False):
            print(
                f"replica {name} RSS {was / 1024:.0f} MiB → {now / 1024:.0f} MiB "
                f"({(now - was) * 1024 / (count / len(replicas)) / 1024:.2f} KiB per question it asked)"
            )
        a = replicas[0]
        for what, path in (("/healthz", "/healthz"), ("inbox page", "/"), ("/v1/questions", "/v1/questions")):
            start = time.perf_counter()
            async with http.get(f"{a.base}{path}", headers=a.headers) as reply:
                assert reply.status == 200, reply.status
                await reply.read()
            print(f"{what:<14} {(time.perf_counter() - start) * 1000:7.1f} ms with {count:,} pending")
        start = time.perf_counter()
        question_id = await client.ask(a, "One more?")
        await client.shown(replicas[1], question_id)
        poll = asyncio.create_task(_long_poll(http, a, question_id))
        await client.answer(replicas[-1], question_id)
        assert await poll == "answered"
        print(f"ask on a → answer on c → a's long-poll returns: {(time.perf_counter() - start) * 1000:.0f} ms")


def stop(replicas: list[Replica]) -> None:
    for replica in replicas:
        replica.process.terminate()
    for replica in replicas:
        replica.process.wait(timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description="Several serve replicas on one PostgreSQL beside SQLite.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-round", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--only", choices=["throughput", "latency", "pending"], help="run one part only")
    options = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="handraise-replicas-"))
    server = PostgresServer(server_binaries(), durable=True)
    server.start()
    started: list[Replica] = []
    try:
        server.set_up_role()

        def replicas(label: str, count: int, url: str | None) -> list[Replica]:
            made = start_set(directory / label, count, url)
            started.extend(made)
            return made

        if options.only in (None, "throughput"):
            sets = {"SQLite, 1 process": replicas("sqlite", 1, None)}
            for count in (1, 2, 3):
                sets[f"PostgreSQL, {count} replica{'s' * (count > 1)}"] = replicas(
                    f"pg{count}", count, server.url(server.create_database())
                )
            asyncio.run(throughput(sets, options.rounds, options.per_round))
            stop(started)
            started.clear()
        if options.only in (None, "latency"):
            asyncio.run(
                cross_replica_latency(replicas("latency", 2, server.url(server.create_database())), options.samples)
            )
            stop(started)
            started.clear()
        if options.only in (None, "pending"):
            asyncio.run(pending(replicas("pending", 3, server.url(server.create_database())), options.pending))
    finally:
        stop(started)
        server.stop()
        server.remove()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
