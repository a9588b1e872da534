"""Live updates for open inbox pages: one server-sent event stream per page, fed from the ledger's changes.

Each event has an id `<epoch>-<seq>`. A browser that loses its stream reconnects with `Last-Event-ID`, and gets what
it missed from a short backlog; when the backlog cannot cover the gap (or the server restarted, changing the epoch),
it is told to reload instead of silently showing a stale page.
"""

from __future__ import annotations

import json
import secrets
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

BACKLOG = 256
"""Events kept for reconnecting pages: minutes of a busy inbox, while a reconnect takes seconds."""
STREAM_BUFFER = 64
"""Events queued for one page; a page this far behind is cut off, and catches up by reconnecting."""


class LiveEvent:
    """One event; its JSON is written only when a page is sent it (most are published with no page open)."""

    __slots__ = ("_data", "_epoch", "payload", "seq")

    def __init__(self, seq: int, epoch: str, payload: dict[str, Any]) -> None:
        self.seq = seq
        self._epoch = epoch
        self.payload = payload
        self._data: str | None = None

    @property
    def id(self) -> str:
        return f"{self._epoch}-{self.seq}" if self._epoch else ""

    @property
    def data(self) -> str:
        if self._data is None:
            self._data = json.dumps(self.payload, separators=(",", ":"))
        return self._data

    def encode(self) -> bytes:
        return f"id: {self.id}\ndata: {self.data}\n\n".encode()


RELOAD = LiveEvent(0, "", {"kind": "reload"})


class LiveFeed:
    """Fans events out to every subscribed stream; synchronous `publish`, so a ledger watcher can call it."""

    def __init__(self) -> None:
        self._epoch = secrets.token_hex(4)
        self._seq = 0
        self._recent: deque[LiveEvent] = deque(maxlen=BACKLOG)
        self._streams: set[MemoryObjectSendStream[LiveEvent]] = set()
        self._closed = False

    @property
    def epoch(self) -> str:
        """This feed's mark on its event ids: an id from another epoch (another run of the server) gets a reload."""
        return self._epoch

    @property
    def backlog(self) -> tuple[LiveEvent, ...]:
        """The events a reconnecting page can still be replayed, oldest first."""
        return tuple(self._recent)

    @property
    def subscribers(self) -> int:
        return len(self._streams)

    def publish(self, payload: dict[str, Any]) -> None:
        self._seq += 1
        event = LiveEvent(self._seq, self._epoch, payload)
        self._recent.append(event)
        for stream in list(self._streams):
            try:
                stream.send_nowait(event)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                stream.close()  # a stuck page: ending its stream makes the browser reconnect and replay
                self._streams.discard(stream)

    @contextmanager
    def subscribe(
        self, last_event_id: str | None
    ) -> Iterator[tuple[list[LiveEvent], MemoryObjectReceiveStream[LiveEvent]]]:
        """What the page missed since `last_event_id` (or `[RELOAD]`), and a stream of what comes next.

        After `close()` the stream is already at its end.
        """
        send, receive = anyio.create_memory_object_stream[LiveEvent](STREAM_BUFFER)
        if self._closed:
            send.close()
        else:
            self._streams.add(send)
        try:
            with receive:
                yield self._missed(last_event_id), receive
        finally:
            self._streams.discard(send)
            send.close()

    def close(self) -> None:
        """End every stream, and refuse new ones: the server is stopping."""
        self._closed = True
        for stream in self._streams:
            stream.close()
        self._streams.clear()

    def _missed(self, last_event_id: str | None) -> list[LiveEvent]:
        if not last_event_id:
            return []
        epoch, _, seq_text = last_event_id.partition("-")
        if epoch != self._epoch or not seq_text.isdecimal() or int(seq_text) > self._seq:
            return [RELOAD]
        seen = int(seq_text)
        oldest = self._recent[0].seq if self._recent else self._seq + 1
        if seen + 1 < oldest:
            return [RELOAD]
        return [event for event in self._recent if event.seq > seen]
