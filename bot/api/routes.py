"""The HTTP API for agents in other processes: ask, long-poll, cancel. Errors carry the seam's codes."""

from __future__ import annotations

import hmac
import json
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from bot.api.ask_body import AskBody
from bot.api.notes import StatusNotes
from bot.api.openapi import MAX_WAIT_SECONDS, openapi_document
from bot.api.remote import RemoteQuestions
from bot.questions.ledger import Ledger, UnknownQuestion
from bot.questions.status_note import StatusNote
from bot.questions.validation import (
    MAX_BODY_BYTES,
    RequestRefused,
    field_path,
    parse_ask_body,
    parse_note_body,
    too_large,
)
from bot.store.errors import StoreUnavailable
from bot.store.records import QuestionRecord
from core import UserQuestionError

LEDGER_KEY = web.AppKey("ledger", Ledger)
REMOTE_KEY = web.AppKey("remote", RemoteQuestions)
NOTES_KEY = web.AppKey("notes", StatusNotes)


def error_response(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


STORE_RETRY_AFTER_SECONDS = 5
"""What a 503 STORE_UNAVAILABLE tells clients to wait before trying again."""


def store_unavailable(down: StoreUnavailable) -> web.Response:
    """A store that cannot write (disk full, read-only file) answers 503 naming the file, on every path.

    Nothing was acknowledged, so the client may simply retry; pages that speak to people say so themselves first.
    """
    response = error_response(503, down.code, down.message)
    response.headers["Retry-After"] = str(STORE_RETRY_AFTER_SECONDS)
    return response


STATUS_OF_CODE = {"EMPTY_QUESTIONS": 422, "BAD_INTENT": 422, "NO_PROVIDER": 422, "BAD_REQUEST": 422}


def question_json(record: QuestionRecord) -> dict[str, Any]:
    """The public view of a question: `status`, and `answer` or `error` once it is resolved."""
    body: dict[str, Any] = {
        "id": record.id,
        "status": record.status,
        "createdAt": record.created_at.isoformat(),
        "questions": [question.to_wire() for question in record.questions],
    }
    if record.agent is not None:
        body["agent"] = record.agent.model_dump(exclude_none=True)
    if record.status == "answered" and record.answer is not None:
        body["answer"] = record.answer.to_wire()
    elif record.status != "pending":
        body["error"] = {"code": record.error_code or "", "message": record.error_message or ""}
    if record.approvals:
        body["approvedBy"] = [approval.by for approval in record.approvals]
    if record.status != "pending":
        body["resolvedBy"] = record.answered_by
        body["resolvedVia"] = record.answered_via
        body["resolvedAt"] = record.resolved_at.isoformat() if record.resolved_at else None
    return body


class BearerAuth:
    """Require `Authorization: Bearer <token>` on /v1, /mcp and /metrics when a token is configured (always, beyond
    loopback)."""

    def __init__(self, token: str | None) -> None:
        self._expected = None if token is None else f"Bearer {token}".encode()

    def refusal(self, request: web.Request) -> web.Response | None:
        """401 UNAUTHORIZED for a guarded path without the token; None when the request may go on."""
        if self._expected is None:
            return None
        path = request.path
        if not (path.startswith("/v1/") or path == "/mcp" or path.startswith("/mcp/") or path == "/metrics"):
            return None
        given = request.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), self._expected):
            return None
        return error_response(401, "UNAUTHORIZED", "send the API token as 'Authorization: Bearer <token>'")


async def read_body(request: web.Request, limit: int) -> bytes:
    """The body, read at most `limit` bytes far whether or not it declares its length (a chunked one does not).

    Raises RequestRefused (413 TOO_LARGE) as soon as the body passes the limit, without reading the rest.
    """
    declared = request.content_length  # parsed from the header on every access
    if declared is not None and declared > limit:
        raise too_large(declared)
    content = request.content
    chunks: list[bytes] = []
    size = 0
    # Stops once the stream says it has ended, rather than by one more read that returns nothing: a body that came
    # in one piece (most do) is read once and returned as it is.
    while not content.at_eof():
        chunk = await content.readany()
        size += len(chunk)
        if size > limit:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


