"""Asks/s and answers/s of handraise beside the floor: a bare aiohttp + SQLite handler with the same durability.

Run: `uv run python bench/api_floor.py [ROUNDS] [PER_ROUND]`. Starts two servers in subprocesses on fresh stores:
`handraise serve` (web inbox only) and the floor (below: parse the same JSON and insert one row; parse the same form
and answer the row with one conditional UPDATE; WAL, `synchronous = NORMAL`, and an fsync of the -wal file shared
by every commit made before it started before each acknowledgement — the durability handraise gives). Each round
asks PER_ROUND questions of each server with 32 concurrent clients, then answers them all, in alternating order
(handraise first in even rounds, the floor first in odd ones). Prints each round, then the medians of the per-round
ratios, and handraise's ask latency percentiles.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web
from serving import free_port, in_parallel, inbox_token, start_python, start_serve

from bot.store_sync import DurabilityBarrier

CONCURRENCY = 32
BODY = {"questions": [{"id": "go", "question": "Deploy build {n}?", "options": [{"label": "Yes"}, {"label": "No"}]}]}


# --- the floor -----------------------------------------------------------------------------------------------------


def floor_app(path: str) -> web.Application:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA busy_timeout = 5000")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("CREATE TABLE IF NOT EXISTS questions (id TEXT PRIMARY KEY, status TEXT, body TEXT, answer TEXT)")
    barrier = DurabilityBarrier(path)

    def write(sql: str, params: tuple[str, ...]) -> int:
        db.execute("BEGIN IMMEDIATE")
        try:
            rows = db.execute(sql, params).rowcount
            db.commit()
        except BaseException:
            db.rollback()
            raise
        barrier.committed()
        return rows

    async def ask(request: web.Request) -> web.Response:
        payload = json.loads(await request.read())
        if not isinstance(payload, dict) or not payload.get("questions"):
            return web.json_response({"error": {"code": "BAD_REQUEST", "message": "questions"}}, status=422)
        question_id = "q_" + secrets.token_urlsafe(12)
        write("INSERT INTO questions VALUES (?, 'pending', ?, NULL)", (question_id, json.dumps(payload)))
        await barrier.durable()
        return web.json_response({"id": question_id, "status": "pending"}, status=202)

    async def answer(request: web.Request) -> web.StreamResponse:
        form = await request.post()
        question_id = request.match_info["id"]
        picked = json.dumps({"go": form.get("q0")})
        sql = "UPDATE questions SET status = 'answered', answer = ? WHERE id = ? AND status = 'pending'"
        if write(sql, (picked, question_id)) != 1:
            return web.Response(status=409, text="already answered")
        await barrier.durable()
        return web.Response(status=303, headers={"Location": f"/?answered={question_id}"})

    app = web.Application()
    app.router.add_post("/v1/questions", ask)
    app.router.add_post("/questions/{id}/answer", answer)
    return app


# --- the clients ---------------------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far: what a request costs, whatever else loads the machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Target:
    """One server under test: asks, then answers what it asked."""

    def __init__(self, name: str, base: str, http: aiohttp.ClientSession, csrf: str, pid: int) -> None:
        self.name = name
        self.base = base
        self.http = http
        self.csrf = csrf
        self.pid = pid
        self.latencies: list[float] = []

    async def ask_many(self, count: int) -> tuple[float, list[str]]:
        ids = [""] * count

        async def ask(index: int) -> None:
            body = json.loads(json.dumps(BODY).replace("{n}", str(index)))
            start = time.perf_counter()
            async with self.http.post(f"{self.base}/v1/questions", json=body) as reply:
                assert reply.status == 202, await reply.text()
                ids[index] = (await reply.json())["id"]
            self.latencies.append(time.perf_counter() - start)

        return count / await in_parallel(count, ask, CONCURRENCY), ids

    async def answer_all(self, ids: list[str]) -> float:
        async def answer(index: int) -> None:
            form = {"csrf": self.csrf, "q0": "0", "action": "send"}
            url = f"{self.base}/questions/{ids[index]}/answer"
            async with self.http.post(url, data=form, allow_redirects=False) as reply:
                assert reply.status == 303, (reply.status, await reply.text())

        return len(ids) / await in_parallel(len(ids), answer, CONCURRENCY)


async def wait_delivered(http: aiohttp.ClientSession, base: str, ids: list[str]) -> None:
    """An answer needs the question on show in the inbox: wait until the last one asked is delivered."""
    for question_id in ids[-CONCURRENCY:]:
        while True:
            async with http.get(f"{base}/") as page:
                if question_id in await page.text():
                    break
            await asyncio.sleep(0.05)


async def measure(rounds: int, per_round: int, handraise: tuple[str, int], token: str, floor: tuple[str, int]) -> None:
    handraise_base, handraise_pid = handraise
    floor_base, floor_pid = floor
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession(headers=headers) as http,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100)) as bare,
    ):
        warm = Target("handraise", handraise_base, http, "", handraise_pid)
        _, first = await warm.ask_many(1)
        async with http.get(f"{handraise_base}/") as page:
            found = re.search(r'name="csrf" value="([^"]+)"', await page.text())
        assert found is not None, "could not read the inbox's CSRF token"
        handraise_ = Target("handraise", handraise_base, http, found[1], handraise_pid)
        floor_ = Target("floor", floor_base, bare, "", floor_pid)
        await wait_delivered(http, handraise_base, first)
        await handraise_.answer_all(first)
        # Warm both (imports, caches, first -wal file) before anything is measured.
        for target in (handraise_, floor_):
            _, ids = await target.ask_many(200)
            if target is handraise_:
                await wait_delivered(http, handraise_base, ids)
            await target.answer_all(ids)
        handraise_.latencies.clear()
        floor_.latencies.clear()
        cpu: dict[tuple[str, str], list[float]] = {
            (name, kind): [] for name in ("handraise", "floor") for kind in ("ask", "answer")
        }
        ask_ratios: list[float] = []
        answer_ratios: list[float] = []
        print(
            f"{'round':>5}  {'handraise asks/s':>16} {'floor asks/s':>12} {'ratio':>6}   "
            f"{'handraise answers/s':>19} {'floor answers/s':>15} {'ratio':>6}"
        )
        for round_ in range(rounds):
            order = (handraise_, floor_) if round_ % 2 == 0 else (floor_, handraise_)
            asks: dict[str, float] = {}
            answers: dict[str, float] = {}
            for target in order:
                before = cpu_seconds(target.pid)
                asks[target.name], ids = await target.ask_many(per_round)
                await asyncio.sleep(0.5)  # an ask's CPU includes the delivery that runs after its 202
                cpu[target.name, "ask"].append((cpu_seconds(target.pid) - before) / per_round)
                if target is handraise_:
                    await wait_delivered(http, handraise_base, ids)
                before = cpu_seconds(target.pid)
                answers[target.name] = await target.answer_all(ids)
                cpu[target.name, "answer"].append((cpu_seconds(target.pid) - before) / per_round)
            ask_ratios.append(asks["handraise"] / asks["floor"])
            answer_ratios.append(answers["handraise"] / answers["floor"])
            print(
                f"{round_ + 1:>5}  {asks['handraise']:>16,.0f} {asks['floor']:>12,.0f} {ask_ratios[-1]:>6.2f}   "
                f"{answers['handraise']:>19,.0f} {answers['floor']:>15,.0f} {answer_ratios[-1]:>6.2f}"
            )
        for kind in ("ask", "answer"):
            mine, bare_ = statistics.median(cpu["handraise", kind]), statistics.median(cpu["floor", kind])
            print(
                f"server CPU per {kind:<6}  handraise {mine * 1e6:6.0f} µs   floor {bare_ * 1e6:5.0f} µs   "
                f"ratio {bare_ / mine:.2f}"
            )
        floor_latencies = sorted(floor_.latencies)
        latencies = sorted(handraise_.latencies)
        p50 = latencies[len(latencies) // 2] * 1000
        p99 = latencies[int(len(latencies) * 0.99)] * 1000
        floor_p50 = floor_latencies[len(floor_latencies) // 2] * 1000
        floor_p99 = floor_latencies[int(len(floor_latencies) * 0.99)] * 1000
        print(f"median ratio, asks:    {statistics.median(ask_ratios):.2f}   (target ≥ 0.5)")
        print(f"median ratio, answers: {statistics.median(answer_ratios):.2f}   (target ≥ 0.5)")
        print(f"handraise ask latency at {CONCURRENCY} clients: p50 {p50:.1f} ms, p99 {p99:.1f} ms   (target p99 ≤ 20)")
        print(f"floor ask latency at {CONCURRENCY} clients:     p50 {floor_p50:.1f} ms, p99 {floor_p99:.1f} ms")


def main() -> None:
    if sys.argv[1:2] == ["--floor"]:
        port, path = int(sys.argv[2]), sys.argv[3]
        web.run_app(floor_app(path), host="127.0.0.1", port=port, access_log=None, print=lambda text: print("ready"))
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    per_round = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    with tempfile.TemporaryDirectory() as tmp:
        port, floor_port = free_port(), free_port()
        config = Path(tmp) / "config.toml"
        config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{tmp}/handraise.db"\n')
        server = start_serve(config, cwd=tmp)
        floor = start_python([__file__, "--floor", str(floor_port), f"{tmp}/floor.db"], cwd=tmp)
        try:
            assert server.stdout is not None and floor.stdout is not None
            token = inbox_token(server)
            assert "ready" in floor.stdout.readline()
            handraise = (f"http://127.0.0.1:{port}", server.pid)
            asyncio.run(measure(rounds, per_round, handraise, token, (f"http://127.0.0.1:{floor_port}", floor.pid)))
        finally:
            for process in (server, floor):
                process.terminate()
                process.wait(timeout=60)


if __name__ == "__main__":
    main()
