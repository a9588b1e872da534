"""Statements (round trips) `handraise serve` sends PostgreSQL per ask and per answer, counted by the server itself.

Run: `uv run python bench/pg_statements.py [COUNT]` (as root or a user who may run PostgreSQL). Starts a throwaway
cluster with `log_statement = all`, serve on it (web inbox only, as `bench/api_floor.py --postgres`), asks COUNT
questions one at a time through the API, waits, then answers them one at a time through the inbox form, and prints
the statements per request of each phase by kind. One at a time is the worst case for the change feed, which reads
a burst of changes in one query. A load-independent figure, unlike the rates of `bench/api_floor.py`.

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
from serving import free_port, inbox_token, start_serve

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


async def measure(base: str, token: str, count: int, log: Path) -> None:
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
        ids: list[str] = []
        start = log_size(log)
        for index in range(count):
            body = {"questions": [{**BODY["questions"][0], "question": f"Deploy build {index}?"}]}
            async with http.post(f"{base}/v1/questions", json=body) as reply:
                assert reply.status == 202, await reply.text()
                ids.append((await reply.json())["id"])
            await settle() if index == count - 1 else await asyncio.sleep(0.05)
        asked = statements(log, start)
        start = log_size(log)
        for question_id in ids:
            async with http.post(f"{base}/questions/{question_id}/answer", data=form, allow_redirects=False) as reply:
                assert reply.status == 303, await reply.text()
            await asyncio.sleep(0.05)
        await settle()
        answered = statements(log, start)
    for name, logged in (("ask", asked), ("answer", answered)):
        print(f"statements per {name}: {len(logged) / count:.2f}")
        for statement, times in Counter(logged).most_common():
            print(f"  {times / count:5.2f}  {statement}")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20
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
            asyncio.run(measure(f"http://127.0.0.1:{port}", inbox_token(server), count, cluster.log))
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
