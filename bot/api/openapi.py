"""`GET /openapi.json`: the API as this very server answers it, checked by Schemathesis in the tests.

Request schemas come from the pydantic models that validate bodies, with the transport's limits
(`bot.questions.validation`) written in: lengths, item counts, one line or several, visible text. What JSON Schema
cannot say (question ids unique, option labels unique ignoring case and spaces, `intent.approve` naming an option)
is said in the descriptions, as are the rules of long texts (see `_string`). Every status the server sends is
listed with its body, and the security is the server's own: a bearer token on /v1 and /metrics when the server has
one (always beyond loopback), none otherwise. /openapi.json itself is left out of the document, as the document.
"""

from __future__ import annotations

from typing import Any

from bot.api.ask_body import AskBody
from bot.api.permission_body import DECIDED_SCHEMA, MAX_PROJECT, RULE_SCHEMA, PermissionBody
from bot.questions.status_note import StatusNote
from bot.questions.validation import (
    MAX_AGENT_LABELS,
    MAX_AGENT_TEXT,
    MAX_BODY_BYTES,
    MAX_DESCRIPTION,
    MAX_DETAIL,
    MAX_HEADER,
    MAX_ID,
    MAX_LABEL,
    MAX_NOTE_TEXT,
    MAX_OPTIONS,
    MAX_QUESTION,
    MAX_QUESTIONS,
)

MAX_WAIT_SECONDS = 300
QUESTION_STATUSES = ["pending", "answered", "cancelled", "expired", "failed"]

_LINE_CHAR = r"[^\u0000-\u001f\u007f-\u009f]"
_TEXT_CHAR = r"[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]"
_VISIBLE_LINE_CHAR = r"[^\s\u0000-\u001f\u007f-\u009f]"
LINE = f"^{_LINE_CHAR}*$"
"""One line of plain text: no control character."""
VISIBLE_LINE = f"^{_LINE_CHAR}*{_VISIBLE_LINE_CHAR}{_LINE_CHAR}*$"
"""One line with something besides spaces."""
TEXT = f"^{_TEXT_CHAR}*$"
"""Text: tabs and line breaks, no other control character."""
VISIBLE_TEXT = f"^{_TEXT_CHAR}*{_VISIBLE_LINE_CHAR}{_TEXT_CHAR}*$"


TEXT_RULE = "Tabs and line breaks allowed, no other control character"


def _string(pattern: str, max_length: int) -> dict[str, Any]:
    """A string field: a line carries its rule as a `pattern`; a text (up to megabytes) says it in words, since a
    pattern on a text that long makes request generators build boundary strings character by character."""
    if pattern in (LINE, VISIBLE_LINE):
        return {"type": "string", "pattern": pattern, "maxLength": max_length}
    if pattern == VISIBLE_TEXT:
        return {"type": "string", "minLength": 1, "maxLength": max_length, "description": TEXT_RULE + "; not blank"}
    return {"type": "string", "maxLength": max_length, "description": TEXT_RULE}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}], "default": None}


def _refine(schema: dict[str, Any], fields: dict[str, dict[str, Any]], **extra: Any) -> None:
    """Replace `fields` of the object `schema` (keeping their titles) and add `extra` keywords."""
    properties = schema["properties"]
    for name, replacement in fields.items():
        properties[name] = {"title": properties[name].get("title", name)} | replacement
    schema.update(extra)


def _agent_schema(schema: dict[str, Any]) -> None:
    line = _string(LINE, MAX_AGENT_TEXT)
    _refine(
        schema,
        {
            "id": _string(VISIBLE_LINE, MAX_AGENT_TEXT),
            "name": _nullable(line),
            "labels": {
                "type": "object",
                "maxProperties": MAX_AGENT_LABELS,
                "propertyNames": _string(VISIBLE_LINE, MAX_AGENT_TEXT),
                "additionalProperties": line,
            },
        },
    )


