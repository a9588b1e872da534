"""The PostgreSQL half of `bench/api_floor.py`: a durable throwaway cluster, the floor on it, and the cluster's CPU.

Each server gets a cluster of its own (PostgreSQL 15 from Debian, `tests/postgres_server.py`, fsync and
synchronous_commit on), so that summing a cluster's processes from /proc gives the database work one server caused:
backends, WAL writer, checkpointer and all.
"""

from __future__ import annotations

import inspect
import json
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from aiohttp import web
from psycopg_pool import AsyncConnectionPool
from serving import cpu_seconds

from bot.store.postgres.store import PostgresStore
from tests.postgres_server import PostgresServer, server_binaries

POOL_SIZE: int = inspect.signature(PostgresStore.open).parameters["max_connections"].default
"""handraise's pool (`PostgresStore.open`'s default, which `serve` uses): the floor gets as many connections."""


@contextmanager
def durable_cluster() -> Iterator[tuple[PostgresServer, str]]:
    """A fresh cluster with one empty database, durable on COMMIT; yields it and the database's URL."""
    server = PostgresServer(server_binaries(), durable=True)
    server.start()
    try:
        server.set_up_role()
        url = server.url(server.create_database())
        with psycopg.connect(url) as db:
            settings = {name: db.execute(f"SHOW {name}").fetchone() for name in ("fsync", "synchronous_commit")}
        assert all(value == ("on",) for value in settings.values()), f"not durable on COMMIT: {settings}"
        yield server, url
    finally:
        server.stop()
        server.remove()


def cluster_cpu_seconds(server: PostgresServer) -> float:
    """CPU of the postmaster and every process it started, live or already ended (reaped): the live ones from the
    scheduler's nanosecond counts (/proc/PID/schedstat), as clock ticks of 10 ms are too coarse once a request costs
    the cluster under 200 µs; the reaped ones from the postmaster's children's ticks."""
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    total = cpu_seconds(postmaster, reaped_children=True) - cpu_seconds(postmaster)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, parent = int(stat.parent.name), int(stat.read_text().rpartition(")")[2].split()[1])
            if postmaster in (pid, parent):
                total += int((stat.parent / "schedstat").read_text().split()[0]) / 1e9
        except (FileNotFoundError, ProcessLookupError):
            continue  # ended while we looked: its time is in the postmaster's reaped children from now on
    return total


def floor_app(url: str) -> web.Application:
    """The bare handler on PostgreSQL: one INSERT per ask, one conditional UPDATE per answer, each its own committed
    transaction (autocommit: a lone statement commits, and returns once its commit is on disk), on a pool as large as
    handraise's."""
    pool = AsyncConnectionPool(url, kwargs={"autocommit": True}, min_size=1, max_size=POOL_SIZE, open=False)

    async def lifetime(app: web.Application) -> AsyncIterator[None]:
        await pool.open(wait=True)
        async with pool.connection() as db:
            await db.execute(
                "CREATE TABLE IF NOT EXISTS questions (id TEXT PRIMARY KEY, status TEXT, body TEXT, answer TEXT)"
            )
        yield
        await pool.close()

    async def ask(request: web.Request) -> web.Response:
        payload = json.loads(await request.read())
        if not isinstance(payload, dict) or not payload.get("questions"):
            return web.json_response({"error": {"code": "BAD_REQUEST", "message": "questions"}}, status=422)
        question_id = "q_" + secrets.token_urlsafe(12)
        async with pool.connection() as db:
            await db.execute(
                "INSERT INTO questions VALUES (%s, 'pending', %s, NULL)", (question_id, json.dumps(payload))
            )
        return web.json_response({"id": question_id, "status": "pending"}, status=202)

    async def answer(request: web.Request) -> web.StreamResponse:
        form = await request.post()
        question_id = request.match_info["id"]
        picked = json.dumps({"go": form.get("q0")})
        async with pool.connection() as db:
            cursor = await db.execute(
                "UPDATE questions SET status = 'answered', answer = %s WHERE id = %s AND status = 'pending'",
                (picked, question_id),
            )
        if cursor.rowcount != 1:
            return web.Response(status=409, text="already answered")
        return web.Response(status=303, headers={"Location": f"/?answered={question_id}"})

    app = web.Application()
    app.cleanup_ctx.append(lifetime)
    app.router.add_post("/v1/questions", ask)
    app.router.add_post("/questions/{id}/answer", answer)
    return app
