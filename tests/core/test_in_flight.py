"""What `ask()` does while an answerer is waiting: its errors, transported errors, and the signal aborting."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from core import AbortController, AskUserQuestionRequest, UserQuestionError

from .helpers import make_context, request, service

pytestmark = pytest.mark.anyio


class TransportedError(Exception):
    """How an RPC layer re-raises an error it cannot rebuild as a Python class."""

    def __init__(self, message: str, name: str, code: object) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.code = code


def raising(error: BaseException, *, after: AbortController | None = None) -> Any:
    async def listener(req: AskUserQuestionRequest, next_: Any) -> Any:
        if after is not None:
            after.abort()
        raise error

    return listener


async def ask_error(listener: Any, **fields: Any) -> BaseException:
    ctx = make_context()
    ctx.on("user-questions/request", listener)
    with pytest.raises(BaseException) as caught:
        await service(ctx).ask(request(**fields))
    return caught.value


async def test_an_answerers_user_question_error_is_raised_as_is() -> None:
    original = UserQuestionError("the human said no", "ASK_CANCELLED")
    assert await ask_error(raising(original)) is original


async def test_a_transported_error_is_restored_with_its_message_code_and_cause() -> None:
    transported = TransportedError("remote refused", "UserQuestionError", "ASK_TIMEOUT")
    error = await ask_error(raising(transported))
    assert isinstance(error, UserQuestionError)
    assert (error.message, error.code) == ("remote refused", "ASK_TIMEOUT")
    assert error.__cause__ is transported


async def test_an_error_named_otherwise_is_not_restored() -> None:
    other = TransportedError("x", "OtherError", "ASK_TIMEOUT")
    assert await ask_error(raising(other)) is other


async def test_an_error_whose_code_is_not_a_string_is_not_restored() -> None:
    other = TransportedError("x", "UserQuestionError", 42)
    assert await ask_error(raising(other)) is other


async def test_other_failures_propagate_unchanged() -> None:
    failure = ConnectionError("slack is down")
    assert await ask_error(raising(failure)) is failure


async def test_user_question_error_wins_even_after_the_signal_aborted() -> None:
    controller = AbortController()
    original = UserQuestionError("cancelled in Slack", "ASK_CANCELLED")
    error = await ask_error(raising(original, after=controller), signal=controller.signal)
    assert error is original


async def test_transported_error_wins_even_after_the_signal_aborted() -> None:
    controller = AbortController()
    transported = TransportedError("gone", "UserQuestionError", "ASK_CANCELLED")
    error = await ask_error(raising(transported, after=controller), signal=controller.signal)
    assert isinstance(error, UserQuestionError)
    assert error.code == "ASK_CANCELLED"


async def test_other_failure_after_the_signal_aborted_becomes_ask_aborted_with_cause() -> None:
    controller = AbortController()
    failure = ConnectionError("closed")
    error = await ask_error(raising(failure, after=controller), signal=controller.signal)
    assert isinstance(error, UserQuestionError)
    assert error.code == "ASK_ABORTED"
    assert error.__cause__ is failure


async def test_abort_while_waiting_cancels_the_answerer_and_raises_ask_aborted() -> None:
    ctx = make_context()
    controller = AbortController()
    started, cleaned_up = anyio.Event(), anyio.Event()

    async def stubborn(req: AskUserQuestionRequest, next_: Any) -> Any:
        started.set()
        try:
            await anyio.sleep_forever()  # ignores the signal entirely
        finally:
            cleaned_up.set()

    ctx.on("user-questions/request", stubborn)
    outcome: list[BaseException] = []

    async def asker() -> None:
        try:
            await service(ctx).ask(request(signal=controller.signal))
        except UserQuestionError as error:
            outcome.append(error)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(asker)
            await started.wait()
            controller.abort("user pressed stop")
    assert cleaned_up.is_set()
    assert isinstance(outcome[0], UserQuestionError) and outcome[0].code == "ASK_ABORTED"


async def test_answerer_that_raises_its_own_error_while_cancelled_is_heard() -> None:
    ctx = make_context()
    controller = AbortController()
    started = anyio.Event()

    async def retracting(req: AskUserQuestionRequest, next_: Any) -> Any:
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            raise UserQuestionError("retracted", "ASK_CANCELLED") from None

    ctx.on("user-questions/request", retracting)
    caught: list[UserQuestionError] = []

    async def asker() -> None:
        try:
            await service(ctx).ask(request(signal=controller.signal))
        except UserQuestionError as error:
            caught.append(error)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(asker)
            await started.wait()
            controller.abort()
    assert caught[0].code == "ASK_CANCELLED"


async def test_an_answer_before_the_abort_is_returned_and_the_abort_listener_is_removed() -> None:
    ctx = make_context()
    controller = AbortController()

    async def quick(req: AskUserQuestionRequest, next_: Any) -> Any:
        return {"answers": [{"id": "q1", "selected": ["ok"]}]}

    ctx.on("user-questions/request", quick)
    answer = await service(ctx).ask(request(signal=controller.signal))
    controller.abort()  # must not reach a finished ask
    assert answer.answers[0].selected == ["ok"]


async def test_outer_cancellation_is_not_turned_into_an_answer_or_error() -> None:
    ctx = make_context()
    started = anyio.Event()

    async def waiting(req: AskUserQuestionRequest, next_: Any) -> Any:
        started.set()
        await anyio.sleep_forever()

    ctx.on("user-questions/request", waiting)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(service(ctx).ask, request())
            await started.wait()
            group.cancel_scope.cancel()
    assert group.cancel_scope.cancel_called
