"""Permission rules on replicas sharing one PostgreSQL: "Always allow" chosen on one replica allows the identical
request on every replica at once, and `handraise rules remove` stops every replica using it at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from .conftest import Query
from .harness import ReplicaSet, replica_set

pytestmark = pytest.mark.anyio

ALWAYS_ALLOW = 2
"""The option "Always allow" in the inbox's form: after "Allow" and "Deny…"."""
RULES = '[[rules]]\nid = "git-read"\ntool = "shell"\nmatch = "git status*"\ndecision = "allow"\n'


def body(command: str) -> dict[str, Any]:
    permission = {"agent": "codex", "project": "shop", "tool": "Bash", "kind": "shell", "request": command}
    return {"permission": permission | {"detail": command}, "agent": {"id": "sess-1", "labels": {"tool": "codex"}}}


async def ask_permission(group: ReplicaSet, index: int, command: str) -> tuple[int, dict[str, Any]]:
    async with group.http.post(f"{group[index].base}/v1/permissions", json=body(command)) as reply:
        return reply.status, await reply.json()


def rules_cli(group: ReplicaSet, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "bot.cli", "rules", *argv, "--config", str(group.config)]
    return subprocess.run(command, env=group.env, capture_output=True, text=True, timeout=60, check=False)


async def test_always_allow_on_one_replica_allows_on_every_replica_until_removed(
    tmp_path: Path, postgres_url: str, database: Query
) -> None:
    async with replica_set(tmp_path, postgres_url, 2, config=RULES) as group:
        status, asked = await ask_permission(group, 0, "npm test")
        assert status == 202
        await group.until_in_inbox(group[1], asked["id"])
        assert await group.answer_in_inbox(group[1], asked["id"], option=ALWAYS_ALLOW) == 303
        _, answered = await group.poll(group[0], asked["id"], wait=10)
        assert answered["answer"] == {"answers": [{"id": "permission", "selected": ["Always allow"]}]}
        for index in (0, 1):
            status, decided = await ask_permission(group, index, "npm test")
            assert (status, decided["behavior"], decided["rule"]["source"]) == (200, "allow", "learned")
        learned_id = decided["rule"]["id"]

        listed = await anyio.to_thread.run_sync(rules_cli, group, "--json")
        assert listed.returncode == 0, listed.stderr
        assert '"git-read"' in listed.stdout and learned_id in listed.stdout

        removed = await anyio.to_thread.run_sync(rules_cli, group, "remove", learned_id)
        assert removed.returncode == 0, removed.stderr
        for index in (0, 1):
            assert (await ask_permission(group, index, "npm test"))[0] == 202
        assert (await ask_permission(group, 1, "git status"))[0] == 200

    rows = await database("SELECT detail_json FROM audit WHERE kind = 'rule' AND question_id IS NULL ORDER BY seq")
    assert len(rows) == 3  # two learned, one from the config
    assert await database("SELECT id FROM learned_rules") == []
