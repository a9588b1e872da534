"""The network edges of the email channel: sending (`bot.email.sending`, aiosmtplib), and watching a mailbox with
aioimaplib.

Watching uses IMAP IDLE (polling when the server lacks it), re-IDLEs before the
server's timeout, reconnects with backoff, and after every (re)connect catches up by UID so that mail that arrived
while disconnected is not missed. A new UIDVALIDITY means the old UIDs mean nothing: it then catches up on unseen
mail instead.
"""

from __future__ import annotations

import logging
import re
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aioimaplib
import anyio

from bot.email.errors import EmailErrorCode
from bot.email.sending import MailSender as MailSender
from bot.email.sending import SmtpSender as SmtpSender
from bot.email.settings import ImapSettings
from bot.errors import HandraiseError

log = logging.getLogger(__name__)

IDLE_SECONDS = 4 * 60
"""Re-IDLE this often: well inside the 30 minutes after which servers may end an IDLE (RFC 3501 §5.4), and short
enough that a push lost in a race delays a reply by minutes, not half an hour (every IDLE ends with a search)."""
_STOP_PUSH = "stop_wait_server_push"
_LOST = b"handraise: connection lost"


class ImapError(HandraiseError):
    """The IMAP server refused something or went away; the watcher reconnects."""

    code = EmailErrorCode.IMAP_FAILED


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
            await self.catch_up(imap, selected)
            self.watching.set()
            if imap.has_capability("IDLE"):
                await self.idle(imap, lost)
            else:
                await self.poll(imap, lost)
        finally:
            self.connected = False
            with anyio.CancelScope(shield=True):
                await _close(imap, lost)

    # -- the steps of a session, on a connection with the mailbox selected (tests drive each with a scripted client) ---

    async def catch_up(self, imap: aioimaplib.IMAP4, selected: aioimaplib.Response) -> None:
        """Read what arrived since the last UID read (all unseen mail when the mailbox's UIDVALIDITY changed)."""
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

    async def fetch_new(self, imap: aioimaplib.IMAP4) -> None:
        """Read every mail past the last UID read, searching again until a search finds nothing."""
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

    async def idle(self, imap: aioimaplib.IMAP4, lost: anyio.Event) -> None:
        """Wait for new mail with IDLE and read it, until the connection is lost (then raise ImapError)."""
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
            await self.fetch_new(imap)

    async def poll(self, imap: aioimaplib.IMAP4, lost: anyio.Event) -> None:
        """Without IDLE: check for new mail every `poll_interval` until the connection is lost (then raise
        ImapError)."""
        interval = self.settings.poll_interval.total_seconds()
        log.info("email: %s has no IDLE; checking for mail every %.0fs", self.server, interval)
        while not lost.is_set():
            await anyio.sleep(interval)
            _ok(await imap.noop(), "noop")
            await self.fetch_new(imap)
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
