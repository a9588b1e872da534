"""The PostgreSQL store's webhook queue (`bot.store.webhook_queue` says how a delivery is queued, claimed and
finished): the CTE that queues deliveries inside the grouped statements of asks and resolutions, and the claim that
several replicas can run at once (`FOR UPDATE SKIP LOCKED`: each due delivery goes to one of them). Times are the
database's clock, the one clock every replica shares."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, LiteralString

from psycopg import AsyncConnection

from bot.store.postgres.schema import keep, restore
from bot.store.webhook_queue import WebhookDelivery, WebhookOutcome

_ID: LiteralString = (
    # `delivery_id`'s: the first 32 hex characters of SHA-256 over the netstrings of URL, question id and event.
    "substr(encode(sha256(convert_to(handraise_chain_field(h.url) || handraise_chain_field(g.id) "
    "|| handraise_chain_field(h.event), 'UTF8')), 'hex'), 1, 32)"
)

_QUEUED: LiteralString = (
    "), hooked AS (\n"
    "    INSERT INTO webhook_deliveries (id, webhook, question_id, event, record_json, created_at, due_at)\n"
    f"    SELECT {_ID}, h.url, g.id, h.event, g.record_json, g.at, g.at\n"
    "    FROM given g JOIN written USING (id) JOIN unnest(%b::text[], %b::text[]) AS h (url, event) ON h.event = {}\n"
    "    ON CONFLICT (id) DO NOTHING\n"
)
_BEFORE_LOCK: LiteralString = "), locked AS MATERIALIZED ("


def with_webhooks(statement: LiteralString, event: LiteralString) -> LiteralString:
    """A grouped statement (`bot.store.postgres.groups`) that also queues a delivery per (written row, webhook whose
    event is `event`, a column of `given`), in the same statement and so the same commit. Its two extra parameters,
    the webhooks' URLs and events as arrays, come right before the audit lock's."""
    assert statement.count(_BEFORE_LOCK) == 1
    head, _, tail = statement.partition(_BEFORE_LOCK)
    queued: LiteralString = _QUEUED.replace("{}", event)
    return head + queued + _BEFORE_LOCK + tail


QUEUE_ONE: LiteralString = (
    "INSERT INTO webhook_deliveries (id, webhook, question_id, event, record_json, created_at, due_at) "
    f"SELECT {_ID}, h.url, g.id, h.event, g.record_json, g.at, g.at "
    "FROM (SELECT %s::text AS id, %s::text AS record_json, %s::timestamptz AS at) g "
    "CROSS JOIN unnest(%s::text[], %s::text[]) AS h (url, event) ON CONFLICT (id) DO NOTHING"
)
"""Queue a question's deliveries inside a transaction of the store's own (a resolution that learns a rule)."""


async def queue_one(db: Any, urls: Sequence[str], question_id: str, event: str, record_json: str, at: Any) -> None:
    await db.execute(QUEUE_ONE, (keep(question_id), record_json, at, list(urls), [event] * len(urls)))


async def claim(
    db: AsyncConnection[Any], urls: Sequence[str], lease_seconds: float, limit: int
) -> list[WebhookDelivery]:
    cursor = await db.execute(
        "WITH due AS (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND due_at <= clock_timestamp() "
        "AND webhook = ANY(%s) ORDER BY due_at LIMIT %s FOR UPDATE SKIP LOCKED) "
        "UPDATE webhook_deliveries w SET attempts = w.attempts + 1, "
        "due_at = clock_timestamp() + make_interval(secs => %s) FROM due WHERE w.id = due.id "
        "RETURNING w.id, w.webhook, w.question_id, w.event, w.record_json, w.created_at, w.attempts",
        (list(urls), limit, lease_seconds),
    )
    return [
        WebhookDelivery(id, webhook, restore(question_id), event, record, created, attempts)
        for id, webhook, question_id, event, record, created, attempts in await cursor.fetchall()
    ]


async def finish(
    db: AsyncConnection[Any], id: str, attempt: int, outcome: WebhookOutcome, retry_in: float | None, error: str | None
) -> bool:
    cursor = await db.execute(
        "UPDATE webhook_deliveries SET state = %s, last_error = %s, "
        "due_at = coalesce(clock_timestamp() + make_interval(secs => %s::float8), due_at) "
        "WHERE id = %s AND attempts = %s AND state = 'pending'",
        ("pending" if outcome == "retry" else outcome, error, retry_in, id, attempt),
    )
    return cursor.rowcount == 1
