"""Floods of waiting agents: enough file descriptors, a cap on long-polls, and a log that does not drown.

Every agent long-polling `GET /v1/questions/{id}?wait=` holds a socket, so a few thousand of them once used up the
default 1,024 open files: the inbox and `/healthz` stopped answering (nobody could answer the agents), and asyncio
logged "Too many open files" hundreds of times a second. So `serve` raises its soft limit to the hard one, long-polls
beyond `[server] max_waiting` (or beyond what the limit leaves for everything else) get 503 with `Retry-After`, and
that log line is let through once every few seconds.
"""

from __future__ import annotations

import errno
import logging
import random
import sys
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from bot.api.routes import error_response

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

HEADROOM = 256
"""Open files kept back from long-polls for the inbox, /healthz, the store, Slack and mail (half, at tiny limits)."""
RETRY_AFTER_SECONDS = 5
LISTEN_BACKLOG = 4096
"""Connections the kernel queues before accept() (Linux caps it at net.core.somaxconn). aiohttp's 128 overflowed when
thousands of agents connected at once, and a dropped SYN is retried only after a second or more: the inbox, connecting
in the same burst, waited seconds."""
LONG_POLL_ROUTE = "/v1/questions/{id}"
OUT_OF_FILES = frozenset({errno.EMFILE, errno.ENFILE})
MALFORMED = "malformed request"
THROTTLED_LOGGERS = ("bot.api.accepting", "asyncio", "aiohttp.server")
"""`serve`'s listener logs a failed accept() (asyncio's own did, before it), aiohttp a request that failed for want of
a file, or was malformed."""


def raise_open_files_limit() -> int | None:
    """Raise the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force (None where unknown)."""
    if sys.platform == "win32":
        return None
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # An unlimited hard limit is not a number the kernel takes for open files (macOS caps it at OPEN_MAX).
    for wanted in [hard] if hard != resource.RLIM_INFINITY else [1 << 20, 10_240]:
        if wanted <= soft:
            break
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):
            continue
        log.info("raised the open-files limit from %d to %d", soft, wanted)
        return wanted
    return soft


def open_files_limit() -> int | None:
    """The soft RLIMIT_NOFILE in force (None where there is none to read)."""
    if sys.platform == "win32":
        return None
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def waiting_limit(max_waiting: int, open_files: int | None) -> int:
    """How many long-polls may wait at once: `max_waiting`, lowered so that waiting agents leave files to spare."""
    if open_files is None:
        return max_waiting
    return max(1, min(max_waiting, open_files - min(HEADROOM, open_files // 2)))


class WaitingCap:
    """Counts the long-polls now waiting; past `limit`, new ones are turned away with 503 and Retry-After."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.waiting = 0

    @classmethod
    def within_open_files(cls, max_waiting: int) -> WaitingCap:
        """`[server] max_waiting`, lowered (with a warning) to what the open-files limit in force leaves room for."""
        cap = cls(waiting_limit(max_waiting, open_files_limit()))
        if cap.limit < max_waiting:
            log.warning(
                "the open-files limit leaves room for %d waiting agents, not max_waiting = %d", cap.limit, max_waiting
            )
        return cap

    async def admit(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Run `handler` for a long-poll (see `is_long_poll`), counted while it waits; past the limit, 503."""
        if self.waiting >= self.limit:
            # Spread over a second interval, so that agents turned away together do not all come back together.
            retry_after = RETRY_AFTER_SECONDS + random.randint(0, RETRY_AFTER_SECONDS)
            response = error_response(
                503,
                "TOO_MANY_WAITING",
                f"{self.limit:,} agents are already waiting for answers; "
                f"poll again after {retry_after} seconds (Retry-After)",
            )
            response.headers["Retry-After"] = str(retry_after)
            response.force_close()  # an idle keep-alive socket would hold the very file we are short of
            return response
        self.waiting += 1
        try:
            return await handler(request)
        finally:
            self.waiting -= 1


def is_long_poll(request: web.Request) -> bool:
    """`GET /v1/questions/{id}?wait=SECONDS` with SECONDS > 0: a request that holds its socket while it waits."""
    resource = request.match_info.route.resource
    if request.method != "GET" or resource is None or resource.canonical != LONG_POLL_ROUTE:
        return False
    try:
        return float(request.query.get("wait", "0")) > 0
    except ValueError:
        return False  # the handler answers 400 BAD_WAIT


class FloodLogThrottle(logging.Filter):
    """Lets one "Too many open files" record through per `interval` seconds, noting how many it held back.

    Also malformed HTTP requests (a URL over 8 KiB, a garbage request line), which aiohttp answers with 400 but logs
    as an ERROR with a traceback each: any client could fill the disk with them, so they become one warning line,
    throttled alike. Our own records name their kind (`extra={"flood": KIND}`), e.g. `bot/api/accepting.py`'s.
    """

    def __init__(self, interval: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval = interval
        self._clock = clock
        self._next: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        kind = _flood_kind(record)
        if kind is None:
            return True
        now = self._clock()
        if now < self._next.get(kind, float("-inf")):
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        if kind == MALFORMED:
            _one_line(record)
        if held := self._held.pop(kind, 0):
            record.msg = f"{record.msg} ({held} more like it not logged in the last {self.interval:g} s)"
        self._next[kind] = now + self.interval
        return True


def _flood_kind(record: logging.LogRecord) -> str | None:
    if isinstance(kind := getattr(record, "flood", None), str):
        return kind
    error = record.exc_info[1] if record.exc_info else None
    if isinstance(error, HttpProcessingError):
        return MALFORMED
    if isinstance(error, OSError) and error.errno in OUT_OF_FILES:
        return "out of files"
    return None


def _one_line(record: logging.LogRecord) -> None:
    """The client's mistake, not ours: a warning without the traceback, and no more than a line of its bytes."""
    error = record.exc_info[1] if record.exc_info else None
    lines = str(getattr(error, "message", "")).strip().splitlines() or [type(error).__name__]
    detail = lines[0][:200]
    record.msg = f"refused a malformed HTTP request (400): {detail}"
    record.args = ()
    record.levelno, record.levelname = logging.WARNING, "WARNING"
    record.exc_info, record.exc_text = None, None


def throttle_flood_logs(interval: float = 5.0) -> None:
    """Install the throttle on the loggers that report it (once per logger, however often this is called)."""
    for name in THROTTLED_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(existing, FloodLogThrottle) for existing in logger.filters):
            logger.addFilter(FloodLogThrottle(interval))
