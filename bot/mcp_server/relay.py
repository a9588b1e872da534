"""Where the MCP tools send their questions: the running `serve` over HTTP (stdio), or the program itself (/mcp).

Both speak the HTTP API's question JSON (`bot.api.routes.question_json`) and raise `UserQuestionError` with the seam's
codes, or NOT_FOUND / ALREADY_RESOLVED / UNREACHABLE, so the tools behave the same over either transport.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import anyio

from bot.api.remote import RemoteQuestions
from bot.api.routes import question_json
from bot.clients.http import ApiClient, Reply, Unreachable
from bot.questions.ledger import Ledger, UnknownQuestion
from bot.store.records import AgentRef
from core import AskUserQuestionItem, UserQuestionError


class QuestionRelay(Protocol):
    async def ask(self, questions: list[AskUserQuestionItem], agent: AgentRef) -> str:
        """Open the question; returns its id. Raises UserQuestionError (EMPTY_QUESTIONS, NO_PROVIDER, …)."""
        ...

    async def wait(self, question_id: str, seconds: float) -> dict[str, Any]:
        """The question JSON once it resolves or `seconds` pass. Raises UserQuestionError NOT_FOUND."""
        ...

    async def cancel(self, question_id: str) -> dict[str, Any]:
        """Cancel (the channels retract it). Raises UserQuestionError NOT_FOUND or ALREADY_RESOLVED."""
        ...


class ProgramRelay:
    """The questions go straight to the program serving /mcp."""

    def __init__(self, remote: RemoteQuestions, ledger: Ledger) -> None:
        self._remote = remote
        self._ledger = ledger

    async def ask(self, questions: list[AskUserQuestionItem], agent: AgentRef) -> str:
        return (await self._remote.ask(questions, agent)).id

    async def wait(self, question_id: str, seconds: float) -> dict[str, Any]:
        try:
            return question_json(await self._ledger.wait(question_id, seconds))
        except UnknownQuestion:
            raise not_found(question_id) from None

    async def cancel(self, question_id: str) -> dict[str, Any]:
        try:
            resolution = await self._remote.cancel(question_id, by="mcp")
        except UnknownQuestion:
            raise not_found(question_id) from None
        if not resolution.won:
            raise already_resolved(question_id, resolution.record.status)
        return question_json(resolution.record)


class HttpRelay:
    """The questions go to a running `handraise serve` through its HTTP API (blocking calls in worker threads)."""

    def __init__(self, client: ApiClient) -> None:
        self._client = client

    async def ask(self, questions: list[AskUserQuestionItem], agent: AgentRef) -> str:
        body = {"questions": [q.to_wire() for q in questions], "agent": agent.model_dump(exclude_none=True)}
        reply = await self._call("POST", "/v1/questions", body)
        if reply.status != 202:
            raise _refusal(reply)
        return str(reply.body["id"])

    async def wait(self, question_id: str, seconds: float) -> dict[str, Any]:
        reply = await self._call("GET", f"/v1/questions/{question_id}?wait={seconds:.1f}", wait=seconds)
        if reply.status == 404:
            raise not_found(question_id)
        if reply.status != 200:
            raise _refusal(reply)
        return reply.body

    async def cancel(self, question_id: str) -> dict[str, Any]:
        reply = await self._call("DELETE", f"/v1/questions/{question_id}")
        if reply.status == 404:
            raise not_found(question_id)
        if reply.status != 200:
            raise _refusal(reply)
        return reply.body

    async def _call(self, method: str, path: str, body: object = None, *, wait: float = 0) -> Reply:
        call = functools.partial(self._client.call, method, path, body, wait=wait)
        try:
            # Abandoned on cancel: the thread finishes its one request on its own, bounded by the client timeout.
            return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        except Unreachable as error:
            raise UserQuestionError(f"{error}; is `handraise serve` running?", "UNREACHABLE") from None


def not_found(question_id: str) -> UserQuestionError:
    return UserQuestionError(f"no question {question_id}; check the handle", "NOT_FOUND")


def already_resolved(question_id: str, status: str) -> UserQuestionError:
    return UserQuestionError(f"question {question_id} is already {status}", "ALREADY_RESOLVED")


def _refusal(reply: Reply) -> UserQuestionError:
    error = reply.body.get("error") or {}
    return UserQuestionError(
        str(error.get("message", "the handraise server refused the request")), str(error.get("code", reply.status))
    )