def request_schemas() -> dict[str, Any]:
    """The request bodies' schemas, by name, with the limits the server holds them to."""
    template = "#/components/schemas/{model}"
    components: dict[str, Any] = {}
    for name, model in (("AskBody", AskBody), ("PermissionBody", PermissionBody), ("NoteBody", StatusNote)):
        schema = model.model_json_schema(ref_template=template, by_alias=True)
        components |= schema.pop("$defs", {})
        components[name] = schema
    _refine(
        components["AskBody"],
        {"questions": {"type": "array", "items": {"$ref": "#/components/schemas/AskUserQuestionItem"},
                       "minItems": 1, "maxItems": MAX_QUESTIONS,
                       "description": "each question's `id` unique among them"}},
    )  # fmt: skip
    _refine(
        components["AskUserQuestionItem"],
        {
            "id": _string(VISIBLE_LINE, MAX_ID),
            "question": _string(VISIBLE_TEXT, MAX_QUESTION),
            "header": _nullable(_string(LINE, MAX_HEADER)),
            "detail": _nullable(_string(TEXT, MAX_DETAIL)),
            "options": _nullable(
                {
                    "type": "array",
                    "items": {"$ref": "#/components/schemas/AskUserQuestionOption"},
                    "maxItems": MAX_OPTIONS,
                    "description": "labels unique, ignoring case and surrounding spaces",
                }
            ),
        },
    )
    components["AskUserQuestionItem"]["description"] += (
        " With `intent`, `detail` holds the plan (visible text) and `intent.approve` is one of the options' labels."
    )
    _refine(components["AskUserQuestionIntent"], {"approve": _string(LINE, MAX_LABEL)})
    _refine(
        components["AskUserQuestionOption"],
        {"label": _string(VISIBLE_LINE, MAX_LABEL), "description": _nullable(_string(TEXT, MAX_DESCRIPTION))},
    )
    _agent_schema(components["AgentRef"])
    _refine(components["NoteBody"], {"text": _nullable(_string(TEXT, MAX_NOTE_TEXT))})
    _refine(
        components["PermissionWire"],
        {
            "project": _string(VISIBLE_LINE, MAX_PROJECT),
            "tool": _string(VISIBLE_LINE, MAX_AGENT_TEXT),
            "request": _string(VISIBLE_TEXT, MAX_BODY_BYTES),
            "detail": _string(VISIBLE_TEXT, MAX_DETAIL),
            "server": _nullable(_string(VISIBLE_LINE, MAX_AGENT_TEXT)),
        },
    )
    components["Rule"] = RULE_SCHEMA
    return components


ERROR_SCHEMA: dict[str, Any] = {
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
QUESTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "status": {"enum": QUESTION_STATUSES},
        "createdAt": {"type": "string", "format": "date-time"},
        "questions": {"type": "array", "items": {"type": "object"}},
        "agent": {"type": "object"},
        "answer": {"type": "object", "description": "once answered: {answers: [{id, selected, text?}]}"},
        "error": {"$ref": "#/components/schemas/Error/properties/error", "description": "once ended otherwise"},
        "approvedBy": {"type": "array", "items": {"type": "string"}},
        "resolvedBy": {"type": ["string", "null"], "description": "who; everyone who approved, comma-separated"},
        "resolvedVia": {"type": ["string", "null"]},
        "resolvedAt": {"type": ["string", "null"], "format": "date-time"},
    },
    "required": ["id", "status", "createdAt", "questions"],
}
ASKED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "status": {"const": "pending"}},
    "required": ["id", "status"],
}


class _Responses:
    """The responses of one server's operations: what every guarded call may get, and each call's own."""

    def __init__(self, token: bool) -> None:
        self.token = token

    @staticmethod
    def json(description: str, schema: dict[str, Any], **headers: str) -> dict[str, Any]:
        response: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": schema}}}
        if headers:
            response["headers"] = {
                name: {"description": text, "schema": {"type": "string"}} for name, text in headers.items()
            }
        return response

    def error(self, description: str, **headers: str) -> dict[str, Any]:
        return self.json(description, {"$ref": "#/components/schemas/Error"}, **headers)

    def guarded(self, *, body: bool) -> dict[str, Any]:
        """The refusals any /v1 call may get before its handler runs (and, with a JSON body, those of the body)."""
        responses = {
            "403": self.error("Sent by another web site: a foreign Origin or Sec-Fetch-Site (CROSS_SITE)"),
            "421": self.error("A Host header that names another server (HOST_NOT_ALLOWED)"),
            "503": self.error(
                "STORE_UNAVAILABLE (the store cannot write), STOPPING (this process is stopping) or TOO_MANY_WAITING "
                "(long polls); nothing was recorded; try again after Retry-After",
                **{"Retry-After": "seconds"},
            ),
        }
        if self.token:
            responses["401"] = self.error("Missing or wrong `Authorization: Bearer <token>` (UNAUTHORIZED)")
        if body:
            responses |= {
                "400": self.error("Not JSON, or nested deeper than 16 levels (BAD_JSON)"),
                "413": self.error("Body over 1 MiB (TOO_LARGE)"),
                "415": self.error("Content-Type is not application/json (UNSUPPORTED_MEDIA_TYPE)"),
                "422": self.error("BAD_REQUEST, naming the field and what to do"),
            }
        return responses


def _json_body(schema: str) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}


