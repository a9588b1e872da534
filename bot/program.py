"""`handraise serve`: the seam, the configured channels, the HTTP API and the web inbox in one process."""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import logging
import signal
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from aiohttp import web

from bot.api.accepting import AcceptingSite
from bot.api.capacity import LISTEN_BACKLOG, WaitingCap, raise_open_files_limit, throttle_flood_logs
from bot.api.guards import OwnHosts, request_guards
from bot.api.permissions import add_permission_routes
from bot.api.remote import RemoteQuestions
from bot.api.routes import BearerAuth, add_api_routes
from bot.api.scrape import add_metrics_route
from bot.channels.base import Channel
from bot.config import Config
from bot.errors import BotErrorCode, HandraiseError
from bot.installation import Installation, install
from bot.mcp_server.on_first_use import McpOnFirstUse
from bot.mcp_server.relay import ProgramRelay
from bot.mcp_server.timing import Timing
from bot.metrics.families import Metrics
from bot.permissions.rules import config_rules
from bot.questions.clock import Clock
from bot.questions.tasks import TaskBag
from bot.replicas.feed import FeedTiming
from bot.replicas.for_store import change_feed, replica_for
from bot.replicas.replica import LeaseLost, Replica
from bot.settings.secrets import resolve_secret
from bot.store.interface import AsyncStore
from bot.store.open import open_store
from bot.store.records import QuestionRecord
from bot.webhooks.sender import Webhook, WebhookSender, WebhookTiming
from core import AgentRegistry, Context, ErrorCode, PluginHandle, UserQuestionService

log = logging.getLogger(__name__)


class CannotListen(HandraiseError):
    """`[server] listen` cannot be bound; the message names the address and what to do."""

    code = BotErrorCode.CANNOT_LISTEN


@dataclass(frozen=True)
class Running:
    """A started program: where it listens and what it runs."""

    base_url: str
    links: dict[str, str]
    """The channels' pages by what they are, e.g. {"web inbox": "http://127.0.0.1:8765/?token=…"}."""
    resumed: int
    installation: Installation
    remote: RemoteQuestions
    ctx: Context
    waiting: WaitingCap
    replica: Replica
    metrics: Metrics
    """What `/metrics` shows; the webhook sender reports each attempt to it (`Metrics.webhook_delivery`)."""
    webhooks: WebhookSender | None = None
    """The webhook sender, when the config has `[[webhooks]]`; its attempts are counted in `metrics`."""


async def abandon_local_questions(installation: Installation, claimed: list[QuestionRecord]) -> int:
    """In-process questions among those claimed (left pending by a previous run or a dead replica) have no caller
    any more: close them, visibly. A live replica's own are never claimed, so never closed."""
    ledger = installation.ledger
    count = 0
    for record in claimed:
        if record.origin == "local" and record.status == "pending":
            await ledger.resolve(
                record.id, "cancelled", code=ErrorCode.ASK_CANCELLED, message="the asking process ended", via="bot"
            )
            count += 1
    return count


@dataclass
class _Started:
    """What `running` has started so far, for `_stop`."""

    handle: PluginHandle
    installation: Installation
    waits: TaskBag = field(default_factory=TaskBag)
    runner: web.AppRunner | None = None
    replica: Replica | None = None
    webhooks: WebhookSender | None = None
    lease_lost: list[LeaseLost] = field(default_factory=list)
    """The lease this replica lost, once it has: raised once everything here has stopped."""


@dataclass(frozen=True)
class _Endpoints:
    """The HTTP side of the program, built before anything listens."""

    app: web.Application
    remote: RemoteQuestions
    cap: WaitingCap
    mcp: McpOnFirstUse
    metrics: Metrics


