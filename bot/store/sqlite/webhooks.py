"""The SQLite store's webhook queue (`bot.store.webhook_queue` says how a delivery is queued, claimed and finished),
inside the transactions `bot.store.sqlite.store.Store` opens."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta

from bot.store.sqlite.times import time_text
from bot.store.webhook_queue import WebhookDelivery, WebhookOutcome, delivery_id


def queue_deliveries(
    db: sqlite3.Connection, urls: Sequence[str], question_id: str, event: str, record_json: str, at: datetime
) -> None:
    """Queue one delivery per URL, due at once; one already queued (the same webhook, question and event) stays."""
    stamp = time_text(at)
    db.executemany(
        "INSERT INTO webhook_deliveries (id, webhook, question_id, event, record_json, created_at, due_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        [(delivery_id(url, question_id, event), url, question_id, event, record_json, stamp, stamp) for url in urls],
    )


def _due(urls: Sequence[str]) -> str:
    return f"state = 'pending' AND due_at <= ? AND webhook IN ({', '.join('?' * len(urls))})"


def any_due(db: sqlite3.Connection, urls: Sequence[str], now: datetime) -> bool:
    """Whether a delivery to one of `urls` is due: a read, so an idle sender takes no write lock."""
    sql = f"SELECT 1 FROM webhook_deliveries WHERE {_due(urls)} LIMIT 1"
    return db.execute(sql, (time_text(now), *urls)).fetchone() is not None


def claim_deliveries(
    db: sqlite3.Connection, urls: Sequence[str], now: datetime, lease_seconds: float, limit: int
) -> list[WebhookDelivery]:
    """Claim up to `limit` due deliveries to `urls`, oldest due first: each one's attempt is counted and it is
    leased (due again only after `lease_seconds`)."""
    rows = db.execute(
        "SELECT id, webhook, question_id, event, record_json, created_at, attempts FROM webhook_deliveries "
        f"WHERE {_due(urls)} ORDER BY due_at LIMIT ?",
        (time_text(now), *urls, limit),
    ).fetchall()
    lease_end = time_text(now + timedelta(seconds=lease_seconds))
    db.executemany(
        "UPDATE webhook_deliveries SET attempts = attempts + 1, due_at = ? WHERE id = ?",
        [(lease_end, row[0]) for row in rows],
    )
    return [
        WebhookDelivery(id, webhook, question_id, event, record, datetime.fromisoformat(created), attempts + 1)
        for id, webhook, question_id, event, record, created, attempts in rows
    ]


def finish_delivery(
    db: sqlite3.Connection, id: str, attempt: int, outcome: WebhookOutcome, due_at: datetime | None, error: str | None
) -> bool:
    """End attempt `attempt` of delivery `id`: delivered, to be retried at `due_at`, or given up. False when the
    attempt is not the delivery's latest (its lease ran out and another attempt was claimed) or it was finished."""
    state = "pending" if outcome == "retry" else outcome
    cursor = db.execute(
        "UPDATE webhook_deliveries SET state = ?, due_at = coalesce(?, due_at), last_error = ? "
        "WHERE id = ? AND attempts = ? AND state = 'pending'",
        (state, time_text(due_at) if due_at is not None else None, error, id, attempt),
    )
    return cursor.rowcount == 1
