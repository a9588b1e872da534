"""The network edges of the email channel: sending with aiosmtplib, and watching a mailbox with aioimaplib.

Sending keeps one SMTP connection (logged in once) for a burst of mails and closes it after a short idle time; a
connection the server has dropped meanwhile (closed, timed out, 421) is replaced at once. Transient failures
(connection trouble, 4xx replies) are retried with exponential backoff, then fail with an error that names the
server. Watching uses IMAP IDLE (polling when the server lacks it), re-IDLEs before the
server's timeout, reconnects with backoff, and after every (re)connect catches up by UID so that mail that arrived
while disconnected is not missed. A new UIDVALIDITY means the old UIDs mean nothing: it then catches up on unseen
mail instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import ssl
import time
from collections.abc import Awaitable, Callable
from email.message import EmailMessage
from typing import Any, Protocol

import aioimaplib
import aiosmtplib
import anyio

from bot.channel import DeliveryError
from bot.config import ImapSettings, SmtpSettings

log = logging.getLogger(__name__)

SMTP_IDLE_SECONDS = 30.0
"""Close the SMTP connection after this long without a mail: a burst (a question to many, confirmations) shares one
login, and no connection is held open for hours (servers drop idle ones after a few minutes anyway)."""

IDLE_SECONDS = 4 * 60
"""Re-IDLE this often: well inside the 30 minutes after which servers may end an IDLE (RFC 3501 §5.4), and short
enough that a push lost in a race delays a reply by minutes, not half an hour (every IDLE ends with a search)."""
_STOP_PUSH = "stop_wait_server_push"
_LOST = b"handraise: connection lost"


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


class ImapError(Exception):
    """The IMAP server refused something or went away; the watcher reconnects."""


MessageHandler = Callable[[bytes], Awaitable[bool]]
"""Handles one mail; returns True when the mail was the bot's business (it is then flagged \\Seen / moved)."""


