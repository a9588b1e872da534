"""Run `ask()` in the background and read its outcome later: how channel tests play the waiting agent."""

from __future__ import annotations

import anyio
from anyio.abc import TaskGroup

from core import AskUserQuestionAnswer, AskUserQuestionRequest, Context, UserQuestionError


class Asked:
    """One `ask()` running in the background; `done` is set with its answer or error."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.outcome: AskUserQuestionAnswer | UserQuestionError | None = None

    async def result(self, seconds: float = 30) -> AskUserQuestionAnswer | UserQuestionError:
        with anyio.fail_after(seconds):
            await self.done.wait()
        assert self.outcome is not None
        return self.outcome

    async def answer(self) -> AskUserQuestionAnswer:
        outcome = await self.result()
        assert isinstance(outcome, AskUserQuestionAnswer), outcome
        return outcome


def ask_in_background(tasks: TaskGroup, ctx: Context, request: AskUserQuestionRequest) -> Asked:
    """Start `ctx.user_questions.ask(request)` in `tasks`; an error is kept as the outcome, not raised."""
    asked = Asked()

    async def run() -> None:
        service = ctx.user_questions
        assert service is not None
        try:
            asked.outcome = await service.ask(request)
        except UserQuestionError as error:
            asked.outcome = error
        asked.done.set()

    tasks.start_soon(run)
    return asked
