"""Webhook deliveries as the store keeps them: queued in the same transaction as the event they announce (an ask, a
resolution), so that a crash between the two loses nothing, then claimed, attempted and finished by `bot.webhooks`.

A claim is a lease: it moves the row's `due_at` past the attempt (`lease_seconds`), so a sender killed mid-attempt
leaves a row that falls due again by itself, and another sender (another replica) never claims a leased row. A
finish names the attempt it ends, so a sender whose lease ran out cannot overwrite a newer attempt's outcome.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime
from typing import Literal, NamedTuple

WebhookOutcome = Literal["delivered", "retry", "failed"]


class WebhookTarget(NamedTuple):
    """A configured webhook as the store sees it: its URL (how its deliveries are known) and the events it wants."""

    url: str
    events: frozenset[str]


class WebhookDelivery(NamedTuple):
    """A claimed delivery: the question as it stood at the event (its stored record JSON), and which attempt this
    is (1 for the first)."""

    id: str
    webhook: str
    question_id: str
    event: str
    record_json: str
    created_at: datetime
    attempt: int


def delivery_id(url: str, question_id: str, event: str) -> str:
    """The delivery's id, the same for every attempt: derived from what makes it one delivery (a webhook, a question,
    an event), so that queuing it twice is once. 32 hex characters; the PostgreSQL store computes the same."""
    fields = b"".join(b"%d:%s," % (len(data), data) for data in (v.encode() for v in (url, question_id, event)))
    return hashlib.sha256(fields).hexdigest()[:32]


def queued_for(targets: Iterable[WebhookTarget], event: str) -> list[str]:
    """The URLs of the webhooks that want `event`."""
    return [target.url for target in targets if event in target.events]
