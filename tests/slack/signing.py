"""Requests signed the way Slack signs them, for bolt's verification to accept (or refuse)."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

SECRET = "test-signing-secret-8f14e45fceea167a"


def interactive_body(payload: dict[str, Any]) -> str:
    """Interactivity payloads are form-encoded: `payload=<json>`."""
    return urlencode({"payload": json.dumps(payload)})


def event_body(payload: dict[str, Any]) -> str:
    return json.dumps(payload)


def signed_headers(body: str, *, secret: str = SECRET, timestamp: int | None = None) -> dict[str, str]:
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    assert signature is not None
    content_type = "application/json" if body.startswith("{") else "application/x-www-form-urlencoded"
    return {"x-slack-signature": signature, "x-slack-request-timestamp": stamp, "content-type": content_type}


def bolt_request(body: str, *, headers: dict[str, str] | None = None, **signing: Any) -> AsyncBoltRequest:
    """A signed request; `headers` adds others (Slack's `X-Slack-Retry-Num` on a re-delivery)."""
    signed = signed_headers(body, **signing) | {key.lower(): value for key, value in (headers or {}).items()}
    return AsyncBoltRequest(body=body, headers={key: [value] for key, value in signed.items()})  # pyright: ignore
