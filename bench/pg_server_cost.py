"""Where PostgreSQL's CPU goes under `handraise serve`: per statement, per ask and per answer, by the server's counts.

Run: `uv run python bench/pg_server_cost.py [PER_PHASE] [ROUNDS]` (as root or a user who may run PostgreSQL). Starts
a durable throwaway cluster (fsync and synchronous_commit on, as `bench/api_floor.py --postgres`) with
`pg_stat_statements` (nested statements too: the triggers' own), serve on it (web inbox only), warms up, then for
each round asks PER_PHASE questions with 32 concurrent clients, then answers them all. For each phase it prints the
cluster's CPU per request (every process of the cluster, from /proc), and per statement: calls, execution and
planning time, rows, WAL records and bytes per request, the statement's first words; then the tables' and indexes'
writes and reads over the whole run (which indexes are written by every row and read by nothing here).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import aiohttp
import api_floor
import api_floor_pg
import psycopg
from serving import free_port, inbox_token, start_serve

URL_ENV = "HANDRAISE_DATABASE_URL"

STATEMENTS = """
SELECT query, calls, total_exec_time, total_plan_time, plans, rows, wal_records, wal_bytes,
       shared_blks_hit + shared_blks_read, shared_blks_dirtied, toplevel
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = %s)
"""


def perf_record(phase: str) -> subprocess.Popen[bytes] | None:
    """With PERF=DIR set, sample every CPU with `perf record` (software clock: no PMU in a VM) into DIR/PHASE.data."""
    where = os.environ.get("PERF")
    if not where:
        return None
    output = Path(where) / f"{phase}.data"
    command = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "1999", "-a", "-g", "-o", str(output)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def short(query: str) -> str:
    return " ".join(query.split())[:110]


def statements(admin: psycopg.Connection, database: str) -> dict[tuple[str, bool], list[float]]:
    rows = admin.execute(STATEMENTS, (database,)).fetchall()
    found: dict[tuple[str, bool], list[float]] = defaultdict(lambda: [0.0] * 9)
    for query, *numbers, toplevel in rows:
        if query.startswith("SELECT pg_stat_statements_reset"):
            continue
        for index, number in enumerate(numbers):
            found[short(query), toplevel][index] += float(number)
    return found


def report(phase: str, count: int, cpu: float, found: dict[tuple[str, bool], list[float]]) -> None:
    print(f"\n== {phase}: cluster CPU {cpu / count * 1e6:.0f} µs per request ({count} requests)")
    columns = ("calls", 6), ("exec µs", 8), ("plan µs", 8), ("rows", 5), ("wal rec", 7), ("wal B", 6), ("blks", 5)
    print(" ".join(f"{name:>{width}}" for name, width in columns), " dirt  statement")
    total = 0.0
    for (query, toplevel), numbers in sorted(found.items(), key=lambda item: -item[1][1]):
        calls, exec_ms, plan_ms, _plans, rows, wal_records, wal_bytes, blocks, dirtied = numbers
        if calls / count < 0.01:
            continue
        if toplevel:
            total += exec_ms + plan_ms
        print(
            f"{calls / count:6.2f} {exec_ms / count * 1000:8.1f} {plan_ms / count * 1000:8.1f} {rows / count:5.2f} "
            f"{wal_records / count:7.1f} {wal_bytes / count:6.0f} {blocks / count:5.1f} {dirtied / count:5.2f}  "
            f"{'' if toplevel else '(nested) '}{query}"
        )
    print(f"top-level statements' exec + plan time: {total / count * 1000:.0f} µs per request")


def table_counts(admin: psycopg.Connection) -> None:
    print("\n== tables: inserts, updates (HOT), seq / index scans")
    for row in admin.execute(
        "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, seq_scan, idx_scan FROM pg_stat_user_tables ORDER BY 1"
    ):
        print("  ", *row)
    print("== indexes: scans, tuples read")
    for row in admin.execute(
        "SELECT relname, indexrelname, idx_scan, idx_tup_read FROM pg_stat_user_indexes ORDER BY 1, 2"
    ):
        print("  ", *row)


async def drive(base: str, token: str, per_phase: int, rounds: int, cluster: Any, database: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    server = api_floor.Server(base, 0, None)
    async with aiohttp.ClientSession(headers=headers) as http:
        warm = api_floor.Target("handraise", server, http, "")
        _, first = await warm.ask_many(1)
        await api_floor.wait_delivered(http, base, first)
        async with http.get(f"{base}/") as page:
            found = re.search(r'name="csrf" value="([^"]+)"', await page.text())
        assert found is not None, "could not read the inbox's CSRF token"
        target = api_floor.Target("handraise", server, http, found[1])
        await target.answer_all(first)
        _, ids = await target.ask_many(200)
        await api_floor.wait_delivered(http, base, ids)
        await target.answer_all(ids)
        with cluster.admin(database) as admin:
            admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            admin.execute("SELECT pg_stat_reset()")
        cpu: dict[str, list[float]] = defaultdict(list)
        for _ in range(rounds):
            for phase in ("ask", "answer"):
                with cluster.admin(database) as admin:
                    admin.execute("SELECT pg_stat_statements_reset()")
                    admin.execute("SELECT pg_stat_reset_shared('wal')")
                before = api_floor_pg.cluster_cpu_seconds(cluster)
                profile = perf_record(phase)
                if phase == "ask":
                    _, ids = await target.ask_many(per_phase)
                    await asyncio.sleep(0.5)  # the delivery runs after the 202
                else:
                    await target.answer_all(ids)
                    await asyncio.sleep(0.2)
                spent = api_floor_pg.cluster_cpu_seconds(cluster) - before
                if profile is not None:
                    profile.send_signal(signal.SIGINT)
                    profile.wait()
                cpu[phase].append(spent / per_phase)
                with cluster.admin(database) as admin:
                    report(phase, per_phase, spent, statements(admin, database))
                    wal = admin.execute("SELECT wal_records, wal_fpi, wal_bytes, wal_write, wal_sync FROM pg_stat_wal")
                    records, fpi, size, writes, syncs = (float(value) for value in wal.fetchone() or (0,) * 5)
                    print(
                        f"WAL per request: {records / per_phase:.1f} records, {fpi / per_phase:.2f} full pages, "
                        f"{size / per_phase:.0f} bytes, {writes / per_phase:.2f} writes, {syncs / per_phase:.2f} syncs"
                    )
                if phase == "ask":
                    await api_floor.wait_delivered(http, base, ids)
        with cluster.admin(database) as admin:
            table_counts(admin)
        for phase, figures in cpu.items():
            print(f"cluster CPU per {phase}: median {statistics.median(figures) * 1e6:.0f} µs of {figures}")


def main() -> None:
    per_phase = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    with tempfile.TemporaryDirectory() as tmp, api_floor_pg.durable_cluster() as (cluster, url):
        with cluster.admin() as admin:
            admin.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        cluster.stop()
        cluster.start()
        with cluster.admin() as admin:
            admin.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
            admin.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
            admin.execute("SELECT pg_reload_conf()")
        database = url.rpartition("/")[2]
        port = free_port()
        config = Path(tmp) / "config.toml"
        config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\nurl_env = "{URL_ENV}"\n')
        server = start_serve(config, cwd=tmp, env={URL_ENV: url})
        try:
            asyncio.run(drive(f"http://127.0.0.1:{port}", inbox_token(server), per_phase, rounds, cluster, database))
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
