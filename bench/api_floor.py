"""Asks/s and answers/s of handraise beside the floor: a bare aiohttp + SQLite handler with the same durability,
and beside the non-durable floor: the same handler without the fsync.

Run: `uv run python bench/api_floor.py [--postgres] [ROUNDS] [PER_ROUND]` (15 and 2000 by default). Starts three
servers in subprocesses on fresh stores: `handraise serve` (web inbox only), the floor (below: parse the same JSON
and insert one row; parse the same form and answer the row with one conditional UPDATE; WAL, `synchronous = NORMAL`,
and an fsync of the -wal file shared by every commit made before it started before each acknowledgement — the
durability handraise gives), and the non-durable floor (the same with no fsync at all: a power loss may take
acknowledged writes). Each round asks PER_ROUND questions of each server with 32 concurrent clients, then answers
them all, the servers taking turns at going first. Prints each round, then the medians of the per-round ratios, and
the ask latency percentiles, and what else each server's phases used: its share of one core, the clients' CPU per
request (this process), and how many of the machine's CPUs were busy — a server at a full core is bound by its own
event loop, a floor whose clients take a full core is bound by them.

With `--postgres` (as root or a user who may run PostgreSQL), both run on PostgreSQL instead, each on a throwaway
cluster of its own with fsync and synchronous_commit on: `serve` through `[store] url_env`, the floor as
`bench/api_floor_pg.py` describes (no non-durable floor there). It also prints the CPU the clusters' processes spent
per request.
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
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from pathlib import Path

import aiohttp
import api_floor_pg
from aiohttp import web
from serving import cpu_seconds, free_port, in_parallel, inbox_token, machine_busy, start_python, start_serve

from bot.store.sqlite.sync import DurabilityBarrier

CONCURRENCY = 32
ROUNDS = 15
"""Rounds unless told: on a shared VM single rounds spread from 0.36 to 0.95 of the floor, and a median of 5 to 8 still
moves by ± 0.1 from run to run; one of 15 stays within a few hundredths (bench/RESULTS.md, session 42)."""
URL_ENV = "HANDRAISE_DATABASE_URL"
BODY = {"questions": [{"id": "go", "question": "Deploy build {n}?", "options": [{"label": "Yes"}, {"label": "No"}]}]}


# --- the floor -----------------------------------------------------------------------------------------------------


def floor_app(path: str, *, durable: bool = True) -> web.Application:
    """The floor; with `durable=False` the non-durable floor, which acknowledges without waiting for any fsync."""
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

    async def synced() -> None:
        if durable:
            await barrier.durable()

    async def ask(request: web.Request) -> web.Response:
        payload = json.loads(await request.read())
        if not isinstance(payload, dict) or not payload.get("questions"):
            return web.json_response({"error": {"code": "BAD_REQUEST", "message": "questions"}}, status=422)
        question_id = "q_" + secrets.token_urlsafe(12)
        write("INSERT INTO questions VALUES (?, 'pending', ?, NULL)", (question_id, json.dumps(payload)))
        await synced()
        return web.json_response({"id": question_id, "status": "pending"}, status=202)

    async def answer(request: web.Request) -> web.StreamResponse:
        form = await request.post()
        question_id = request.match_info["id"]
        picked = json.dumps({"go": form.get("q0")})
        sql = "UPDATE questions SET status = 'answered', answer = ? WHERE id = ? AND status = 'pending'"
        if write(sql, (picked, question_id)) != 1:
            return web.Response(status=409, text="already answered")
        await synced()
        return web.Response(status=303, headers={"Location": f"/?answered={question_id}"})

    app = web.Application()
    app.router.add_post("/v1/questions", ask)
    app.router.add_post("/questions/{id}/answer", answer)
    return app


# --- the clients ---------------------------------------------------------------------------------------------------


class Server:
    """A server process under test: its base URL, its pid, and the CPU its database server spent so far if any."""

    def __init__(self, base: str, pid: int, database: Callable[[], float] | None = None) -> None:
        self.base = base
        self.pid = pid
        self.database = database


class Load:
    """What a phase (asking, or answering) used besides the server's CPU per request: the server's share of one
    core, this process's CPU per request (the clients), and the share of the machine in use. A server at one full
    core while the machine has room is bound by its own event loop; a rate bounded by the clients' CPU says as much
    of the clients as of the server."""

    def __init__(self, server: Server) -> None:
        self.pid = server.pid
        self.started = time.perf_counter()
        self.server = cpu_seconds(server.pid)
        self.clients = time.process_time()
        self.machine = machine_busy()

    def since(self, count: int) -> tuple[float, float, float]:
        """The server's share of one core, the clients' CPU seconds per request, and the CPUs in use (0 to all)."""
        elapsed = time.perf_counter() - self.started
        busy, total = machine_busy()
        in_use = (os.cpu_count() or 1) * (busy - self.machine[0]) / max(total - self.machine[1], 1)
        server = (cpu_seconds(self.pid) - self.server) / elapsed
        return server, (time.process_time() - self.clients) / count, in_use


class Target:
    """One server under test: asks, then answers what it asked."""

    def __init__(self, name: str, server: Server, http: aiohttp.ClientSession, csrf: str) -> None:
        self.name = name
        self.server = server
        self.base = server.base
        self.http = http
        self.csrf = csrf
        self.latencies: list[float] = []

    def cpu(self) -> tuple[float, float]:
        """CPU seconds so far of the server process, and of its database's processes (0 for SQLite: in-process)."""
        database = self.server.database
        return cpu_seconds(self.server.pid), database() if database else 0.0

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


