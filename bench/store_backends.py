"""The store's cost per question on each backend: SQLite (the embedded default) and PostgreSQL (several replicas).

Run: `uv run python bench/store_backends.py [QUESTIONS] [CONCURRENCY]` as root or a user who may run PostgreSQL.
Starts a PostgreSQL from Debian's package (fsync on, as in production) in a temporary directory, and for each backend
runs QUESTIONS lifecycles — create_question, add_delivery, resolve, then durable() — with CONCURRENCY tasks on one
store, then the same resolve race from two stores (two replicas) on one database. Prints lifecycles per second.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bot.store.interface import AsyncStore
from bot.store.postgres.store import PostgresStore
from bot.store.records import QuestionRecord
from bot.store.sqlite.async_store import SqliteStore
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem
from tests.postgres_server import PostgresServer, server_binaries

ANSWER = AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id="go", selected=["Yes"])])


async def lifecycle(store: AsyncStore, n: int, rival: AsyncStore | None) -> None:
    record = QuestionRecord(questions=[AskUserQuestionItem(id="go", question=f"Deploy build {n}?")])
    await store.create_question(record)
    await store.add_delivery(record.id, "web", record.id, {})
    resolvers = [store, rival] if rival is not None else [store]
    await asyncio.gather(*(each.resolve(record.id, "answered", answer=ANSWER, by="U", via="web") for each in resolvers))
    await store.durable()


async def measure(store: AsyncStore, rival: AsyncStore | None, questions: int, concurrency: int) -> float:
    numbers = iter(range(questions))

    async def worker() -> None:
        for n in numbers:
            await lifecycle(store, n, rival)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return questions / (time.perf_counter() - started)


async def run(label: str, opener: Callable[[], Awaitable[AsyncStore]], questions: int, concurrency: int) -> None:
    store, rival = await opener(), await opener()
    try:
        alone = await measure(store, None, questions, concurrency)
        racing = await measure(store, rival, questions, concurrency)
    finally:
        await store.close()
        await rival.close()
    print(f"{label:<11} {alone:8.0f} lifecycles/s one store   {racing:8.0f} lifecycles/s two stores racing to resolve")


async def main(questions: int, concurrency: int) -> None:
    directory = Path(tempfile.mkdtemp(prefix="handraise-bench-"))
    await run("SQLite", lambda: _sqlite(directory / "bench.db"), questions, concurrency)
    server = PostgresServer(server_binaries(), durable=True)
    server.start()
    try:
        server.set_up_role()
        url = server.url(server.create_database())
        await run("PostgreSQL", lambda: PostgresStore.open(url), questions, concurrency)
    finally:
        server.stop()
        server.remove()


async def _sqlite(path: Path) -> AsyncStore:
    return SqliteStore.open(path)


if __name__ == "__main__":
    arguments = [int(value) for value in sys.argv[1:3]]
    asyncio.run(main(*(arguments + [2000, 16][len(arguments) :])))
