"""AbortController / AbortSignal under asyncio and trio."""

from __future__ import annotations

import logging

import anyio
import anyio.lowlevel
import pytest

from core import AbortController

pytestmark = pytest.mark.anyio


async def test_a_new_signal_is_not_aborted() -> None:
    signal = AbortController().signal
    assert (signal.aborted, signal.reason) == (False, None)


async def test_abort_sets_the_reason_once() -> None:
    controller = AbortController()
    controller.abort("first")
    controller.abort("second")
    assert (controller.signal.aborted, controller.signal.reason) == (True, "first")


async def test_callbacks_run_in_order_once_and_disposed_ones_do_not() -> None:
    controller, calls = AbortController(), []
    controller.signal.on_abort(lambda: calls.append("a"))
    dispose = controller.signal.on_abort(lambda: calls.append("gone"))
    controller.signal.on_abort(lambda: calls.append("b"))
    dispose()
    dispose()
    controller.abort()
    controller.abort()
    assert calls == ["a", "b"]


async def test_on_abort_after_the_abort_runs_at_once() -> None:
    controller, calls = AbortController(), []
    controller.abort()
    controller.signal.on_abort(lambda: calls.append("late"))
    assert calls == ["late"]


async def test_a_failing_callback_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    controller, calls = AbortController(), []
    controller.signal.on_abort(explode)
    controller.signal.on_abort(lambda: calls.append("still"))
    with caplog.at_level(logging.ERROR):
        controller.abort()
    assert calls == ["still"]


async def test_wait_returns_when_aborted_from_another_task() -> None:
    controller = AbortController()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(controller.signal.wait)
            await anyio.lowlevel.checkpoint()
            controller.abort()
    assert controller.signal.aborted


async def test_wait_on_an_aborted_signal_returns_at_once() -> None:
    controller = AbortController()
    controller.abort()
    with anyio.fail_after(1):
        await controller.signal.wait()


def test_a_controller_can_be_made_outside_an_event_loop() -> None:
    controller = AbortController()
    controller.abort("sync")
    assert controller.signal.reason == "sync"


def explode() -> None:
    raise ZeroDivisionError("a broken callback")
