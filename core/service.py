"""`ctx.user_questions`: validate a request, dispatch it down the answerer waterfall, and await the human."""

from __future__ import annotations

from typing import Any

import anyio
from pydantic import ValidationError

from core import errors
from core.context import Context
from core.errors import UserQuestionError
from core.types import AskUserQuestionAnswer, AskUserQuestionRequest

REQUEST_EVENT = "user-questions/request"


class UserQuestionService:
    """The seam. A plugin: `ctx.plugin(UserQuestionService)` provides it as `ctx.user_questions`."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        ctx.provide("user_questions", self)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Ask a human and return the first answer an answerer accepts.

        When an agent is supplied, only the exact live runtime root may ask: runtime ownership, not session
        lineage, decides. An owned child has no human answerer and would block forever, while a session resumed as
        a new root may ask normally.

        Raises `UserQuestionError`: the five checks of `check()` before any answerer is reached, NO_PROVIDER when
        every answerer delegates, ASK_ABORTED when the signal aborts (the waiting answerer is cancelled), or an
        answerer's own `UserQuestionError`. Any other answerer failure propagates unchanged unless the signal had
        aborted.
        """
        self.check(request)
        return await self._dispatch(request)

    def check(self, request: AskUserQuestionRequest) -> None:
        """Run `ask()`'s checks, in the design's order, without dispatching; raises the first `UserQuestionError`.

        A transport (the bot's HTTP API) uses it to refuse a bad request at once instead of after queueing it.
        """
        signal = request.signal
        if signal is not None and signal.aborted:
            raise errors.aborted()
        if not request.questions:
            raise errors.empty_questions()
        agent = request.agent
        if agent is not None:
            agents = self._ctx.agents
            if agents is None or agents.get(agent.id) is not agent:
                raise errors.caller_not_live()
            if not agents.is_root(agent):
                raise errors.delegated_caller()
        for question in request.questions:
            intent = question.intent
            if intent is None:
                continue
            if not any(option.label == intent.approve for option in question.options or ()):
                raise errors.approve_names_no_option(question.id, intent.kind, intent.approve)
            if intent.reject is not None:
                if intent.reject == intent.approve:
                    raise errors.reject_is_approve(question.id, intent.kind, intent.reject)
                if not any(option.label == intent.reject for option in question.options or ()):
                    raise errors.reject_names_no_option(question.id, intent.kind, intent.reject)
            if question.detail is None:
                raise errors.intent_without_detail(question.id, intent.kind)

    async def _dispatch(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        signal = request.signal
        result: Any = None
        scope: anyio.CancelScope | None = None
        try:
            if signal is None:
                # Nothing can abort it, so no cancel scope: a waiting question costs less memory.
                result = await self._ctx.waterfall(REQUEST_EVENT, request, _no_answerer, target=request.agent)
            else:
                with anyio.CancelScope() as scope:
                    stop_on_abort = signal.on_abort(scope.cancel)
                    try:
                        result = await self._ctx.waterfall(REQUEST_EVENT, request, _no_answerer, target=request.agent)
                    finally:
                        stop_on_abort()
        except Exception as failure:
            restored = UserQuestionError.restore(failure)
            if restored is failure:
                raise
            if restored is not None:
                raise restored from failure
            if signal is not None and signal.aborted:
                raise errors.aborted() from failure
            raise
        if scope is not None and scope.cancel_called:
            # The signal aborted: whatever the cancelled answerer did on its way out, the caller is gone.
            raise errors.aborted()
        return _as_answer(result)


async def _no_answerer() -> Any:
    raise errors.no_provider()


def _as_answer(result: object) -> AskUserQuestionAnswer:
    """Accept an answer model or an equivalent dict; anything else is a bug in the answerer."""
    if isinstance(result, AskUserQuestionAnswer):
        return result
    try:
        return AskUserQuestionAnswer.model_validate(result)
    except ValidationError as invalid:
        raise TypeError(f"an answerer returned something that is not an AskUserQuestionAnswer: {invalid}") from None
