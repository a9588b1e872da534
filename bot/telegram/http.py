"""python-telegram-bot's requests made with aiohttp, the HTTP client the rest of the program already uses.

python-telegram-bot sends through a pluggable `BaseRequest`; its default is httpx. Measured on the answer path
(bench/telegram_latency.py), httpx's per-call cost was most of handraise's own overhead on a busy machine, and a
tap costs two calls (answerCallbackQuery, and the editMessageText of the outcome). This is the library's documented
extension point, kept to what the Bot API needs: form-encoded parameters, no file uploads.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from telegram.error import NetworkError, TimedOut
from telegram.request import BaseRequest, RequestData

_UNSET = BaseRequest.DEFAULT_NONE
"""What the Bot passes for a timeout it leaves to the request (the library's public marker)."""


class AiohttpRequest(BaseRequest):
    """A `BaseRequest` on one aiohttp session with a bounded connection pool."""

    def __init__(self, *, pool_size: int = 16, read_timeout: float = 10.0, connect_timeout: float = 10.0) -> None:
        self._pool_size = pool_size
        self._read_timeout = read_timeout
        self._connect_timeout = connect_timeout
        self._session: aiohttp.ClientSession | None = None

    @property
    def read_timeout(self) -> float | None:
        return self._read_timeout

    async def initialize(self) -> None:
        """Nothing yet: the session opens with the first request, so a pool never used is never left open."""

    async def shutdown(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: Any = _UNSET,
        write_timeout: Any = _UNSET,
        connect_timeout: Any = _UNSET,
        pool_timeout: Any = _UNSET,
    ) -> tuple[int, bytes]:
        """One request; raises TimedOut or NetworkError (which the Bot and the transport know) on failure."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self._pool_size))
        if request_data is not None and request_data.contains_files:
            raise NetworkError("handraise sends no files to Telegram")
        read = self._read_timeout if read_timeout is _UNSET else read_timeout
        connect = self._connect_timeout if connect_timeout is _UNSET else connect_timeout
        timeout = aiohttp.ClientTimeout(sock_read=read, sock_connect=connect, connect=connect)
        data = request_data.json_parameters if request_data is not None else None
        try:
            async with self._session.request(method, url, data=data, timeout=timeout) as response:
                return response.status, await response.read()
        except TimeoutError as error:
            raise TimedOut from error
        except aiohttp.ClientError as error:
            raise NetworkError(f"aiohttp.{type(error).__name__}: {error}") from error