async def ask(request: web.Request) -> web.Response:
    try:
        body = AskBody.model_validate(parse_ask_body(await read_body(request, MAX_BODY_BYTES)), strict=True)
    except RequestRefused as refused:
        return error_response(refused.status, refused.code, refused.message)
    except ValidationError as invalid:
        first = invalid.errors()[0]
        return error_response(422, "BAD_REQUEST", f"{field_path(first['loc']) or 'body'}: {first['msg']}")
    try:
        record = await request.app[REMOTE_KEY].ask(body.questions, body.agent)
    except UserQuestionError as refused:
        return error_response(STATUS_OF_CODE.get(refused.code, 422), refused.code, refused.message)
    await request.app[LEDGER_KEY].store.durable()
    return web.json_response(
        {"id": record.id, "status": "pending"}, status=202, headers={"Location": f"/v1/questions/{record.id}"}
    )


async def post_note(request: web.Request) -> web.Response:
    """A status note: shown where the agent's questions go, with nothing to answer, stored nowhere."""
    try:
        note = StatusNote.model_validate(parse_note_body(await read_body(request, MAX_BODY_BYTES)), strict=True)
    except RequestRefused as refused:
        return error_response(refused.status, refused.code, refused.message)
    except ValidationError as invalid:
        first = invalid.errors()[0]
        return error_response(422, "BAD_REQUEST", f"{field_path(first['loc']) or 'body'}: {first['msg']}")
    shown = await request.app[NOTES_KEY].post(note)
    body: dict[str, Any] = {"delivered": shown or []}
    if shown is None:
        body["throttled"] = True
    return web.json_response(body, status=202)


async def get_question(request: web.Request) -> web.Response:
    wait_text = request.query.get("wait", "0")
    try:
        wait = float(wait_text)
        if not 0 <= wait <= MAX_WAIT_SECONDS:
            raise ValueError
    except ValueError:
        return error_response(400, "BAD_WAIT", f"wait must be a number of seconds from 0 to {MAX_WAIT_SECONDS}")
    try:
        record = await request.app[LEDGER_KEY].wait(request.match_info["id"], wait)
    except UnknownQuestion:
        return error_response(404, "NOT_FOUND", f"no question {request.match_info['id']}")
    if record.status != "pending":
        await request.app[LEDGER_KEY].store.durable()  # an outcome is never shown before it is on disk
    return web.json_response(question_json(record))


async def list_questions(request: web.Request) -> web.Response:
    status = request.query.get("status")
    if status not in (None, "pending", "answered", "cancelled", "expired", "failed"):
        return error_response(400, "BAD_STATUS", "status must be pending, answered, cancelled, expired or failed")
    records = await request.app[LEDGER_KEY].store.list_questions(status=status, limit=200)  # type: ignore[arg-type]
    return web.json_response({"questions": [question_json(record) for record in records]})


async def cancel_question(request: web.Request) -> web.Response:
    question_id = request.match_info["id"]
    try:
        resolution = await request.app[REMOTE_KEY].cancel(question_id, by="api")
    except UnknownQuestion:
        return error_response(404, "NOT_FOUND", f"no question {question_id}")
    if not resolution.won:
        record = resolution.record
        return error_response(409, "ALREADY_RESOLVED", f"question {question_id} is already {record.status}")
    await request.app[LEDGER_KEY].store.durable()
    return web.json_response(question_json(resolution.record))


OPENAPI_KEY = web.AppKey("openapi", bytes)


async def openapi(request: web.Request) -> web.Response:
    return web.Response(body=request.app[OPENAPI_KEY], content_type="application/json")


def add_api_routes(app: web.Application, ledger: Ledger, remote: RemoteQuestions, *, token: bool = False) -> None:
    """The API's routes; `token`: the server asks for a bearer token, as its OpenAPI document then says."""
    app[OPENAPI_KEY] = json.dumps(openapi_document(token=token)).encode()
    app[LEDGER_KEY] = ledger
    app[REMOTE_KEY] = remote
    app[NOTES_KEY] = StatusNotes(ledger)
    app.router.add_post("/v1/questions", ask)
    app.router.add_post("/v1/notes", post_note)
    app.router.add_get("/v1/questions", list_questions)
    app.router.add_get("/v1/questions/{id}", get_question)
    app.router.add_delete("/v1/questions/{id}", cancel_question)
    app.router.add_get("/openapi.json", openapi)
    app.router.add_get("/healthz", healthz)


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"ok": True, "pending": await request.app[LEDGER_KEY].store.count_questions("pending")})
