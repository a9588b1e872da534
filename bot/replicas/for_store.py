"""The one place that picks a store's replica and change feed: PostgreSQL coordinates several `serve` processes,
SQLite has one process and needs neither.

The PostgreSQL pieces are imported only for a PostgreSQL store: psycopg takes a fifth of a second to import, and a
store can only be a `PostgresStore` once that module is loaded.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, cast

from bot.questions.ledger import Ledger
from bot.replicas.feed import ChangeFeed, FeedTiming, NoFeed
from bot.replicas.replica import Replica, SingleProcess
from bot.store.interface import AsyncStore

if TYPE_CHECKING:
    from bot.store.postgres.store import PostgresStore

_POSTGRES_STORE = "bot.store.postgres.store"


def _on_postgres(store: AsyncStore) -> PostgresStore | None:
    module = sys.modules.get(_POSTGRES_STORE)
    return cast("PostgresStore", store) if module is not None and isinstance(store, module.PostgresStore) else None


def replica_for(store: AsyncStore, lease_seconds: float) -> Replica:
    """This process's part: one of several replicas on PostgreSQL, the only process on SQLite."""
    if postgres := _on_postgres(store):
        from bot.replicas.postgres import PostgresReplica

        return PostgresReplica(postgres, lease_seconds)
    return SingleProcess(store)


def change_feed(store: AsyncStore, ledger: Ledger, timing: FeedTiming | None = None) -> ChangeFeed:
    """The feed for `store`: LISTEN/NOTIFY with catch-up on PostgreSQL, none on SQLite."""
    if postgres := _on_postgres(store):
        from bot.replicas.postgres_feed import PostgresChangeFeed

        return PostgresChangeFeed(postgres, ledger, timing or FeedTiming())
    return NoFeed()
