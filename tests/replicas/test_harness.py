"""The harness itself: three replicas start on one database, each answers its health check, and they stop cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import replica_set

pytestmark = pytest.mark.anyio


async def test_three_replicas_serve_one_database_and_stop_cleanly(tmp_path: Path, postgres_url: str) -> None:
    async with replica_set(tmp_path, postgres_url, 3) as group:
        asked = await group.ask(group[0])
        for replica in group.replicas:
            async with group.http.get(f"{replica.base}/healthz") as health:
                assert (await health.json())["pending"] == 1
            status, body = await group.poll(replica, asked)
            assert (status, body["status"]) == (200, "pending")
        assert len({replica.base for replica in group.replicas}) == 3
        assert [await replica.stop() for replica in group.replicas] == [0, 0, 0]
