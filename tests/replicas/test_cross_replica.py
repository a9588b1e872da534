"""An agent long-polls any replica (no sticky sessions), a person answers on another; the first answer wins."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from .conftest import Query
from .harness import replica_set

pytestmark = pytest.mark.anyio

LONG_POLL = 120
WOKEN_WITHIN = 15
"""Far below the long-poll's own wait: a poll that ends before it was woken by the answer, not by its timeout."""
ARRIVE = 0.3
"""Time for the long-polls to reach their replicas before the answer is given. Nothing outside a replica shows that
a poll is waiting; were the pause too short, the answer would come first and the polls return it at once anyway."""


async def test_an_answer_on_b_ends_long_polls_on_the_asking_replica_and_on_a_third_at_once(
    tmp_path: Path, postgres_url: str
) -> None:
    async with replica_set(tmp_path, postgres_url, 3) as group:
        a, b, _ = group.replicas
        question_id = await group.ask(a)
        await group.until_in_inbox(b, question_id)
        results: dict[str, dict[str, object]] = {}

        async def long_poll(name: str, replica_index: int) -> None:
            status, body = await group.poll(group[replica_index], question_id, LONG_POLL)
            assert status == 200
            results[name] = body

        with anyio.fail_after(WOKEN_WITHIN):
            async with anyio.create_task_group() as agents:
                agents.start_soon(long_poll, "on a", 0)
                agents.start_soon(long_poll, "on c", 2)
                await anyio.sleep(ARRIVE)
                assert await group.answer_in_inbox(b, question_id, option=1) == 303
        for body in results.values():
            assert body["status"] == "answered"
            assert body["answer"] == {"answers": [{"id": "go", "selected": ["No"]}]}
        assert sorted(results) == ["on a", "on c"]


async def test_two_people_answering_on_two_replicas_at_once_give_one_answer(
    tmp_path: Path, postgres_url: str, database: Query
) -> None:
    async with replica_set(tmp_path, postgres_url, 2) as group:
        b = group[1]
        question_id = await group.ask(group[0])
        await group.until_in_inbox(b, question_id)
        statuses: list[int] = []

        async def answer(replica_index: int, option: int) -> None:
            statuses.append(await group.answer_in_inbox(group[replica_index], question_id, option))

        async with anyio.create_task_group() as people:
            people.start_soon(answer, 0, 0)
            people.start_soon(answer, 1, 1)
        assert sorted(statuses) == [303, 409]
        _, body = await group.poll(b, question_id)
        kinds = await database("SELECT kind FROM audit WHERE question_id = %s ORDER BY seq", question_id)
        assert [kind for (kind,) in kinds if kind in ("answered", "duplicate")] == ["answered", "duplicate"]
        assert body["status"] == "answered"
