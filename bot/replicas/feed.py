"""Hearing what other replicas change: the ledger's view of questions it does not hold, and of ends it did not make.

Several `handraise serve` replicas share one PostgreSQL database; each holds only the questions it owns, yet an agent
may long-poll any replica and a person may answer through any. The feed tells this replica's ledger what changed
(`Ledger.refresh`), so its long polls, its waterfalls and its web inbox follow. SQLite has one process: no feed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from anyio.abc import TaskStatus


@dataclass(frozen=True)
class FeedTiming:
    """How the feed re-checks (small in tests)."""

    catch_up_every: float = 3.0
    """Seconds between catch-up reads, which find changes whose notification was lost."""
    overlap: float = 5.0
    """Seconds each catch-up reaches back before the last one: transactions commit in another order than they
    stamped `changed_at`, within about the time one takes."""
    retry_min: float = 0.2
    retry_max: float = 5.0
    """The backoff between attempts to reconnect while the database is away."""


class ChangeFeed(Protocol):
    async def run(self, *, task_status: TaskStatus[None]) -> None:
        """Follow changes until cancelled; reports started once it listens (or has tried to)."""
        ...


class NoFeed:
    """One process writes the store (SQLite): every change is made, and announced, by this ledger."""

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        task_status.started()
