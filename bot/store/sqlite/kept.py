"""Values made once and kept, and the browsers' Web Push subscriptions, in the SQLite file: the statements the
store's calls are made of."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from typing import Any

from bot.store.records import PushSubscription, utc_now
from bot.store.sqlite.times import time_text

_COLUMNS = "endpoint, person, p256dh, auth, created_at"


def keep_value(db: sqlite3.Connection, name: str, candidate: str) -> str:
    """The value kept under `name`, storing `candidate` first when there is none: the first writer wins."""
    db.execute(
        "INSERT INTO kept_values (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
        (name, candidate, time_text(utc_now())),
    )
    return str(db.execute("SELECT value FROM kept_values WHERE name = ?", (name,)).fetchone()[0])


def save_subscription(db: sqlite3.Connection, subscription: PushSubscription) -> None:
    """Insert, or replace the keys and owner of the device's row (a browser subscribing again)."""
    db.execute(
        f"INSERT INTO push_subscriptions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?) ON CONFLICT (endpoint) DO UPDATE SET "
        "person = excluded.person, p256dh = excluded.p256dh, auth = excluded.auth, created_at = excluded.created_at",
        (
            subscription.endpoint,
            subscription.person,
            subscription.p256dh,
            subscription.auth,
            time_text(subscription.created_at),
        ),
    )


def delete_subscription(db: sqlite3.Connection, endpoint: str, person: str | None) -> bool:
    if person is None:
        cursor = db.execute("DELETE FROM push_subscriptions WHERE endpoint = ?", (endpoint,))
    else:
        cursor = db.execute("DELETE FROM push_subscriptions WHERE endpoint = ? AND person = ?", (endpoint, person))
    return cursor.rowcount == 1


def select_subscriptions(db: sqlite3.Connection, persons: Collection[str] | None) -> list[PushSubscription]:
    """Every subscription, or those of `persons`, oldest first."""
    rows = db.execute(f"SELECT {_COLUMNS} FROM push_subscriptions ORDER BY created_at, endpoint").fetchall()
    wanted = None if persons is None else set(persons)
    return [_subscription(row) for row in rows if wanted is None or row[1] in wanted]


def _subscription(row: tuple[Any, ...]) -> PushSubscription:
    endpoint, person, p256dh, auth, created_at = row
    return PushSubscription(endpoint=endpoint, person=person, p256dh=p256dh, auth=auth, created_at=created_at)