@asynccontextmanager
async def running(
    config: Config,
    *,
    clock: Clock | None = None,
    channels: Sequence[Channel] | None = None,
    mcp_timing: Timing | None = None,
    store: AsyncStore | None = None,
    feed_timing: FeedTiming | None = None,
    webhook_timing: WebhookTiming | None = None,
    on_webhook_attempt: Callable[[str], None] | None = None,
) -> AsyncIterator[Running]:
    """Start everything, yield where it listens, and stop it cleanly on exit; pending questions stay stored.

    `mcp_timing` shortens /mcp's default wait and progress interval (for tests). `store` is one already open (opening
    PostgreSQL is asynchronous, so it happens before the plugins install); the caller closes it. Without it the
    SQLite store at `[store] path` is opened and closed here. `feed_timing` shortens the change feed's re-checks
    (PostgreSQL: other replicas' changes). `webhook_timing` shortens the webhook sender's polls and retries;
    `on_webhook_attempt(result)` hears every webhook attempt's result, "ok", "retry" or "failed" (for metrics).
    """
    ctx = Context()
    ctx.plugin(AgentRegistry)
    ctx.plugin(UserQuestionService)
    handle = install(ctx, config, clock=clock, channels=channels, store=store)
    installation = handle.value
    assert isinstance(installation, Installation)
    started = _Started(handle, installation)
    try:
        endpoints = _endpoints(config, ctx, installation, started.waits, mcp_timing)
        # Before anything listens: from the first ask on, the store queues the deliveries the webhooks want.
        heard = _both(endpoints.metrics.webhook_delivery, on_webhook_attempt)
        started.webhooks = webhook_sender(config, installation.store, webhook_timing, heard)
        for channel in installation.channels:
            await channel.prepare()
        started.runner = web.AppRunner(endpoints.app, handle_signals=False, access_log=None)
        await started.runner.setup()
        base_url = await _listen(started.runner, config)
        started.replica = replica = replica_for(installation.ledger.store, config.store.lease_seconds)
        await replica.start()
        for channel in installation.channels:
            channel.leadership = replica
        background = _running_in_background(started, replica, endpoints.remote, feed_timing)
        async with background as resumed, endpoints.mcp.running():
            links = installation.links(base_url)
            yield Running(
                base_url,
                links,
                resumed,
                installation,
                endpoints.remote,
                ctx,
                endpoints.cap,
                replica,
                endpoints.metrics,
                started.webhooks,
            )
        if started.lease_lost:
            raise started.lease_lost[0]
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(started)


def _both(count: Callable[[str], None], also: Callable[[str], None] | None) -> Callable[[str], None]:
    """Every webhook attempt counted in /metrics, and told to `also` when a caller listens too."""
    if also is None:
        return count

    def heard(result: str) -> None:
        count(result)
        also(result)

    return heard


def webhook_sender(
    config: Config,
    store: AsyncStore,
    timing: WebhookTiming | None,
    on_attempt: Callable[[str], None] | None = None,
) -> WebhookSender | None:
    """The sender of the config's `[[webhooks]]`, subscribed to the store; None without any. The secrets were
    checked when the config was loaded."""
    if not config.webhooks:
        return None
    hooks = [Webhook(hook.url, frozenset(hook.events), resolve_secret(hook.secret_env)) for hook in config.webhooks]
    sender = WebhookSender(store, hooks, timing or WebhookTiming.from_environment())
    if on_attempt is not None:
        sender.on_attempt = on_attempt
    return sender


def _endpoints(
    config: Config, ctx: Context, installation: Installation, waits: TaskBag, mcp_timing: Timing | None
) -> _Endpoints:
    """The API, /mcp, /metrics and every channel's pages in one aiohttp app, behind the guards every request
    passes."""
    token = resolve_secret(config.server.api_token_env) if config.server.api_token_env else None
    cap = WaitingCap.within_open_files(config.server.max_waiting)
    guards = request_guards(OwnHosts(config.server), BearerAuth(token), cap)
    app = web.Application(middlewares=[guards], client_max_size=2 * 1024 * 1024)
    remote = RemoteQuestions(ctx, installation.ledger, installation.router, waits)
    add_api_routes(app, installation.ledger, remote, token=token is not None)
    add_permission_routes(app, config_rules(config.rules))
    metrics = Metrics(channel.name for channel in installation.channels)
    installation.ledger.observer = metrics
    add_metrics_route(app, metrics, installation.ledger)
    mcp = McpOnFirstUse(lambda: ProgramRelay(remote, installation.ledger), host=config.server.host, timing=mcp_timing)
    mcp.add_routes(app)
    for channel in installation.channels:
        channel.add_routes(app)
    return _Endpoints(app, remote, cap, mcp, metrics)


async def _listen(runner: web.AppRunner, config: Config) -> str:
    """Bind `[server] listen` and return the base URL it is reached at. Raises CannotListen."""
    site = AcceptingSite(runner, config.server.host, config.server.port, backlog=LISTEN_BACKLOG)
    # Before any task starts, so a taken port is one plain error rather than a task group's traceback.
    try:
        await site.start()
    except OSError as error:
        raise CannotListen(
            f"cannot listen on {config.server.listen}: {error.strerror or error}; stop what is using it, or "
            "set another [server] listen"
        ) from None
    return _base_url(site, config)


