"""`GET /metrics`: the program's Prometheus metrics, guarded as /v1 is (the API token, when there is one)."""

from __future__ import annotations

from aiohttp import web

from bot.metrics.families import CONTENT_TYPE, Metrics
from bot.questions.ledger import Ledger

METRICS_PATH = "/metrics"
METRICS_KEY = web.AppKey("metrics", Metrics)
SCRAPED_LEDGER_KEY = web.AppKey("scraped_ledger", Ledger)


async def scrape(request: web.Request) -> web.Response:
    """Every family, with the pending count read from the store now (the same count /healthz gives).

    A store that cannot be read raises StoreUnavailable, which the guards answer with 503.
    """
    ledger = request.app[SCRAPED_LEDGER_KEY]
    pending = await ledger.store.count_questions("pending")
    body = request.app[METRICS_KEY].exposition(pending=pending, waiting=ledger.waiting)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


def add_metrics_route(app: web.Application, metrics: Metrics, ledger: Ledger) -> None:
    app[METRICS_KEY] = metrics
    app[SCRAPED_LEDGER_KEY] = ledger
    app.router.add_get(METRICS_PATH, scrape)
