"""The metric families one `serve` exposes at `/metrics`, each declared before it has a sample.

Every program has a registry of its own (never prometheus_client's global one), so that several programs in one
process (tests, harnesses) count apart. No label ever holds a question id or another unbounded value: a channel label
is one of the configured channels, `api` or `bot`, else `other`.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.exposition import generate_latest

from bot.store.records import QuestionRecord

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The Prometheus text format that `generate_latest` writes (the version every Prometheus server scrapes)."""
OUTCOMES = ("answered", "cancelled", "expired", "failed")
WEBHOOK_RESULTS = ("ok", "retry", "failed")
OTHER_ENDS = ("api", "bot")
"""Who ends a question besides the channels: the API (an agent cancelling) and the program itself."""
OTHER = "other"
ANSWER_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400)
"""Seconds from ask to answer: people answer in seconds to a day."""
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

# No `_created` series beside each counter and histogram: Prometheus ignores them in the 0.0.4 text format, and
# they would double what every scrape reads. (prometheus_client's switch is process-wide; set before any family.)
disable_created_metrics()


class Metrics:
    """The program's counters, gauges and histograms; a `bot.questions.observer.QuestionObserver` for the ledger."""

    def __init__(self, channels: Iterable[str]) -> None:
        """`channels` are the configured channels' names: the only values (with `api`, `bot`) a channel label takes."""
        self.registry = CollectorRegistry(auto_describe=True)
        self._channels = frozenset(channels)
        registry = self.registry
        self._asked = Counter(
            "handraise_questions_asked", "Questions asked (once each, whichever channels show it).", registry=registry
        )
        self._resolved = Counter(
            "handraise_questions_resolved",
            "Questions ended, by outcome and by the channel (or api, bot) that ended them.",
            ["outcome", "channel"],
            registry=registry,
        )
        self._pending = Gauge(
            "handraise_questions_pending",
            "Questions waiting for a person in the store, read when scraped (as /healthz's pending).",
            registry=registry,
        )
        self._waiting = Gauge(
            "handraise_agents_waiting",
            "Agents' long polls waiting in this process, read when scraped.",
            registry=registry,
        )
        self._answer_seconds = Histogram(
            "handraise_answer_seconds",
            "Seconds from ask to answer, answered questions only.",
            buckets=ANSWER_BUCKETS,
            registry=registry,
        )
        self._commit_seconds = Histogram(
            "handraise_store_commit_seconds",
            "Seconds the store took to commit a new question (write=ask) or its end (write=resolve).",
            ["write"],
            buckets=COMMIT_BUCKETS,
            registry=registry,
        )
        self._send_errors = Counter(
            "handraise_channel_send_errors",
            "Questions, reminders, outcomes or notes a channel could not show.",
            ["channel"],
            registry=registry,
        )
        self._webhooks = Counter(
            "handraise_webhook_deliveries",
            "Webhook delivery attempts: ok (2xx), retry (failed, tried again), failed (given up).",
            ["result"],
            registry=registry,
        )
        # Every bounded series starts at 0, so rate() and increase() see the first event.
        for channel in sorted(self._channels):
            self._send_errors.labels(channel)
            for outcome in OUTCOMES:
                self._resolved.labels(outcome, channel)
        for result in WEBHOOK_RESULTS:
            self._webhooks.labels(result)
        # The children of the series an end counts, looked up once: `labels()` costs microseconds on every answer.
        self._ends = {
            (outcome, via): self._resolved.labels(outcome, via)
            for outcome in OUTCOMES
            for via in (*sorted(self._channels), *OTHER_ENDS)
        }
        self._ask_commits = self._commit_seconds.labels("ask")
        self._resolve_commits = self._commit_seconds.labels("resolve")

    def channel_label(self, via: str | None) -> str:
        """A channel label that stays bounded whatever a record says."""
        if via is not None and (via in self._channels or via in OTHER_ENDS):
            return via
        return OTHER

    # -- bot.questions.observer.QuestionObserver ------------------------------------------------------------------

    def asked(self, record: QuestionRecord, write_seconds: float) -> None:
        self._asked.inc()
        self._ask_commits.observe(write_seconds)

    def resolved(self, record: QuestionRecord, write_seconds: float) -> None:
        self._resolve_commits.observe(write_seconds)
        series = self._ends.get((record.status, record.answered_via))  # type: ignore[arg-type]
        if series is None:  # an end by something unknown, or a status this family does not name
            series = self._resolved.labels(record.status if record.status in OUTCOMES else OTHER, OTHER)
        series.inc()
        if record.status == "answered" and record.resolved_at is not None:
            self._answer_seconds.observe(max(0.0, (record.resolved_at - record.created_at).total_seconds()))

    def send_failed(self, channel: str) -> None:
        self._send_errors.labels(self.channel_label(channel)).inc()

    # -- for the webhook sender ----------------------------------------------------------------------------------

    def webhook_delivery(self, result: str) -> None:
        """Count one webhook delivery attempt: `ok` for a 2xx, `retry` for a failed attempt that will be tried again,
        `failed` for a delivery given up. Raises ValueError for any other result (a label must stay bounded)."""
        if result not in WEBHOOK_RESULTS:
            raise ValueError(f"webhook result {result!r} is not one of {', '.join(WEBHOOK_RESULTS)}")
        self._webhooks.labels(result).inc()

    # -- the scrape -----------------------------------------------------------------------------------------------

    def exposition(self, *, pending: int, waiting: int) -> bytes:
        """The text format of every family, with the gauges read now: `pending` from the store, `waiting` here."""
        self._pending.set(pending)
        self._waiting.set(waiting)
        return generate_latest(self.registry)