@asynccontextmanager
async def _running_in_background(
    started: _Started, replica: Replica, remote: RemoteQuestions, feed_timing: FeedTiming | None
) -> AsyncIterator[int]:
    """Run the change feed, the replica's lease and the channels while the body runs; yields how many questions were
    resumed. A lost lease cancels all of it, body included, and is kept in `started.lease_lost`."""
    installation = started.installation

    async def take_over(claimed: list[QuestionRecord]) -> None:
        await abandon_local_questions(installation, claimed)
        remote.resume(claimed)

    async def keep_replica() -> None:
        try:
            await replica.run(take_over, installation.ledger.held_ids)
        except LeaseLost as lost:
            started.lease_lost.append(lost)  # its questions were taken: raised once everything here has stopped
            tasks.cancel_scope.cancel()

    async with anyio.create_task_group() as tasks:
        # Listening before anything is resumed or asked: nothing another replica changes from now on is missed.
        await tasks.start(change_feed(installation.store, installation.ledger, feed_timing).run)
        claimed = await replica.claim()
        log.info("replica %s on %s", replica.id, installation.ledger.store.description)
        await abandon_local_questions(installation, claimed)
        resumed = remote.resume(claimed)
        tasks.start_soon(keep_replica)
        tasks.start_soon(installation.run)
        if started.webhooks is not None:
            tasks.start_soon(started.webhooks.run)
        try:
            yield resumed
        finally:
            # Stopping is not the agents' cancelling: their questions stay pending for the next run.
            installation.ledger.close()
            tasks.cancel_scope.cancel()


async def _stop(started: _Started) -> None:
    """Stop whatever start-up got to, even when it failed half-way; pending questions stay in the store."""
    started.installation.ledger.close()
    await started.waits.close()
    if started.replica is not None and not started.lease_lost:
        await started.replica.close()  # only now: this replica's waterfalls have stopped
    await started.installation.close()
    if started.runner is not None:
        await started.runner.cleanup()
    started.handle.dispose()


def run_serve(config: Config, *, on_ready: Callable[[Running], None] | None = None) -> None:
    """`serve` in a new event loop: uvloop's where it is installed (every platform but Windows), asyncio's elsewhere.

    uvloop took 5-9 % off the CPU `serve` spends per ask and per answer (bench/RESULTS.md), and its event loop is
    the one thread that bounds how many requests a second `serve` takes.
    """
    use_uvloop = importlib.util.find_spec("uvloop") is not None
    anyio.run(lambda: serve(config, on_ready=on_ready), backend_options={"use_uvloop": use_uvloop})


async def serve(config: Config, *, on_ready: Callable[[Running], None] | None = None) -> None:
    """Run until SIGINT or SIGTERM, on the store the config names (SQLite, or PostgreSQL with `[store] url_env`).

    Raises the store's StoreError when it cannot be opened, before anything starts.
    """
    raise_open_files_limit()
    throttle_flood_logs()
    store = await open_store(config)
    try:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with running(config, store=store) as program:
                loop = type(asyncio.get_running_loop())
                log.info("serving on %s's event loop (%s)", loop.__module__.partition(".")[0], loop.__qualname__)
                # After the first requests, not before: collecting start-up's garbage takes tens of milliseconds.
                tuning = asyncio.get_running_loop().call_later(GC_TUNE_DELAY_SECONDS, _tune_garbage_collection)
                if on_ready is not None:
                    on_ready(program)
                async for received in signals:
                    log.info("received %s; stopping (pending questions stay in the store)", received.name)
                    tuning.cancel()  # a stop within the first second: the collector stays off
                    _stop_collecting_garbage()
                    break
    finally:
        with anyio.CancelScope(shield=True):
            await store.close()


GC_TUNE_DELAY_SECONDS = 1.0
GC_THRESHOLD = (20_000, 20, 10)
"""Collect the youngest generation every 20,000 net allocations instead of 700: a request allocates hundreds of
objects and frees nearly all of them by reference counting, so frequent young collections found little."""


def _tune_garbage_collection() -> None:
    """Set the collector for a long-running server: what start-up built (modules, config, questions resumed from
    the store) lives as long as the process, so freeze it out of every later full collection. Enables the collector
    (`handraise serve` starts with it off)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    gc.enable()


def _stop_collecting_garbage() -> None:
    """The process is ending: leave its heap to the operating system instead of walking it.

    Stopping with 10^5 waiting questions cancels 10^5 tasks; the cyclic collector then ran full collections over the
    whole heap again and again, and once more at interpreter exit: most of a 30 s stop. Frozen objects are never
    examined again; what the stop itself leaves behind is small.
    """
    gc.disable()
    gc.freeze()


def _base_url(site: AcceptingSite, config: Config) -> str:
    host, port = config.server.host, site.addresses[0][1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"
