"""Values made once and kept, and the browsers' Web Push subscriptions, on PostgreSQL: the statements the store's
calls are made of. Texts are kept as the other tables keep them (`keep`: PostgreSQL text refuses NUL)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from psycopg import AsyncConnection

from bot.store.postgres.schema import keep, restore
from bot.store.records import PushSubscription, utc_now

_COLUMNS = "endpoint, person, p256dh, auth, created_at"


async def keep_value(db: AsyncConnection[Any], name: str, candidate: str) -> str:
    """The value kept under `name`, storing `candidate` first when there is none: the first replica to write wins,
    and every replica reads its value (the insert and the read are one statement, so a race cannot split them)."""
    cursor = await db.execute(
        "WITH made AS (INSERT INTO kept_values (name, value, created_at) VALUES (%(name)s, %(value)s, %(now)s) "
        "ON CONFLICT (name) DO NOTHING RETURNING value) "
        "SELECT value FROM made UNION ALL SELECT value FROM kept_values WHERE name = %(name)s LIMIT 1",
        {"name": keep(name), "value": keep(candidate), "now": utc_now()},
    )
    row = await cursor.fetchone()
    if row is None:  # a concurrent insert committed between our conflict check and our read: read it now
        cursor = await db.execute("SELECT value FROM kept_values WHERE name = %s", (keep(name),))
        row = await cursor.fetchone()
        assert row is not None
    return restore(row[0])


async def save_subscription(db: AsyncConnection[Any], subscription: PushSubscription) -> None:
    """Insert, or replace the keys and owner of the device's row (a browser subscribing again)."""
    await db.execute(
        f"INSERT INTO push_subscriptions ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s) ON CONFLICT (endpoint) DO UPDATE "
        "SET person = excluded.person, p256dh = excluded.p256dh, auth = excluded.auth, "
        "created_at = excluded.created_at",
        (
            keep(subscription.endpoint),
            keep(subscription.person),
            keep(subscription.p256dh),
            keep(subscription.auth),
            subscription.created_at,
        ),
    )


async def delete_subscription(db: AsyncConnection[Any], endpoint: str, person: str | None) -> bool:
    if person is None:
        cursor = await db.execute("DELETE FROM push_subscriptions WHERE endpoint = %s", (keep(endpoint),))
    else:
        cursor = await db.execute(
            "DELETE FROM push_subscriptions WHERE endpoint = %s AND person = %s", (keep(endpoint), keep(person))
        )
    return cursor.rowcount == 1


async def select_subscriptions(db: AsyncConnection[Any], persons: Collection[str] | None) -> list[PushSubscription]:
    """Every subscription, or those of `persons`, oldest first."""
    if persons is None:
        cursor = await db.execute(f"SELECT {_COLUMNS} FROM push_subscriptions ORDER BY created_at, endpoint")
    else:
        cursor = await db.execute(
            f"SELECT {_COLUMNS} FROM push_subscriptions WHERE person = ANY(%s) ORDER BY created_at, endpoint",
            ([keep(person) for person in persons],),
        )
    return [_subscription(row) for row in await cursor.fetchall()]


def _subscription(row: tuple[Any, ...]) -> PushSubscription:
    endpoint, person, p256dh, auth, created_at = row
    return PushSubscription(
        endpoint=restore(endpoint),
        person=restore(person),
        p256dh=restore(p256dh),
        auth=restore(auth),
        created_at=created_at,
    )
