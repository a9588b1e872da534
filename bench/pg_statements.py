"""Statements (round trips) `handraise serve` sends PostgreSQL per ask and per answer, counted by the server itself.

Run: `uv run python bench/pg_statements.py [COUNT] [--clients N]` (as root or a user who may run PostgreSQL).
Starts a throwaway cluster with `log_statement = all`, serve on it (web inbox only, as `bench/api_floor.py
--postgres`), asks COUNT questions through the API, waits, then answers them through the inbox form, and prints per
request of each phase the statements by kind and the transactions that wrote (a commit and an fsync each). By
default one request at a time: the worst case for what serve groups (the change feed's reads, grouped writes), and a
load-independent figure, unlike the rates of `bench/api_floor.py`. With `--clients N`, N concurrent clients (32 in
`bench/api_floor.py`): what grouping saves under load.

The replica's own heartbeat and claims are left out (a long `lease_seconds` keeps them out of the window).
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

import aiohttp
import api_floor_pg
import psycopg
from serving import free_port, in_parallel, inbox_token, start_serve

URL_ENV = "HANDRAISE_DATABASE_URL"
BODY = {"questions": [{"id": "go", "question": "Deploy build {n}?", "options": [{"label": "Yes"}, {"label": "No"}]}]}
_LOGGED = re.compile(r"LOG:  (?:statement|execute [^:]*): (.*)")


def log_size(log: Path) -> int:
    return log.stat().st_size


def statements(log: Path, start: int) -> list[str]:
    """The statements logged after byte `start`, each cut to its first words."""
    text = log.read_bytes()[start:].decode(errors="replace")
    return [" ".join(found[1].split()[:6]) for found in _LOGGED.finditer(text)]


async def settle() -> None:
    await asyncio.sleep(1.0)  # deliveries and the change feed run after a request's reply


def transactions(url: str) -> int:
    """Transaction ids handed out so far: one per transaction that wrote (one commit each), this probe's included.
    (pg_stat_database's commit counts lag: backends report them at most once a second.)"""
    with psycopg.connect(url, autocommit=True) as db:
        row = db.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()
    assert row is not None
    return int(row[0])


async def measure(base: str, token: str, count: int, clients: int, log: Path, url: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        # Warm up (prepared statements, the first inbox page) and read the inbox's CSRF token.
        async with http.post(f"{base}/v1/questions", json={"questions": BODY["questions"]}) as reply:
            warm = (await reply.json())["id"]
        await settle()
        async with http.get(f"{base}/") as page:
            found = re.search(r'name="csrf" value="([^"]+)"', await page.text())
        assert found is not None, "could not read the inbox's CSRF token"
        form = {"csrf": found[1], "q0": "0", "action": "send"}
        async with http.post(f"{base}/questions/{warm}/answer", data=form, allow_redirects=False) as reply:
            assert reply.status == 303, await reply.text()
        await settle()
        ids = [""] * count
        pause = 0.05 if clients == 1 else 0.0

        async def ask(index: int) -> None:
            body = {"questions": [{**BODY["questions"][0], "question": f"Deploy build {index}?"}]}
            async with http.post(f"{base}/v1/questions", json=body) as reply:
                assert reply.status == 202, await reply.text()
                ids[index] = (await reply.json())["id"]
            await asyncio.sleep(pause)

        async def answer(index: int) -> None:
            async with http.post(f"{base}/questions/{ids[index]}/answer", data=form, allow_redirects=False) as reply:
                assert reply.status == 303, await reply.text()
            await asyncio.sleep(pause)

        phases: list[tuple[str, list[str], int]] = []
        for name, job in (("ask", ask), ("answer", answer)):
            start, before = log_size(log), transactions(url)
            await in_parallel(count, job, clients)
            await settle()
            writes = transactions(url) - before - 1
            logged = [statement for statement in statements(log, start) if "pg_current_xact_id" not in statement]
            phases.append((name, logged, writes))
    for name, logged, writes in phases:
        print(f"statements per {name}: {len(logged) / count:.2f}   committed writes {writes / count:.2f}")
        for statement, times in Counter(logged).most_common():
            print(f"  {times / count:5.2f}  {statement}")


def main() -> None:
    arguments = sys.argv[1:]
    clients = 1
    if "--clients" in arguments:
        at = arguments.index("--clients")
        clients = int(arguments[at + 1])
        del arguments[at : at + 2]
    count = int(arguments[0]) if arguments else 20
    with tempfile.TemporaryDirectory() as tmp, api_floor_pg.durable_cluster() as (cluster, url):
        with cluster.admin() as admin:
            admin.execute("ALTER SYSTEM SET log_statement = 'all'")
            admin.execute("SELECT pg_reload_conf()")
        port = free_port()
        config = Path(tmp) / "config.toml"
        config.write_text(
            f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\nurl_env = "{URL_ENV}"\nlease_seconds = 600\n'
        )
        server = start_serve(config, cwd=tmp, env={URL_ENV: url})
        try:
            asyncio.run(measure(f"http://127.0.0.1:{port}", inbox_token(server), count, clients, cluster.log, url))
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
