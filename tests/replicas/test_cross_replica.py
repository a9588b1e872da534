"""People answering on two replicas at once: the first answer wins, across processes."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from .conftest import Query
from .harness import replica_set

pytestmark = pytest.mark.anyio


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
