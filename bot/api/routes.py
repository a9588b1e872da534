"""The HTTP API for agents in other processes: ask, long-poll, cancel. Errors carry the seam's codes."""

from __future__ import annotations

import hmac
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, ValidationError

from bot.api.notes import StatusNotes
from bot.api.permission_body import RULE_SCHEMA, PermissionBody, permissions_path
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
from bot.store.records import AgentRef, QuestionRecord
from core import AskUserQuestionItem, UserQuestionError

MAX_WAIT_SECONDS = 300

LEDGER_KEY = web.AppKey("ledger", Ledger)
REMOTE_KEY = web.AppKey("remote", RemoteQuestions)
NOTES_KEY = web.AppKey("notes", StatusNotes)


class AskBody(BaseModel):
    """`POST /v1/questions`: the questions and, optionally, who asks."""

    model_config = ConfigDict(extra="forbid")

    questions: list[AskUserQuestionItem]
    agent: AgentRef | None = None


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
        body = AskBody.model_validate(parse_ask_body(await read_body(request, MAX_BODY_BYTES)))
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
        note = StatusNote.model_validate(parse_note_body(await read_body(request, MAX_BODY_BYTES)))
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


async def openapi(request: web.Request) -> web.Response:
    return web.json_response(openapi_document())


def openapi_document() -> dict[str, Any]:
    """The API's OpenAPI 3.1 description, with schemas taken from the pydantic models that validate requests."""
    ask_schema = AskBody.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
    components = ask_schema.pop("$defs", {})
    components["AskBody"] = ask_schema
    permission_schema = PermissionBody.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
    components |= permission_schema.pop("$defs", {})
    components["PermissionBody"] = permission_schema
    components["Rule"] = RULE_SCHEMA
    note_schema = StatusNote.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
    components |= note_schema.pop("$defs", {})
    components["NoteBody"] = note_schema
    error = {"$ref": "#/components/schemas/Error"}
    components["Error"] = {
        "type": "object",
        "properties": {
            "error": {
                "type": "object",
                "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                "required": ["code", "message"],
            }
        },
        "required": ["error"],
    }
    components["Question"] = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "status": {"enum": ["pending", "answered", "cancelled", "expired", "failed"]},
            "answer": {"type": "object"},
            "error": {"type": "object"},
            "resolvedBy": {"type": ["string", "null"], "description": "who; everyone who approved, comma-separated"},
            "approvedBy": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["id", "status"],
    }

    def reply(description: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {"description": description, "content": {"application/json": {"schema": schema}}}

    question = {"$ref": "#/components/schemas/Question"}
    id_param = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "handraise", "version": "1"},
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/questions": {
                "post": {
                    "summary": "Ask a human; returns at once with the question's id",
                    "requestBody": {
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AskBody"}}}
                    },
                    "responses": {
                        "202": reply("Asked", {"type": "object", "properties": {"id": {}, "status": {}}}),
                        "400": reply("Not JSON, or nested too deeply (BAD_JSON)", error),
                        "401": reply("Missing or wrong token", error),
                        "403": reply("Sent by another web site (CROSS_SITE)", error),
                        "413": reply("Body over 1 MiB (TOO_LARGE)", error),
                        "415": reply("Content-Type is not application/json", error),
                        "422": reply(
                            "EMPTY_QUESTIONS, BAD_INTENT, NO_PROVIDER or BAD_REQUEST (names the field)", error
                        ),
                        "503": reply(
                            "STORE_UNAVAILABLE (the store cannot write) or STOPPING (this process is stopping); "
                            "nothing was asked",
                            error,
                        ),
                    },
                },
                "get": {"summary": "Recent questions", "responses": {"200": reply("Questions", {"type": "object"})}},
            },
            "/v1/notes": {
                "post": {
                    "summary": "A status note (finished, waiting) shown where the agent's questions go; nothing to "
                    "answer",
                    "requestBody": {
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NoteBody"}}}
                    },
                    "responses": {
                        "202": reply(
                            "Posted: the channels that showed it; `throttled` when the same note came within 10 s",
                            {"type": "object", "properties": {"delivered": {}, "throttled": {}}},
                        ),
                        "400": reply("Not JSON (BAD_JSON)", error),
                        "413": reply("Body over 1 MiB (TOO_LARGE)", error),
                        "422": reply("BAD_REQUEST (names the field)", error),
                    },
                }
            },
            "/v1/questions/{id}": {
                "parameters": [id_param],
                "get": {
                    "summary": "The question's status; with ?wait=SECONDS, waits until it resolves",
                    "parameters": [{"name": "wait", "in": "query", "schema": {"type": "number", "maximum": 300}}],
                    "responses": {
                        "200": reply("Status", question),
                        "404": reply("Unknown id", error),
                        "503": reply("Too many agents waiting (TOO_MANY_WAITING); poll again after Retry-After", error),
                    },
                },
                "delete": {
                    "summary": "Cancel; the channels retract the question",
                    "responses": {
                        "200": reply("Cancelled", question),
                        "404": reply("Unknown id", error),
                        "409": reply("Already resolved", error),
                    },
                },
            },
            "/v1/permissions": permissions_path(reply, error),
        },
    }


def add_api_routes(app: web.Application, ledger: Ledger, remote: RemoteQuestions) -> None:
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