class ImapWatcher:
    """Watches one mailbox and hands every new mail to `handle`, in UID order, exactly once per connection history."""

    def __init__(
        self,
        settings: ImapSettings,
        password: str,
        handle: MessageHandler,
        *,
        idle_seconds: float = IDLE_SECONDS,
        command_timeout: float = 30.0,
        first_delay: float = 1.0,
        max_delay: float = 60.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        if settings.security == "starttls":
            raise ValueError(
                'email.imap.security = "starttls" is not supported by the IMAP client; use "tls" (port 993)'
            )
        self.settings = settings
        self.password = password
        self.handle = handle
        self.idle_seconds = idle_seconds
        self.command_timeout = command_timeout
        self.first_delay = first_delay
        self.max_delay = max_delay
        self.ssl_context = ssl_context
        self.uidvalidity: int | None = None
        self.last_uid: int | None = None
        self.sessions = 0
        """How many times the watcher has connected and opened the mailbox (tests count reconnects with it)."""
        self.pushed_at: float | None = None
        """`time.perf_counter()` when the server last announced new mail (benchmarks split latency with it)."""
        self.connected = False
        """Whether a connection is open with the mailbox selected (False while reconnecting)."""
        self.watching = anyio.Event()
        """Set once the first catch-up is done and new mail is being watched for."""
        self._moved_folder_ready = False

    @property
    def server(self) -> str:
        return f"{self.settings.host}:{self.settings.port}"

    async def run(self) -> None:
        """Watch until cancelled, reconnecting with exponential backoff after any failure."""
        delay = self.first_delay
        while True:
            started = self.sessions
            try:
                await self._session()
            except (ImapError, aioimaplib.AioImapException, OSError, TimeoutError) as error:
                log.warning(
                    "email: IMAP %s: %s; reconnecting in %.1fs", self.server, error or type(error).__name__, delay
                )
            if self.sessions > started:
                delay = self.first_delay  # it worked for a while: start the backoff again
            await anyio.sleep(delay)
            delay = min(delay * 2, self.max_delay)

    async def _session(self) -> None:
        lost = anyio.Event()
        client: list[aioimaplib.IMAP4] = []

        def connection_lost(error: Exception | None) -> None:
            lost.set()
            protocol: Any = client[0].protocol if client else None
            if protocol is not None:  # wake a waiting IDLE at once rather than at its next timeout
                protocol.idle_queue.put_nowait([_LOST])

        context = self.ssl_context or (ssl.create_default_context() if self.settings.security == "tls" else None)
        imap = aioimaplib.IMAP4(
            host=self.settings.host,
            port=self.settings.port,
            timeout=self.command_timeout,
            conn_lost_cb=connection_lost,
            ssl_context=context,  # type: ignore[arg-type]  # aioimaplib's annotation omits None, its default
        )
        client.append(imap)
        try:
            await imap.wait_hello_from_server()
            _ok(await imap.login(self.settings.username, self.password), f"login as {self.settings.username}")
            selected = _ok(await imap.select(_quote(self.settings.mailbox)), f"select {self.settings.mailbox}")
            self.sessions += 1
            self.connected = True
            await self._catch_up(imap, selected)
            self.watching.set()
            if imap.has_capability("IDLE"):
                await self._idle(imap, lost)
            else:
                await self._poll(imap, lost)
        finally:
            self.connected = False
            with anyio.CancelScope(shield=True):
                await _close(imap, lost)

    async def _catch_up(self, imap: aioimaplib.IMAP4, selected: aioimaplib.Response) -> None:
        text = b" ".join(bytes(line) for line in selected.lines)
        validity = _number(rb"UIDVALIDITY (\d+)", text)
        uid_next = _number(rb"UIDNEXT (\d+)", text)
        if self.last_uid is None or validity != self.uidvalidity:
            if self.last_uid is not None:
                log.warning("email: mailbox %s has a new UIDVALIDITY; reading its unseen mail", self.settings.mailbox)
            self.uidvalidity = validity
            self.last_uid = (uid_next - 1) if uid_next else 0
            uids = await self._search(imap, "UNSEEN")
        else:
            uids = [uid for uid in await self._search(imap, f"UID {self.last_uid + 1}:*") if uid > self.last_uid]
        await self._process(imap, uids)

    async def _fetch_new(self, imap: aioimaplib.IMAP4) -> None:
        # Until a search finds nothing: mail that lands while we fetch is announced inside those commands'
        # responses, not pushed to the next IDLE, so only searching again is sure to see it.
        while True:
            last = self.last_uid or 0
            uids = [uid for uid in await self._search(imap, f"UID {last + 1}:*") if uid > last]
            if not uids:
                return
            await self._process(imap, uids)

    async def _search(self, imap: aioimaplib.IMAP4, criteria: str) -> list[int]:
        response = _ok(await imap.uid_search(criteria, charset=None), f"search {criteria}")
        uids: list[int] = []
        # aioimaplib strips "* SEARCH" from the untagged lines; the last line is the completion text.
        # Other untagged responses ride along ("5 EXISTS", "2 RECENT"): only an all-number line is a result, or a
        # message count would pass for a UID and push last_uid past mail not yet read.
        for line in response.lines[:-1]:
            words = bytes(line).split()
            if words and all(word.isdigit() for word in words):
                uids.extend(int(word) for word in words)
        return sorted(set(uids))

    async def _process(self, imap: aioimaplib.IMAP4, uids: list[int]) -> None:
        for uid in uids:
            response = _ok(await imap.uid("fetch", str(uid), "(BODY.PEEK[])"), f"fetch UID {uid}")
            raw = _literal(response)
            self.last_uid = max(self.last_uid or 0, uid)
            if raw is None:
                continue  # expunged meanwhile
            try:
                ours = await self.handle(raw)
            except Exception:
                # A bug in handling one mail must not stop the watcher; the mail stays unseen for a human to see.
                log.exception("email: handling UID %d failed", uid)
                continue
            if ours:
                await self._file(imap, uid)

    async def _file(self, imap: aioimaplib.IMAP4, uid: int) -> None:
        _ok(await imap.uid("store", str(uid), "+FLAGS.SILENT (\\Seen)"), f"flag UID {uid} as seen")
        folder = self.settings.processed_folder
        if folder is None:
            return
        if not self._moved_folder_ready:
            await imap.create(_quote(folder))  # NO when it exists already: fine
            self._moved_folder_ready = True
        if imap.has_capability("MOVE"):
            _ok(await imap.uid("move", str(uid), _quote(folder)), f"move UID {uid} to {folder}")
            return
        _ok(await imap.uid("copy", str(uid), _quote(folder)), f"copy UID {uid} to {folder}")
        _ok(await imap.uid("store", str(uid), "+FLAGS.SILENT (\\Deleted)"), f"flag UID {uid} as deleted")
        if imap.has_capability("UIDPLUS"):
            await imap.uid("expunge", str(uid))

    async def _idle(self, imap: aioimaplib.IMAP4, lost: anyio.Event) -> None:
        while not lost.is_set():
            idle = await imap.idle_start(timeout=self.idle_seconds)
            new_mail = False
            while imap.has_pending_idle():
                pushed = await imap.wait_server_push(timeout=self.idle_seconds + self.command_timeout)
                lines = [bytes(line) for line in pushed] if isinstance(pushed, list) else []
                if _LOST in lines:
                    raise ImapError("the connection was lost")
                if any(line.endswith(b"EXISTS") for line in lines):
                    self.pushed_at = time.perf_counter()
                    new_mail = True
                if new_mail or _STOP_PUSH.encode() in lines or _STOP_PUSH in pushed:
                    imap.idle_done()
                    break
            with anyio.fail_after(self.command_timeout):
                await idle
            if lost.is_set():
                raise ImapError("the connection was lost")
            # Also after a quiet IDLE period: a push lost in a race costs one IDLE period, never the reply.
            await self._fetch_new(imap)

    async def _poll(self, imap: aioimaplib.IMAP4, lost: anyio.Event) -> None:
        interval = self.settings.poll_interval.total_seconds()
        log.info("email: %s has no IDLE; checking for mail every %.0fs", self.server, interval)
        while not lost.is_set():
            await anyio.sleep(interval)
            _ok(await imap.noop(), "noop")
            await self._fetch_new(imap)
        raise ImapError("the connection was lost")


def _ok(response: aioimaplib.Response, what: str) -> aioimaplib.Response:
    if response.result != "OK":
        shown = b" ".join(bytes(line) for line in response.lines[-1:]).decode("utf-8", "replace")
        raise ImapError(f"could not {what}: {response.result} {shown}".rstrip())
    return response


def _literal(response: aioimaplib.Response) -> bytes | None:
    lines: list[Any] = list(response.lines)
    for index, line in enumerate(lines[:-1]):
        if re.search(rb"\{\d+\}$", bytes(line)):
            return bytes(lines[index + 1])
    return None


def _number(pattern: bytes, text: bytes) -> int | None:
    found = re.search(pattern, text)
    return int(found[1]) if found else None


def _quote(mailbox: str) -> str:
    return '"' + mailbox.replace("\\", "\\\\").replace('"', '\\"') + '"'


async def _close(imap: aioimaplib.IMAP4, lost: anyio.Event) -> None:
    if not lost.is_set():
        try:
            with anyio.move_on_after(2):
                await imap.logout()
        except Exception:  # already broken: closing the socket below is all that is left
            pass
    protocol: Any = imap.protocol
    transport = protocol.transport if protocol is not None else None
    if transport is not None:
        transport.close()
