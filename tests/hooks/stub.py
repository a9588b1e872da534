"""A tiny stand-in for `handraise serve`: scripted replies by method and path, and a record of what was asked.

For what a real serve cannot be made to do on demand: a rule's 200, a garbled reply, a 202 without an id.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, Any]
"""Status and body: a dict or list is sent as JSON, bytes as they are."""


@dataclass
class Stub:
    replies: dict[tuple[str, str], Reply]
    """(method, path without the query) → reply; a path ending in "/" matches every path under it."""
    asked: list[tuple[str, str, Any]] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)
    url: str = ""

    def reply_to(self, method: str, path: str) -> Reply:
        for (want_method, want_path), reply in self.replies.items():
            under = want_path.endswith("/") and path.startswith(want_path)
            if want_method == method and (path == want_path or under):
                return reply
        return 404, {"error": {"code": "NOT_FOUND", "message": f"there is no API endpoint {path}"}}

    def paths(self, method: str) -> list[str]:
        return [path for asked_method, path, _ in self.asked if asked_method == method]

    def body_of(self, method: str, path: str) -> Any:
        return next(body for asked, at, body in self.asked if (asked, at) == (method, path))


@contextmanager
def stub_server(replies: dict[tuple[str, str], Reply]) -> Iterator[Stub]:
    stub = Stub(replies)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.answer("GET")

        def do_POST(self) -> None:
            self.answer("POST")

        def do_DELETE(self) -> None:
            self.answer("DELETE")

        def answer(self, method: str) -> None:
            path = self.path.partition("?")[0]
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            stub.asked.append((method, path, json.loads(raw) if raw else None))
            stub.authorizations.append(self.headers.get("Authorization"))
            status, body = stub.reply_to(method, path)
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
