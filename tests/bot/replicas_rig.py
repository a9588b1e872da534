"""Several programs on one PostgreSQL database in one event loop: replicas, as far as the change feed can tell."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from bot.config import parse_config
from bot.program import Running, running
from bot.replicas.feed import FeedTiming
from bot.replicas.postgres import PostgresReplica
from bot.store.postgres.store import PostgresStore
from core import AskUserQuestionAnswerItem

from .fakes import RecordingChannel

QUICK = FeedTiming(catch_up_every=0.5, overlap=2.0, retry_min=0.1, retry_max=0.5)
ASK = {"questions": [{"id": "go", "question": "Deploy v2?", "options": [{"label": "Yes"}, {"label": "No"}]}]}


@asynccontextmanager
async def replicas(
    tmp_path: Path, url: str, count: int, *, timing: FeedTiming = QUICK, recording: bool = True, extra: str = ""
) -> AsyncIterator[list[Running]]:
    """`count` programs sharing the database at `url`; with `recording`, each has a recording `web` channel,
    else the configured ones (the real web inbox)."""
    async with AsyncExitStack() as stack:
        started: list[Running] = []
        for index in range(count):
            place = tmp_path / f"replica{index}"
            place.mkdir()
            config = parse_config(
                f'[server]\nlisten = "127.0.0.1:0"\n[store]\npath = "{place / "unused.db"}"\n{extra}', environ={}
            )
            store = await PostgresStore.open(url, max_connections=4)
            stack.push_async_callback(store.close)
            channels = [RecordingChannel("web")] if recording else None
            started.append(
                await stack.enter_async_context(running(config, store=store, channels=channels, feed_timing=timing))
            )
        yield started


@asynccontextmanager
async def started_replicas(url: str, lease: float) -> AsyncIterator[list[tuple[PostgresReplica, PostgresStore]]]:
    """Two replicas with `lease`, each started on a store of its own at `url`: no program around them."""
    async with AsyncExitStack() as stack:
        started: list[tuple[PostgresReplica, PostgresStore]] = []
        for _ in range(2):
            store = await PostgresStore.open(url)
            stack.push_async_callback(store.close)
            replica = PostgresReplica(store, lease)
            await replica.start()
            started.append((replica, store))
        yield started


async def call(method: str, url: str, body: Any = None, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.request(method, url, json=body, **kwargs) as response:
        return response.status, await response.json()


async def ask(replica: Running, body: dict[str, Any] = ASK) -> str:
    status, reply = await call("POST", f"{replica.base_url}/v1/questions", body)
    assert status == 202, reply
    return str(reply["id"])


async def answer(replica: Running, question_id: str, label: str = "Yes", by: str = "alice") -> None:
    """Answer as a channel of `replica` does (the inbox's form, a Slack event): through its ledger."""
    item = AskUserQuestionAnswerItem(id="go", selected=[label])
    resolution = await replica.installation.ledger.submit(question_id, {"go": item}, by=by, via="web")
    assert resolution.won
