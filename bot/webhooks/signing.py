"""What a webhook receiver gets: the body, exactly `{"id", "event", "question"}`, and the headers that sign it.

The signature is `sha256=` and the hex HMAC-SHA256, keyed by the secret's UTF-8 bytes, over `<timestamp>.<raw body>`:
a receiver checks it over the bytes it received (never over JSON it parsed and wrote again) and refuses an old
timestamp, so a captured request cannot be replayed later. docs/operating.md shows a ten-line verifier.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

DELIVERY_HEADER = "X-Handraise-Delivery"
TIMESTAMP_HEADER = "X-Handraise-Timestamp"
SIGNATURE_HEADER = "X-Handraise-Signature"


def delivery_body(delivery_id: str, event: str, question: dict[str, Any]) -> bytes:
    """The body of every attempt of a delivery: the same bytes each time, for the same stored record."""
    body = {"id": delivery_id, "event": event, "question": question}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """`sha256=<hex>`: HMAC-SHA256 over `<timestamp>.<body>`, keyed by the secret's UTF-8 bytes."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def signed_headers(secret: str, delivery_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        DELIVERY_HEADER: delivery_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, timestamp, body),
    }


def verify_signature(secret: str, timestamp: str, body: bytes, header: str) -> bool:
    """What a receiver does (and the tests do): recompute and compare in constant time."""
    return hmac.compare_digest(signature(secret, int(timestamp), body), header) if timestamp.isdigit() else False