def openapi_document(*, token: bool) -> dict[str, Any]:
    """The API's OpenAPI 3.1 description for a server that asks for a bearer token (`token`) or asks for none."""
    respond = _Responses(token)
    error = respond.error
    components = request_schemas() | {"Error": ERROR_SCHEMA, "Question": QUESTION_SCHEMA}
    question = {"$ref": "#/components/schemas/Question"}
    id_param = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    open_to_all: dict[str, Any] = {"security": []}
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "handraise",
            "version": "1",
            "description": "Asks agents' questions of people. "
            + (
                "This server asks every /v1 and /metrics call for `Authorization: Bearer <token>`."
                if token
                else "This server listens on loopback without a token: no call needs one."
            ),
        },
        "components": {"schemas": components},
        "paths": {
            "/v1/questions": {
                "post": {
                    "summary": "Ask a human; returns at once with the question's id",
                    "requestBody": _json_body("AskBody"),
                    "responses": {
                        "202": respond.json("Asked; durable", ASKED_SCHEMA, Location="/v1/questions/{id}"),
                        **respond.guarded(body=True),
                        "422": error("EMPTY_QUESTIONS, BAD_INTENT, NO_PROVIDER or BAD_REQUEST (names the field)"),
                    },
                },
                "get": {
                    "summary": "The 200 most recent questions, newest first",
                    "parameters": [
                        {"name": "status", "in": "query", "required": False, "schema": {"enum": QUESTION_STATUSES}}
                    ],
                    "responses": {
                        "200": respond.json(
                            "Questions",
                            {
                                "type": "object",
                                "properties": {"questions": {"type": "array", "items": question}},
                                "required": ["questions"],
                            },
                        ),
                        "400": error("`status` is none of the statuses (BAD_STATUS)"),
                        **respond.guarded(body=False),
                    },
                },
            },
            "/v1/questions/{id}": {
                "parameters": [id_param],
                "get": {
                    "summary": "The question's status; with ?wait=SECONDS, waits until it resolves",
                    "parameters": [
                        {
                            "name": "wait",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECONDS, "default": 0},
                        }
                    ],
                    "responses": {
                        "200": respond.json("Status", question),
                        "400": error(f"`wait` is not a number of seconds from 0 to {MAX_WAIT_SECONDS} (BAD_WAIT)"),
                        "404": error("No question with this id (NOT_FOUND)"),
                        **respond.guarded(body=False),
                    },
                },
                "delete": {
                    "summary": "Cancel; the channels retract the question (it stays readable, as cancelled)",
                    "responses": {
                        "200": respond.json("Cancelled", question),
                        "404": error("No question with this id (NOT_FOUND)"),
                        "409": error("Already resolved (ALREADY_RESOLVED)"),
                        **respond.guarded(body=False),
                    },
                },
            },
            "/v1/notes": {
                "post": {
                    "summary": "A status note (finished, waiting) shown where the agent's questions go; nothing to "
                    "answer",
                    "requestBody": _json_body("NoteBody"),
                    "responses": {
                        "202": respond.json(
                            "Posted: the channels that showed it; `throttled` when the same note came within 10 s",
                            {
                                "type": "object",
                                "properties": {
                                    "delivered": {"type": "array", "items": {"type": "string"}},
                                    "throttled": {"const": True},
                                },
                                "required": ["delivered"],
                            },
                        ),
                        **respond.guarded(body=True),
                    },
                }
            },
            "/v1/permissions": {
                "post": {
                    "summary": "A coding agent's permission prompt: decided by a rule at once, or asked as a question",
                    "requestBody": _json_body("PermissionBody"),
                    "responses": {
                        "200": respond.json(
                            "Decided by a rule (config or learned); audited as a `rule` line", DECIDED_SCHEMA
                        ),
                        "202": respond.json(
                            "A person decides: asked as POST /v1/questions is; long-poll GET /v1/questions/{id}",
                            ASKED_SCHEMA,
                            Location="/v1/questions/{id}",
                        ),
                        **respond.guarded(body=True),
                        "422": error("BAD_REQUEST (names the field) or NO_PROVIDER"),
                    },
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics of this process (docs/operating.md#metrics)",
                    "responses": {
                        "200": {
                            "description": "The Prometheus text format, version 0.0.4",
                            "content": {"text/plain": {"schema": {"type": "string"}}},
                        },
                        **{code: response for code, response in respond.guarded(body=False).items() if code != "403"},
                    },
                }
            },
            "/healthz": {
                "get": {
                    "summary": "Whether the store answers, and how many questions are pending",
                    **open_to_all,
                    "responses": {
                        "200": respond.json(
                            "Up",
                            {
                                "type": "object",
                                "properties": {"ok": {"const": True}, "pending": {"type": "integer", "minimum": 0}},
                                "required": ["ok", "pending"],
                            },
                        ),
                        "421": error("A Host header that names another server (HOST_NOT_ALLOWED)"),
                        "503": error("The store cannot be read (STORE_UNAVAILABLE)", **{"Retry-After": "seconds"}),
                    },
                }
            },
        },
    }
    if token:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        document["security"] = [{"bearer": []}]
    return document
