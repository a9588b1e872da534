"""TaskBag: cheap owned tasks for long waits."""

from __future__ import annotations

import logging

import anyio
import anyio.lowlevel
import pytest

from bot.tasks import TaskBag

pytestmark = pytest.mark.anyio


async def test_close_cancels_what_is_still_running_and_waits_for_it() -> None:
    bag, cleaned = TaskBag(), anyio.Event()

    async def forever() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cleaned.set()

    bag.spawn(forever)
    await anyio.wait_all_tasks_blocked()
    assert len(bag) == 1
    await bag.close()
    assert cleaned.is_set() and len(bag) == 0
    with pytest.raises(RuntimeError, match="closed"):
        bag.spawn(forever)


async def test_a_finished_task_leaves_and_a_failure_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    bag = TaskBag()

    async def fail(message: str) -> None:
        raise ValueError(message)

    with caplog.at_level(logging.ERROR, logger="bot.tasks"):
        bag.spawn(fail, "boom")
        await anyio.wait_all_tasks_blocked()
        await anyio.lowlevel.checkpoint()
    assert len(bag) == 0
    assert "background task failed" in caplog.text
    await bag.close()
