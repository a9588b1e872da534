"""PostgreSQL down under running replicas: a replica started meanwhile says so in one line, the others carry on."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import anyio
import pytest

from tests.postgres_server import PASSWORD, PostgresServer

from .harness import ReplicaSet, replica_env, replica_set

pytestmark = pytest.mark.anyio

OUTAGE_LEASE = 30
"""A lease longer than the outage, where replicas have leases: one that could not renew it for longer stops."""
BACK_WITHIN = 20
"""What the replica's pool may take to reconnect once PostgreSQL is back, on a loaded machine."""


async def test_a_replica_started_while_postgresql_is_down_exits_1_in_one_line_and_the_others_carry_on(
    tmp_path: Path, postgres_server: PostgresServer, postgres_url: str
) -> None:
    async with replica_set(tmp_path, postgres_url, 1, lease=OUTAGE_LEASE) as group:
        await anyio.to_thread.run_sync(postgres_server.stop)
        try:
            late = await anyio.run_process(
                [sys.executable, "-m", "bot.cli", "serve", "--config", str(group.config)],
                env=replica_env(postgres_url),
                check=False,
            )
        finally:
            await anyio.to_thread.run_sync(postgres_server.start)
        [line] = late.stderr.decode().strip().splitlines()
        assert late.returncode == 1
        assert re.match(r"handraise: cannot connect to the handraise store, PostgreSQL at 127\.0\.0\.1:\d+/", line)
        assert PASSWORD not in line
        question_id = await _ask_once_back(group)
        await group.until_in_inbox(group[0], question_id)
        assert group[0].alive


async def _ask_once_back(group: ReplicaSet) -> str:
    """Ask until the replica's pool has reconnected (503 meanwhile); the question's id."""
    with anyio.fail_after(BACK_WITHIN):
        while True:
            body = {"questions": [{"id": "go", "question": "Back?", "options": [{"label": "Yes"}]}]}
            async with group.http.post(f"{group[0].base}/v1/questions", json=body) as reply:
                if reply.status == 202:
                    return str((await reply.json())["id"])
                assert reply.status == 503, await reply.text()
            await anyio.sleep(0.1)
