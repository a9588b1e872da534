"""A small blocking client of the HTTP API, for `handraise ask`, the Claude Code hook and the MCP stdio server.

Standard library only: these start once per question, and importing pydantic or aiohttp would double their start-up.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from bot.errors import BotErrorCode, HandraiseError

POLL_SECONDS = 30
"""The longest single long-poll; shorter than any proxy's idle timeout."""
UNREACHABLE_PATIENCE = 300.0
"""How long a waiting client keeps re-polling a server that went away (a restart) before giving up."""
UNREACHABLE_RETRY_MAX = 1.0
"""The longest pause between re-polls of a server that went away: a restart takes a second or two, and the agent
should go on within a second of it; a refused connection costs the server nothing meanwhile."""


class Unreachable(HandraiseError):
    """The server could not be reached (refused, reset, timed out)."""

    code = BotErrorCode.UNREACHABLE


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]
    retry_after: float | None = None
    """Seconds from a `Retry-After` header (the server's 503 when too many agents wait), when there is one."""


class ApiClient:
    def __init__(
        self, base_url: str, token: str | None = None, *, timeout: float = 10, connect_timeout: float | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        # Seconds for the connection alone (default: `timeout`): a hook must give up on a dead server fast.
        self.connect_timeout = connect_timeout

    def call(self, method: str, path: str, body: object = None, *, wait: float = 0) -> Reply:
        """One request; returns status and JSON body (HTTP errors included). Raises Unreachable."""
        # http.client rather than urllib.request: the same requests, at a third of the import time.
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise Unreachable(f"cannot reach handraise at {self.base_url}: not an http:// or https:// URL")
        connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            connection = connection_type(parts.hostname, parts.port, timeout=self.timeout + wait)
        except ValueError as error:  # a port that is not a number
            raise Unreachable(f"cannot reach handraise at {self.base_url}: {error}") from None
        try:
            if self.connect_timeout is not None:
                connection.timeout = self.connect_timeout
                connection.connect()
                if connection.sock is not None:
                    connection.sock.settimeout(self.timeout + wait)
            connection.request(method, parts.path.rstrip("/") + path, body=data, headers=headers)
            response = connection.getresponse()
            return Reply(response.status, _json(response.read()), _seconds(response.getheader("Retry-After")))
        except (OSError, http.client.HTTPException) as error:
            raise Unreachable(f"cannot reach handraise at {self.base_url}: {_reason(error)}") from error
        finally:
            connection.close()

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
                pause = min(pause * 2, UNREACHABLE_RETRY_MAX)
                continue
            unreachable_since, pause = None, 0.2
            if reply.status == 503 and reply.retry_after is not None:  # too many agents waiting: come back later
                time.sleep(reply.retry_after if remaining is None else min(reply.retry_after, max(remaining, 0.0)))
                continue
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


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: not something this server sends


def _reason(error: BaseException) -> str:
    return str(error) or type(error).__name__


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
