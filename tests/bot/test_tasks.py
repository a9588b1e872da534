"""TaskBag and Latch: cheap owned tasks for long waits, and what they wait on."""

from __future__ import annotations

import logging

import anyio
import anyio.lowlevel
import pytest

from bot.questions.tasks import Latch, TaskBag

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

    with caplog.at_level(logging.ERROR, logger="bot.questions.tasks"):
        bag.spawn(fail, "boom")
        await anyio.wait_all_tasks_blocked()
        await anyio.lowlevel.checkpoint()
    assert len(bag) == 0
    assert "background task failed" in caplog.text
    await bag.close()


async def test_a_latch_wakes_every_waiter_once_set_and_stays_set() -> None:
    latch, woken = Latch(), []

    async def waiter(name: str) -> None:
        await latch.wait()
        woken.append(name)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(waiter, "a")
        tasks.start_soon(waiter, "b")
        await anyio.wait_all_tasks_blocked()
        assert woken == [] and not latch.is_set()
        latch.set()
    assert sorted(woken) == ["a", "b"] and latch.is_set()
    with anyio.fail_after(1):
        await latch.wait()  # already set: returns at once
    latch.set()  # setting again changes nothing


async def test_a_cancelled_waiter_leaves_the_latch_to_the_others() -> None:
    latch, woken = Latch(), anyio.Event()

    async def waiter() -> None:
        await latch.wait()
        woken.set()

    async with anyio.create_task_group() as tasks:
        async with anyio.create_task_group() as giving_up:
            giving_up.start_soon(latch.wait)
            await anyio.wait_all_tasks_blocked()
            giving_up.cancel_scope.cancel()
        tasks.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        latch.set()
        with anyio.fail_after(1):
            await woken.wait()
