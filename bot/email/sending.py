"""Sending mail with aiosmtplib over one kept connection.

One SMTP connection (logged in once) serves a burst of mails and is closed after a short idle time; a connection the
server has dropped meanwhile (closed, timed out, 421) is replaced at once. Transient failures (connection trouble,
4xx replies) are retried with exponential backoff, then fail with an error that names the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from email.message import EmailMessage
from typing import Protocol

import aiosmtplib
import anyio

from bot.channels.base import DeliveryError
from bot.email.settings import SmtpSettings

log = logging.getLogger(__name__)

SMTP_IDLE_SECONDS = 30.0
"""Close the SMTP connection after this long without a mail: a burst (a question to many, confirmations) shares one
login, and no connection is held open for hours (servers drop idle ones after a few minutes anyway)."""


class MailSender(Protocol):
    async def send(self, message: EmailMessage) -> None:
        """Send `message` to its To/Cc recipients; raise DeliveryError when that is impossible."""
        ...

    async def aclose(self) -> None:
        """Close whatever connection is kept open between mails."""
        ...


class SmtpSender:
    """Sends through the configured SMTP server over one reused connection, retrying transient failures."""

    def __init__(
        self,
        settings: SmtpSettings,
        password: str | None,
        *,
        attempts: int = 4,
        first_delay: float = 1.0,
        max_delay: float = 30.0,
        idle_seconds: float = SMTP_IDLE_SECONDS,
    ) -> None:
        self.settings = settings
        self.password = password
        self.attempts = attempts
        self.first_delay = first_delay
        self.max_delay = max_delay
        self.idle_seconds = idle_seconds
        self._client: aiosmtplib.SMTP | None = None
        self._lock = anyio.Lock()  # one mail at a time on the one connection
        # aiosmtplib runs on asyncio only, so the idle close is an asyncio timer (no task group to own a task).
        self._idle_timer: asyncio.TimerHandle | None = None
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def server(self) -> str:
        return f"{self.settings.host}:{self.settings.port}"

    @property
    def connected(self) -> bool:
        """Whether a connection is open for the next mail."""
        return self._client is not None and self._client.is_connected

    async def send(self, message: EmailMessage) -> None:
        """Raises DeliveryError naming the server once the attempts are used up or the server refuses for good."""
        async with self._lock:
            self._cancel_idle_close()
            try:
                await self._send(message)
            finally:
                self._schedule_idle_close()

    async def aclose(self) -> None:
        """Say QUIT and close the connection, if one is open."""
        async with self._lock:
            self._cancel_idle_close()
            await self._quit()

    async def _send(self, message: EmailMessage) -> None:
        delay = self.first_delay
        failure: BaseException | None = None
        attempt = 0
        while attempt < self.attempts:
            attempt += 1
            reused = self.connected
            try:
                client = await self._connection()
                await client.send_message(message)
                return
            except aiosmtplib.SMTPResponseException as error:
                self._drop()
                if error.code >= 500:
                    raise DeliveryError(
                        f"email: the SMTP server {self.server} refused the mail ({error.code} {error.message})"
                    ) from error
                failure = error
            except aiosmtplib.SMTPRecipientsRefused as error:
                self._drop()
                shown = ", ".join(f"{r.recipient} ({r.code} {r.message})" for r in error.recipients)
                if all(r.code >= 500 for r in error.recipients):
                    raise DeliveryError(f"email: the SMTP server {self.server} refused {shown}") from error
                failure = error
            except (aiosmtplib.SMTPException, OSError, TimeoutError) as error:
                self._drop()
                failure = error
            if reused and _stale(failure):
                # The kept connection had gone stale (closed by the server, timed out, 421): a new one, at once and
                # without spending an attempt, is the normal way on.
                attempt -= 1
                log.info("email: the SMTP connection to %s was gone (%s); reconnecting", self.server, failure)
                continue
            log.warning(
                "email: sending through %s failed (attempt %d of %d): %s", self.server, attempt, self.attempts, failure
            )
            if attempt < self.attempts:
                await anyio.sleep(delay)
                delay = min(delay * 2, self.max_delay)
        raise DeliveryError(
            f"email: could not send through the SMTP server {self.server} after {self.attempts} attempts: "
            f"{failure or 'no attempt was made'}; check [email.smtp] and that the server is reachable"
        )

    async def _connection(self) -> aiosmtplib.SMTP:
        if self._client is not None and self._client.is_connected:
            return self._client
        settings = self.settings
        client = aiosmtplib.SMTP(
            hostname=settings.host,
            port=settings.port,
            username=settings.username,
            password=self.password,
            use_tls=settings.security == "tls",
            start_tls=settings.security == "starttls",
            timeout=settings.timeout.total_seconds(),
        )
        await client.connect()  # connects, says EHLO, upgrades with STARTTLS and logs in as configured
        self._client = client
        return client

    def _drop(self) -> None:
        """Forget the connection after a failure: what state it is in is unknown, so it is closed, not reused."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    async def _quit(self) -> None:
        client, self._client = self._client, None
        if client is None or not client.is_connected:
            return
        try:
            with anyio.fail_after(self.settings.timeout.total_seconds()):
                await client.quit()
        except (aiosmtplib.SMTPException, OSError, TimeoutError):
            client.close()

    def _schedule_idle_close(self) -> None:
        if self._client is None:
            return
        self._idle_timer = asyncio.get_running_loop().call_later(self.idle_seconds, self._close_idle)

    def _cancel_idle_close(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _close_idle(self) -> None:
        self._idle_timer = None
        if self._lock.locked():
            return  # a mail is on its way; it schedules the next idle close itself
        task = asyncio.get_running_loop().create_task(self._quit_when_idle())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _quit_when_idle(self) -> None:
        with contextlib.suppress(Exception):  # closing an idle connection must never surface anywhere
            async with self._lock:
                if self._idle_timer is None:
                    await self._quit()


def _stale(failure: BaseException) -> bool:
    """Whether a failure on a kept connection says only that the connection is gone (not that the mail is bad)."""
    if isinstance(failure, aiosmtplib.SMTPResponseException):
        return failure.code == 421
    return not isinstance(failure, aiosmtplib.SMTPRecipientsRefused)