async def handraise_target(http: aiohttp.ClientSession, server: Server) -> Target:
    """`serve` as a Target that can answer: one question asked, waited for in the inbox, and answered, which also
    reads the inbox's form token for the answers to come."""
    warm = Target("handraise", server, http, "")
    _, first = await warm.ask_many(1)
    await wait_delivered(http, server.base, first)
    target = Target("handraise", server, http, await inbox_csrf(http, server.base))
    await target.answer_all(first)
    return target


async def inbox_csrf(http: aiohttp.ClientSession, base: str) -> str:
    """The CSRF token of the inbox's answer forms, read from its page."""
    async with http.get(f"{base}/") as page:
        found = re.search(r'name="csrf" value="([^"]+)"', await page.text())
    assert found is not None, "could not read the inbox's CSRF token"
    return found[1]


def per_request(spent: tuple[float, float], since: tuple[float, float], count: int) -> tuple[float, float]:
    return (spent[0] - since[0]) / count, (spent[1] - since[1]) / count


def print_cpu(label: str, kind: str, mine: list[float], floors: dict[str, list[float]]) -> None:
    mine_ = statistics.median(mine)
    parts = [f"{label} {kind:<6}  handraise {mine_ * 1e6:6.0f} µs"]
    for name, bare in floors.items():
        bare_ = statistics.median(bare)
        parts.append(f"{name} {bare_ * 1e6:5.0f} µs (ratio {bare_ / mine_:.2f})")
    print("   ".join(parts))


