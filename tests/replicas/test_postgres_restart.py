"""PostgreSQL restarted under running replicas: they reconnect and catch up; agents' long-polls keep going or get a
503 that a re-poll survives; answers given after the restart reach the agents; a replica started meanwhile says so."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import anyio
import pytest

from tests.postgres_server import PASSWORD, PostgresServer

from .harness import ReplicaSet, replica_env, replica_set

pytestmark = pytest.mark.anyio

LONG_POLL = 60
OUTAGE_LEASE = 30
"""A lease longer than these outages: the replicas' leases hold throughout."""
SHORT_LEASE = 2
"""A lease shorter than the outage: it runs out, and each replica takes it again once PostgreSQL is back."""
ANSWERED_WITHIN = 20
"""Far below the long-polls' wait: they end because the answers reached them, not because they timed out."""


async def test_long_polls_survive_a_postgresql_restart_and_get_the_answers_given_after_it(
    tmp_path: Path, postgres_server: PostgresServer, postgres_url: str
) -> None:
    async with replica_set(tmp_path, postgres_url, 2, lease=OUTAGE_LEASE) as group:
        a, b = group.replicas
        on_a, on_b = await group.ask(a, "Asked on a?"), await group.ask(a, "Also asked on a?")
        for question_id in (on_a, on_b):
            await group.until_in_inbox(b, question_id)
        answers: dict[str, str] = {}
        restarted = anyio.Event()

        async def agent(replica_index: int, question_id: str) -> None:
            answers[question_id] = await _until_answered(group, replica_index, question_id, restarted)

        with anyio.fail_after(ANSWERED_WITHIN + 10):
            async with anyio.create_task_group() as agents:
                agents.start_soon(agent, 0, on_a)
                agents.start_soon(agent, 1, on_b)
                await anyio.to_thread.run_sync(postgres_server.stop)
                await anyio.to_thread.run_sync(postgres_server.start)
                restarted.set()
                with anyio.fail_after(ANSWERED_WITHIN):
                    await _answer(group, 1, on_a, option=1)  # on b, for the agent polling a
                    await _answer(group, 0, on_b, option=0)  # on a, for the agent polling b
        assert answers == {on_a: "No", on_b: "Yes"}


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


async def test_after_an_outage_longer_than_their_lease_replicas_carry_on_and_answers_reach_long_polls(
    tmp_path: Path, postgres_server: PostgresServer, postgres_url: str
) -> None:
    async with replica_set(tmp_path, postgres_url, 2, lease=SHORT_LEASE) as group:
        a, b = group.replicas
        question_id = await group.ask(a)
        await group.until_in_inbox(b, question_id)
        await anyio.to_thread.run_sync(postgres_server.stop)
        try:
            await anyio.sleep(SHORT_LEASE * 1.5)  # the outage itself: time has to pass for the leases to run out
        finally:
            await anyio.to_thread.run_sync(postgres_server.start)
        with anyio.fail_after(ANSWERED_WITHIN):
            for replica in (a, b):
                while not any("nobody took its questions; carrying on" in line for line in replica.lines):
                    await anyio.sleep(0.1)
        answers: dict[str, str] = {}
        restarted = anyio.Event()
        restarted.set()

        async def agent() -> None:
            answers[question_id] = await _until_answered(group, 1, question_id, restarted)  # long-polls b

        with anyio.fail_after(ANSWERED_WITHIN):
            async with anyio.create_task_group() as agents:
                agents.start_soon(agent)
                await _answer(group, 0, question_id, option=1)  # in a's inbox
        assert answers == {question_id: "No"}
        assert (a.alive, b.alive) == (True, True)
        assert not [line for replica in (a, b) for line in replica.lines if line.startswith("handraise: ")]


async def _until_answered(group: ReplicaSet, replica_index: int, question_id: str, restarted: anyio.Event) -> str:
    """An agent's long-poll loop: poll, and poll again after a 503 (the store was down); the option chosen."""
    replica = group[replica_index]
    while True:
        status, body = await group.poll(replica, question_id, LONG_POLL)
        if status == 503:
            assert body["error"]["code"] == "STORE_UNAVAILABLE", body
            await restarted.wait()  # a real agent waits Retry-After; here, until the store is back
            continue
        assert status == 200, body
        if body["status"] != "pending":
            return str(body["answer"]["answers"][0]["selected"][0])


async def _answer(group: ReplicaSet, replica_index: int, question_id: str, *, option: int) -> None:
    """Answer in a replica's inbox; a 503 (its pool still reconnecting) is sent again, as a person would."""
    while (status := await group.answer_in_inbox(group[replica_index], question_id, option)) == 503:
        await anyio.sleep(0.1)
    assert status == 303


async def _ask_once_back(group: ReplicaSet) -> str:
    """Ask until the replica's pool has reconnected (503 meanwhile); the question's id."""
    with anyio.fail_after(ANSWERED_WITHIN):
        while True:
            body = {"questions": [{"id": "go", "question": "Back?", "options": [{"label": "Yes"}]}]}
            async with group.http.post(f"{group[0].base}/v1/questions", json=body) as reply:
                if reply.status == 202:
                    return str((await reply.json())["id"])
                assert reply.status == 503, await reply.text()
            await anyio.sleep(0.1)
