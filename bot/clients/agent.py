"""Ask through a running `handraise serve` from Python, in another process: `ask()` and `ask_async()`.

    from bot.clients.agent import HandraiseClient

    handraise = HandraiseClient("http://127.0.0.1:8765", agent={"id": "deploy-bot", "labels": {"team": "infra"}})
    answer = handraise.ask([{"id": "go", "question": "Deploy v2 to prod?", "options": [{"label": "Yes"}]}])
    answer.answers[0].selected  # ["Yes"]

Failures raise `core.UserQuestionError` with the seam's codes: EMPTY_QUESTIONS, BAD_INTENT and NO_PROVIDER as the
server refuses (BAD_REQUEST for a question that is not the seam's shape); ASK_CANCELLED or ASK_TIMEOUT when the
question ends unanswered (also when `timeout` passes here: the question is then cancelled, so Slack and email retract
it); UNREACHABLE when no server answers. With `ask_async`, bound the wait with `anyio.fail_after`: the cancellation
cancels the question the same way.

The HTTP calls are the standard library's, run in worker threads: `ask_async` works on asyncio and trio, and
cancelling it cancels the question. `ask` is `ask_async` run to completion, for scripts without an event loop.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from pydantic import ValidationError

from bot.clients.http import POLL_SECONDS, UNREACHABLE_PATIENCE, ApiClient, Reply, Unreachable
from core import AskUserQuestionAnswer, AskUserQuestionItem, ErrorCode, UserQuestionError

DEFAULT_SERVER = "http://127.0.0.1:8765"

Question = AskUserQuestionItem | Mapping[str, Any]
Agent = Mapping[str, Any]
"""`{"id": …, "name": …, "labels": {…}}`, as the HTTP API takes it: what routing matches."""


class HandraiseClient:
    """A client of one handraise server. `server` defaults to $HANDRAISE_SERVER, the token to $HANDRAISE_API_TOKEN."""

    def __init__(
        self,
        server: str | None = None,
        token: str | None = None,
        *,
        agent: Agent | None = None,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        base = server or os.environ.get("HANDRAISE_SERVER") or DEFAULT_SERVER
        self._api = ApiClient(base, token if token is not None else os.environ.get("HANDRAISE_API_TOKEN"))
        self.agent = agent
        self._poll = poll_seconds

    def ask(
        self, questions: Sequence[Question], *, agent: Agent | None = None, timeout: float | None = None
    ) -> AskUserQuestionAnswer:
        """Ask and block until the answer, or `timeout` seconds (then the question is cancelled: ASK_TIMEOUT).

        Raises UserQuestionError (see the module docstring).
        """

        async def within() -> AskUserQuestionAnswer:
            with anyio.fail_after(timeout):
                return await self.ask_async(questions, agent=agent)

        try:
            return anyio.run(within)
        except TimeoutError:
            raise UserQuestionError(
                f"no answer within {timeout:g} s; the question was cancelled", ErrorCode.ASK_TIMEOUT
            ) from None

    async def ask_async(self, questions: Sequence[Question], *, agent: Agent | None = None) -> AskUserQuestionAnswer:
        """Ask and wait for the answer. Raises UserQuestionError.

        Cancelling the call (a cancel scope, `anyio.fail_after`, task cancellation) cancels the question, so its
        channels retract it.
        """
        body: dict[str, Any] = {"questions": [_wire(question) for question in questions]}
        if (who := agent if agent is not None else self.agent) is not None:
            body["agent"] = dict(who)
        reply = await self._call("POST", "/v1/questions", body)
        if reply.status != 202:
            raise _refusal(reply)
        question_id = str(reply.body["id"])
        try:
            return await self._wait(question_id)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._cancel(question_id)
            raise

    async def _wait(self, question_id: str) -> AskUserQuestionAnswer:
        away_since: float | None = None
        while True:
            try:
                reply = await self._call("GET", f"/v1/questions/{question_id}?wait={self._poll:g}", wait=self._poll)
            except UserQuestionError:
                # A restarting server: keep the question, poll again for a while.
                away_since = away_since or time.monotonic()
                if time.monotonic() - away_since > UNREACHABLE_PATIENCE:
                    raise
                await anyio.sleep(1)
                continue
            away_since = None
            if reply.status != 200:
                raise _refusal(reply)
            status = reply.body.get("status")
            if status == "answered":
                return AskUserQuestionAnswer.model_validate(reply.body["answer"])
            if status != "pending":
                error = reply.body.get("error") or {}
                raise UserQuestionError(
                    str(error.get("message") or f"the question was {status}"), str(error.get("code") or status)
                )

    async def _cancel(self, question_id: str) -> None:
        with contextlib.suppress(UserQuestionError), anyio.move_on_after(10):
            await self._call("DELETE", f"/v1/questions/{question_id}")

    async def _call(self, method: str, path: str, body: object = None, *, wait: float = 0) -> Reply:
        call = functools.partial(self._api.call, method, path, body, wait=wait)
        try:
            # Abandoned on cancel: the thread ends its one request by itself, within the client's timeout.
            return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        except Unreachable as error:
            raise UserQuestionError(f"{error}; is `handraise serve` running?", "UNREACHABLE") from None


def _wire(question: Question) -> dict[str, Any]:
    if isinstance(question, AskUserQuestionItem):
        return question.to_wire()
    try:
        return AskUserQuestionItem.model_validate(question).to_wire()
    except ValidationError as invalid:
        # As the server would refuse it, and as documented: every failure is a UserQuestionError.
        first = invalid.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "question"
        raise UserQuestionError(f"{where}: {first['msg']}", "BAD_REQUEST") from None


def _refusal(reply: Reply) -> UserQuestionError:
    error = reply.body.get("error") or {}
    code = str(error.get("code") or f"HTTP_{reply.status}")
    return UserQuestionError(str(error.get("message") or "the handraise server refused the request"), code)
