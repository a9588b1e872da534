"""A small blocking client of the HTTP API, for `handraise ask`, the Claude Code hook and the MCP stdio server.

Standard library only: these start once per question, and importing pydantic or aiohttp would double their start-up.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

POLL_SECONDS = 30
"""The longest single long-poll; shorter than any proxy's idle timeout."""
UNREACHABLE_PATIENCE = 300.0
"""How long a waiting client keeps re-polling a server that went away (a restart) before giving up."""


class Unreachable(Exception):
    """The server could not be reached (refused, reset, timed out)."""


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]


class ApiClient:
    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 10) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def call(self, method: str, path: str, body: object = None, *, wait: float = 0) -> Reply:
        """One request; returns status and JSON body (HTTP errors included). Raises Unreachable."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout + wait) as response:
                return Reply(response.status, _json(response.read()))
        except urllib.error.HTTPError as error:
            return Reply(error.code, _json(error.read()))
        except (urllib.error.URLError, OSError) as error:
            raise Unreachable(f"cannot reach handraise at {self.base_url}: {_reason(error)}") from error

    def wait_resolved(
        self, question_id: str, deadline: float | None, *, patience: float = UNREACHABLE_PATIENCE
    ) -> Reply | None:
        """Long-poll until the question leaves `pending`; returns that reply (or the server's refusal, not 200).

        Returns None when the `time.monotonic()` deadline passes first (the question is still open: the caller
        decides whether to cancel it). Rides out a server restart, re-polling with backoff; raises Unreachable once
        the server has been away longer than `patience`.
        """
        unreachable_since: float | None = None
        pause = 0.2
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            wait = POLL_SECONDS if remaining is None else max(0.0, min(POLL_SECONDS, remaining))
            try:
                reply = self.call("GET", f"/v1/questions/{question_id}?wait={wait:.1f}", wait=wait)
            except Unreachable:
                now = time.monotonic()
                unreachable_since = unreachable_since or now
                if now - unreachable_since > patience:
                    raise
                time.sleep(pause if remaining is None else min(pause, max(remaining, 0.0)))
                pause = min(pause * 2, 5.0)
                continue
            unreachable_since, pause = None, 0.2
            if reply.status != 200 or reply.body.get("status") != "pending":
                return reply

    def cancel(self, question_id: str) -> bool:
        """DELETE the question so every channel retracts it; False when the server could not be reached."""
        try:
            self.call("DELETE", f"/v1/questions/{question_id}")
        except Unreachable:
            return False
        return True


def _json(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {"error": {"code": "BAD_RESPONSE", "message": "the server did not answer with JSON"}}
    return value if isinstance(value, dict) else {"value": value}


def _reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    return str(reason if reason is not None else error)


def compact_answer(answer: object) -> str:
    """The wire answer as the seam tool prints it (`core.tool.format_answer`): no spaces, `custom` only when given."""
    items: list[dict[str, Any]] = []
    raw_items = answer.get("answers") if isinstance(answer, dict) else None
    for raw in raw_items if isinstance(raw_items, list) else []:
        if not isinstance(raw, dict):
            continue
        entry: dict[str, Any] = {"id": raw.get("id"), "selected": list(raw.get("selected") or [])}
        if raw.get("custom") is not None:
            entry["custom"] = raw["custom"]
        items.append(entry)
    return json.dumps({"answers": items}, separators=(",", ":"), ensure_ascii=False)
