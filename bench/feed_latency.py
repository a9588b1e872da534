"""How soon an agent long-polling replica A hears an answer given on replica B (the change feed's wake-up).

Run: `uv run python bench/feed_latency.py [ANSWERS]` as root or a user who may run PostgreSQL. Starts a PostgreSQL
from Debian's package (fsync on) and two programs (`program.running`) on one database in one process, as replicas
with their own stores and change feeds. For each of ANSWERS questions: ask on A over HTTP, long-poll it on A, answer
it through B's ledger (as B's inbox or Slack endpoint does), and time from B's answer call to the poll's reply.
Prints p50, p90 and p99 in milliseconds. Both replicas share one event loop and two cores: loopback, not a network.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import aiohttp

from bot.config import parse_config
from bot.program import Running, running
from bot.store.postgres.store import PostgresStore
from core import AskUserQuestionAnswerItem
from tests.postgres_server import PostgresServer, server_binaries

ASK = {"questions": [{"id": "go", "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}]}
YES = AskUserQuestionAnswerItem(id="go", selected=["Yes"])


async def one(session: aiohttp.ClientSession, a: Running, b: Running) -> float:
    async with session.post(f"{a.base_url}/v1/questions", json=ASK) as response:
        question_id = (await response.json())["id"]
    url = f"{a.base_url}/v1/questions/{question_id}?wait=30"
    polled = asyncio.ensure_future(session.get(url))
    await asyncio.sleep(0.05)  # the poll is waiting on A
    started = time.perf_counter()
    await b.installation.ledger.submit(question_id, {"go": YES}, by="bench", via="web")
    response = await polled
    body = await response.json()
    elapsed = time.perf_counter() - started
    response.release()
    assert body["status"] == "answered", body
    return elapsed * 1000


async def main(answers: int) -> None:
    server = PostgresServer(server_binaries(), durable=True)
    server.start()
    try:
        server.set_up_role()
        url = server.url(server.create_database())
        directory = Path(tempfile.mkdtemp(prefix="handraise-bench-"))
        async with AsyncExitStack() as stack:
            replicas: list[Running] = []
            for name in ("a", "b"):
                config = parse_config(
                    f'[server]\nlisten = "127.0.0.1:0"\n[store]\npath = "{directory / name}.db"\n[web]\n', environ={}
                )
                store = await PostgresStore.open(url)
                stack.push_async_callback(store.close)
                replicas.append(await stack.enter_async_context(running(config, store=store)))
            a, b = replicas
            async with aiohttp.ClientSession() as session:
                times = sorted([await one(session, a, b) for _ in range(answers)])
        cuts = statistics.quantiles(times, n=100)
        print(
            f"{answers} answers on B heard by a long poll on A: p50 {cuts[49]:.1f} ms, p90 {cuts[89]:.1f} ms, "
            f"p99 {cuts[98]:.1f} ms, max {times[-1]:.1f} ms"
        )
    finally:
        server.stop()
        server.remove()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 300))