def percentiles(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    return f"p50 {ordered[len(ordered) // 2] * 1000:.1f} ms, p99 {ordered[int(len(ordered) * 0.99)] * 1000:.1f} ms"


async def measure(rounds: int, per_round: int, handraise: Server, token: str, floors: dict[str, Server]) -> None:
    handraise_base = handraise.base
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession(headers=headers) as http,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100)) as bare,
    ):
        handraise_ = await handraise_target(http, handraise)
        targets = [handraise_, *(Target(name, server, bare, "") for name, server in floors.items())]
        # Warm every server (imports, caches, first -wal file) before anything is measured.
        for target in targets:
            _, ids = await target.ask_many(200)
            if target is handraise_:
                await wait_delivered(http, handraise_base, ids)
            await target.answer_all(ids)
            target.latencies.clear()
        cpu: dict[tuple[str, str], list[tuple[float, float]]] = {
            (target.name, kind): [] for target in targets for kind in ("ask", "answer")
        }
        loads: dict[tuple[str, str], list[tuple[float, float, float]]] = {key: [] for key in cpu}
        ratios: dict[tuple[str, str], list[float]] = {(name, kind): [] for name in floors for kind in ("ask", "answer")}
        header = f"{'round':>5}  {'handraise asks/s':>16} {'answers/s':>9}"
        for name in floors:
            header += f"   {name + ' asks/s':>22} {'answers/s':>9} {'ratios':>11}"
        print(header)
        for round_ in range(rounds):
            shift = round_ % len(targets)
            order = targets[shift:] + targets[:shift]
            asks: dict[str, float] = {}
            answers: dict[str, float] = {}
            for target in order:
                before, load = target.cpu(), Load(target.server)
                asks[target.name], ids = await target.ask_many(per_round)
                loads[target.name, "ask"].append(load.since(per_round))
                await asyncio.sleep(0.5)  # an ask's CPU includes the delivery that runs after its 202
                cpu[target.name, "ask"].append(per_request(target.cpu(), before, per_round))
                if target is handraise_:
                    await wait_delivered(http, handraise_base, ids)
                before, load = target.cpu(), Load(target.server)
                answers[target.name] = await target.answer_all(ids)
                loads[target.name, "answer"].append(load.since(per_round))
                cpu[target.name, "answer"].append(per_request(target.cpu(), before, per_round))
            line = f"{round_ + 1:>5}  {asks['handraise']:>16,.0f} {answers['handraise']:>9,.0f}"
            for name in floors:
                ratios[name, "ask"].append(asks["handraise"] / asks[name])
                ratios[name, "answer"].append(answers["handraise"] / answers[name])
                line += (
                    f"   {asks[name]:>22,.0f} {answers[name]:>9,.0f} "
                    f"{ratios[name, 'ask'][-1]:>5.2f} {ratios[name, 'answer'][-1]:>5.2f}"
                )
            print(line)
        postgres = handraise.database is not None
        for kind in ("ask", "answer"):
            mine = cpu["handraise", kind]
            label = "server CPU per".ljust(16 if postgres else 0)
            print_cpu(label, kind, [server for server, _ in mine], {n: [c for c, _ in cpu[n, kind]] for n in floors})
            if postgres:
                print_cpu(
                    "postgres CPU per", kind, [db for _, db in mine], {n: [d for _, d in cpu[n, kind]] for n in floors}
                )
                print_cpu(
                    "both CPU per".ljust(16),
                    kind,
                    [sum(each) for each in mine],
                    {n: [sum(e) for e in cpu[n, kind]] for n in floors},
                )
        cpus = os.cpu_count() or 1
        for kind in ("ask", "answer"):
            parts = []
            for target in targets:
                server, clients, in_use = (
                    statistics.median(each) for each in zip(*loads[target.name, kind], strict=True)
                )
                parts.append(f"{target.name} {server:.2f} core, clients {clients * 1e6:.0f} µs, {in_use:.2f} CPUs")
            print(f"while {kind + 'ing':<9} " + "   ".join(parts) + f"   (of {cpus} CPUs)")
        for name in floors:
            target_ratio = "≥ 0.5" if name == "non-durable floor" else "no target"
            for kind, plural in (("ask", "asks"), ("answer", "answers")):
                median = statistics.median(ratios[name, kind])
                print(f"median ratio to the {name}, {plural}: {median:.2f}   ({target_ratio})")
        for target in targets:
            print(f"{target.name} ask latency at {CONCURRENCY} clients: {percentiles(target.latencies)}")


def main() -> None:
    if sys.argv[1:2] in (["--floor"], ["--floor-non-durable"], ["--floor-postgres"]):
        mode, port, where = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        if mode == "--floor-postgres":
            app = api_floor_pg.floor_app(where)
        else:
            app = floor_app(where, durable=mode == "--floor")
        web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=lambda text: print("ready"))
        return
    postgres = sys.argv[1:2] == ["--postgres"]
    arguments = sys.argv[2:] if postgres else sys.argv[1:]
    rounds = int(arguments[0]) if len(arguments) > 0 else ROUNDS
    per_round = int(arguments[1]) if len(arguments) > 1 else 2000
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as clusters:
        port = free_port()
        config = Path(tmp) / "config.toml"
        store, env, floor_store = f'path = "{tmp}/handraise.db"\n', {}, f"{tmp}/floor.db"
        handraise_database = floor_database = None
        if postgres:
            mine, url = clusters.enter_context(api_floor_pg.durable_cluster())
            bare, floor_store = clusters.enter_context(api_floor_pg.durable_cluster())
            store, env = store + f'url_env = "{URL_ENV}"\n', {URL_ENV: url}
            handraise_database = partial(api_floor_pg.cluster_cpu_seconds, mine)
            floor_database = partial(api_floor_pg.cluster_cpu_seconds, bare)
        config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\n{store}')
        server = start_serve(config, cwd=tmp, env=env)
        floor_runs = [("floor", "--floor-postgres" if postgres else "--floor", floor_store, floor_database)]
        if not postgres:
            floor_runs.append(("non-durable floor", "--floor-non-durable", f"{tmp}/floor-non-durable.db", None))
        processes = [server]
        try:
            floors: dict[str, Server] = {}
            for name, mode, where, database in floor_runs:
                floor_port = free_port()
                process = start_python([__file__, mode, str(floor_port), where], cwd=tmp)
                processes.append(process)
                assert process.stdout is not None
                assert "ready" in process.stdout.readline()
                floors[name] = Server(f"http://127.0.0.1:{floor_port}", process.pid, database)
            token = inbox_token(server)
            handraise = Server(f"http://127.0.0.1:{port}", server.pid, handraise_database)
            asyncio.run(measure(rounds, per_round, handraise, token, floors))
        finally:
            for process in processes:
                process.terminate()
                process.wait(timeout=60)


if __name__ == "__main__":
    main()
