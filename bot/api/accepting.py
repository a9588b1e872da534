"""`serve`'s listening sockets, accepted from by handraise rather than by the event loop, so that running out of open
files leaves new connections queued in the kernel on uvloop as on asyncio.

Out of files, asyncio stops accepting for a moment and the kernel keeps the connections queued until files are
freed; libuv (under uvloop) instead accepts each queued connection and closes it at once. In a flood of long-polling
agents that reset the very connections `bot/api/capacity.py` turns away with 503 and Retry-After, and the inbox's own.
So this site binds the sockets itself and accepts from them with asyncio's rules on any loop; the accepted sockets
are handed to the loop (`connect_accepted_socket`), which runs them as fast as its own would. Raw asyncio here, not
anyio: aiohttp's server is asyncio's, and this is its listener.
"""

from __future__ import annotations

import asyncio
import logging
import socket

from aiohttp import web
from yarl import URL

log = logging.getLogger(__name__)

ACCEPT_BATCH = 128
"""Connections accepted each time a listening socket is ready, as many as asyncio did under aiohttp's default: taking
thousands in one loop iteration (a deeper batch) stalled every request behind them, the inbox for seconds in
bench/flood.py. The rest stay queued for the next iteration."""
PAUSE_SECONDS = 0.1
"""How long accepting stops after accept() failed for want of a file (or memory): the queued connections wait,
and the 503s sent meanwhile free files."""


class AcceptingSite(web.BaseSite):
    """aiohttp's TCPSite, but accepting as described above; `backlog` is the kernel's queue, not a batch."""

    __slots__ = ("_host", "_listeners", "_port")

    def __init__(self, runner: web.BaseRunner, host: str, port: int, *, backlog: int) -> None:
        super().__init__(runner, backlog=backlog)
        self._host = host
        self._port = port
        self._listeners: list[Listener] = []

    @property
    def name(self) -> str:
        return str(URL.build(scheme="http", host=self._host, port=self._port))

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """Where it listens (address and port first, as `getsockname()` gives them), once started."""
        return [listener.sock.getsockname() for listener in self._listeners]

    @property
    def paused(self) -> bool:
        """Whether accepting is paused on some address, for want of files (or after another failed accept())."""
        return any(listener.paused for listener in self._listeners)

    async def start(self) -> None:
        """Bind and listen on every address `host` resolves to; raises OSError when one cannot be bound."""
        await super().start()
        loop = asyncio.get_running_loop()
        protocol_factory = self._runner.server
        assert protocol_factory is not None  # BaseSite's constructor checked that the runner was set up
        resolved = await loop.getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, address in dict.fromkeys((family, address) for family, _, _, _, address in resolved):
            # SO_REUSEADDR, and IPv6 only on an IPv6 socket, as asyncio's create_server binds.
            sock = socket.create_server(address, family=family, backlog=self._backlog)
            self._listeners.append(Listener(loop, sock, protocol_factory))

    async def stop(self) -> None:
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()
        await super().stop()


class Listener:
    """One listening socket, watched by the loop; the connections it accepts go to `protocol_factory`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, protocol_factory: web.Server) -> None:
        self.sock = sock
        self.paused = False
        self._loop = loop
        self._protocol_factory = protocol_factory
        self._resume_later: asyncio.TimerHandle | None = None
        self._connecting: set[asyncio.Task[None]] = set()  # the loop keeps only weak references to tasks
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self._accept)

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                connection, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return  # nothing more queued
            except ConnectionAbortedError:
                continue  # that client gave up while queued
            except OSError as error:
                self._pause(error)
                return
            task = self._loop.create_task(self._connect(connection))
            self._connecting.add(task)
            task.add_done_callback(self._connecting.discard)

    async def _connect(self, connection: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self._protocol_factory, connection)
        except OSError as error:
            connection.close()
            log.debug("a connection closed before it was set up: %s", error)

    def _pause(self, error: OSError) -> None:
        """Out of files (EMFILE, ENFILE) or memory: leave the queue to the kernel for a moment, logged (throttled)."""
        self._loop.remove_reader(self.sock.fileno())
        self.paused = True
        self._resume_later = self._loop.call_later(PAUSE_SECONDS, self._resume)
        log.error(
            "accept(): %s; new connections wait in the kernel's queue, accepted again in %g s",
            error.strerror or error,
            PAUSE_SECONDS,
            extra={"flood": "accept paused"},
        )

    def _resume(self) -> None:
        self.paused = False
        self._resume_later = None
        self._loop.add_reader(self.sock.fileno(), self._accept)

    def close(self) -> None:
        """Stop accepting and close the socket; connections already accepted are the server's to close."""
        if self._resume_later is not None:
            self._resume_later.cancel()
        self._loop.remove_reader(self.sock.fileno())
        self.sock.close()
