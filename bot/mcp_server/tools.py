"""The MCP tools over a `QuestionRelay`: ask, wait with progress, hand back a handle when the client's clock runs out.

Built on the SDK's low-level `Server` rather than `MCPServer`'s decorators: the tool's input schema must be the seam
tool's own (`AskUserQuestionTool.parameters`, plus `wait_seconds`), not one derived from a Python signature, and
results carry both text and `structuredContent` matching a declared output schema (MCP spec, "Tools": structured
content).

Long waits: many clients give a tool call about 60 s. So `ask_user_question` waits `wait_seconds` (default 50) and
then returns `{status: "pending", handle}`; `get_answer` waits again. While waiting it sends a progress notification
every ~15 s, which only reaches clients that sent a progress token.

A call cancelled or cut off mid-wait (the client sent `notifications/cancelled`, closed the session, or the process
ended) cancels its question, so Slack and email retract it: a client that wants to come back later must take the
`pending` handle, which it gets before its own timeout when `wait_seconds` is below that timeout. Stopping the
server is not the client giving up: `stop()` ends the waiting calls with their handle and the questions stay pending.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from bot.clients.http import compact_answer
from bot.mcp_server.relay import QuestionRelay
from bot.mcp_server.timing import Timing
from bot.questions.validation import RequestRefused, check_ask_payload
from bot.store.records import AgentRef
from core import AskUserQuestionItem, AskUserQuestionTool, UserQuestionError, parse_questions

MAX_WAIT_SECONDS = 300.0
EARLY_RETRY_SECONDS = 0.05


HANDLE = {"type": "string", "description": "The question's handle, from a pending ask_user_question result."}
WAIT = {
    "type": "number",
    "minimum": 0,
    "maximum": MAX_WAIT_SECONDS,
    "description": "Seconds to wait for the answer in this call (default 50). Keep it below your tool-call timeout; "
    "if no answer came, the result is pending with a handle for get_answer.",
}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"enum": ["answered", "pending", "cancelled"]},
        "handle": {"type": "string"},
        "answers": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "selected": {"type": "array", "items": {"type": "string"}},
                    "custom": {"type": "string"},
                },
                "required": ["id", "selected"],
            },
        },
    },
    "required": ["status", "handle"],
}
PENDING_ADVICE = (
    "No answer yet: the question is still with a person. Call get_answer with this handle to keep waiting (you may "
    "do work that does not depend on the answer first); call cancel_question if you no longer need it."
)


def ask_schema() -> dict[str, Any]:
    schema = copy.deepcopy(AskUserQuestionTool.parameters)
    schema["properties"]["wait_seconds"] = WAIT
    return schema


TOOLS = [
    types.Tool(
        name="ask_user_question",
        description=AskUserQuestionTool.description
        + " If the person has not answered within wait_seconds, the result has status "
        '"pending" and a handle: then call get_answer with it.',
        input_schema=ask_schema(),
        output_schema=OUTPUT_SCHEMA,
    ),
    types.Tool(
        name="get_answer",
        description="Wait again for the answer to a question that ask_user_question left pending. Returns the "
        'answers, or status "pending" again (then call get_answer again).',
        input_schema={
            "type": "object",
            "properties": {"handle": HANDLE, "wait_seconds": WAIT},
            "required": ["handle"],
        },
        output_schema=OUTPUT_SCHEMA,
    ),
    types.Tool(
        name="cancel_question",
        description="Withdraw a pending question you no longer need; the person sees it was withdrawn.",
        input_schema={"type": "object", "properties": {"handle": HANDLE}, "required": ["handle"]},
        output_schema=OUTPUT_SCHEMA,
    ),
]


class QuestionTools:
    """The three tools' handlers over a relay; `server()` wraps them in an MCP server."""

    def __init__(self, relay: QuestionRelay, *, labels: dict[str, str] | None = None, timing: Timing | None = None):
        self.relay = relay
        self.labels = labels or {}
        self.timing = timing or Timing()
        self.stopping = False
        self._waiting: set[anyio.CancelScope] = set()

    def stop(self) -> None:
        """End every waiting call with a pending result; their questions stay open (as /v1's do over a restart)."""
        self.stopping = True
        for scope in list(self._waiting):
            scope.cancel()

    def server(self) -> Server[Any]:
        return Server(
            "handraise",
            instructions="Ask a person through handraise (Slack, email or its web inbox) and get their answer.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        try:
            if params.name == "ask_user_question":
                wait = self._wait_seconds(arguments)
                # The HTTP API's own checks (duplicate ids, control characters, sizes): /mcp does not pass through it.
                check_ask_payload({"questions": arguments.get("questions")})
                questions = parse_questions({k: v for k, v in arguments.items() if k != "wait_seconds"})
                question_id = await self._create(questions, agent_of(ctx, self.labels))
                return await self._await(ctx, question_id, wait)
            if params.name == "get_answer":
                return await self._await(ctx, _handle(arguments), self._wait_seconds(arguments))
            if params.name == "cancel_question":
                handle = _handle(arguments)
                await self.relay.cancel(handle)
                return _result({"status": "cancelled", "handle": handle}, f"Cancelled question {handle}.")
        except RequestRefused as refused:
            return _error(f"invalid arguments: {refused.message}")
        except (ValueError, UserQuestionError) as error:
            return _error(str(error.message if isinstance(error, UserQuestionError) else error))
        return _error(f"unknown tool {params.name}; the tools are ask_user_question, get_answer, cancel_question")

    async def _create(self, questions: list[AskUserQuestionItem], agent: AgentRef) -> str:
        """Shielded: a call cut off while its question is being created must still learn the id, so that the wait
        (which meets the cancellation at its first await) cancels the question rather than leaving it open."""
        with anyio.CancelScope(shield=True):
            return await self.relay.ask(questions, agent)
        raise AssertionError("a shielded scope that nothing cancels always runs to its end")

    def _wait_seconds(self, arguments: dict[str, Any]) -> float:
        value = arguments.get("wait_seconds", self.timing.default_wait)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_WAIT_SECONDS:
            raise ValueError(f"invalid arguments: wait_seconds must be a number from 0 to {MAX_WAIT_SECONDS:g}")
        return float(value)

    async def _await(self, ctx: ServerRequestContext[Any], question_id: str, wait: float) -> types.CallToolResult:
        with anyio.CancelScope() as scope:
            self._waiting.add(scope)
            try:
                return await self._wait_loop(ctx, question_id, wait)
            finally:
                self._waiting.discard(scope)
        # Only `stop()` gets here: the server is going down and the client can ask again after the restart.
        advice = f"handraise is restarting. {PENDING_ADVICE} handle: {question_id}"
        return _result({"status": "pending", "handle": question_id}, advice)

    async def _wait_loop(self, ctx: ServerRequestContext[Any], question_id: str, wait: float) -> types.CallToolResult:
        started = time.monotonic()
        deadline = started + wait
        next_progress = started + self.timing.progress_every
        try:
            while True:
                body = await self.relay.wait(question_id, max(0.0, min(next_progress, deadline) - time.monotonic()))
                if body.get("status") != "pending":
                    return _resolved(question_id, body)
                now = time.monotonic()
                if now >= deadline:
                    advice = f"{PENDING_ADVICE} handle: {question_id}"
                    return _result({"status": "pending", "handle": question_id}, advice)
                if now >= next_progress:
                    elapsed = now - started
                    await ctx.session.report_progress(
                        elapsed, None, f"waiting for a person to answer ({elapsed:.0f} s)"
                    )
                    next_progress = now + self.timing.progress_every
                else:
                    # Back early and still pending (a question not yet handed to its channels): do not spin.
                    await anyio.sleep(EARLY_RETRY_SECONDS)
        except anyio.get_cancelled_exc_class():
            if self.stopping:
                raise
            # Already resolved, or the server is gone: then there is nothing left to retract.
            with anyio.CancelScope(shield=True), anyio.move_on_after(10), contextlib.suppress(UserQuestionError):
                await self.relay.cancel(question_id)
            raise


def agent_of(ctx: ServerRequestContext[Any], labels: dict[str, str]) -> AgentRef:
    """The asking agent: the MCP client as it names itself in `clientInfo`, with the configured labels."""
    params = ctx.session.client_params
    name = params.client_info.name if params is not None and params.client_info.name else "mcp-client"
    return AgentRef(id=f"mcp-{name}", name=name, labels={"tool": "mcp", "client": name, **labels})


def _handle(arguments: dict[str, Any]) -> str:
    handle = arguments.get("handle")
    if not isinstance(handle, str) or not handle:
        raise ValueError("invalid arguments: handle must be the handle string from a pending result")
    return handle


def _resolved(question_id: str, body: dict[str, Any]) -> types.CallToolResult:
    if body.get("status") == "answered":
        text = compact_answer(body.get("answer"))
        return _result({"status": "answered", "handle": question_id, **json.loads(text)}, text)
    error = body.get("error") or {}
    return _error(str(error.get("message") or f"the question was {body.get('status')}"))


def _result(structured: dict[str, Any], text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)


def _error(message: str) -> types.CallToolResult:
    # The seam tool's wording (`core.tool`): the model reads "Error: <message>".
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"Error: {message}")], is_error=True)
