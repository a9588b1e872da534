"""The email channel wired to real servers: SMTP (aiosmtpd → Dovecot LDA) out, Dovecot IMAP IDLE in."""

from __future__ import annotations

import email
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import aioimaplib
import aiosmtplib
import anyio
from anyio.abc import TaskGroup

from bot.channels.base import install_channel
from bot.email.channel import EmailChannel, Handled
from bot.email.settings import EmailSettings
from bot.questions.clock import SystemClock
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.store.sqlite.async_store import SqliteStore
from core import (
    AgentRegistry,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    Context,
    UserQuestionService,
)
from tests.background_ask import Asked as Asked
from tests.background_ask import ask_in_background
from tests.bot.fakes import sync_store

from .rig import SECRET
from .servers import PASSWORD, Dovecot, SmtpToDovecot

WAIT = 30.0


class LiveRig:
    def __init__(
        self,
        tmp_path: Path,
        dovecot: Dovecot,
        smtp: SmtpToDovecot,
        number: int,
        group: TaskGroup,
        watcher: dict[str, Any] | None = None,
        imap: dict[str, Any] | None = None,
        **settings: Any,
    ) -> None:
        self.dovecot = dovecot
        self.smtp = smtp
        self.group = group
        self.bot = f"bot{number}@example.org"
        self.alice = f"alice{number}@example.org"
        subscription = {"to": [self.alice], "responders": [self.alice, "@ops.example.org"]}
        self.settings = EmailSettings.model_validate(
            {
                "address": self.bot,
                "smtp": {"host": "127.0.0.1", "port": smtp.port, "security": "none"},
                "imap": {
                    "host": dovecot.host,
                    "port": dovecot.port,
                    "security": "none",
                    "username": self.bot,
                    "password_env": "UNUSED",
                }
                | (imap or {}),
                "subscriptions": [subscription],
            }
            | settings
        )
        self.ledger = Ledger(SqliteStore.open(tmp_path / "handraise.db"), SystemClock())
        options = {"first_delay": 0.05, "max_delay": 0.5, "command_timeout": 5.0}
        self.seen: list[Handled] = []
        self._seen_more = anyio.Event()
        self.channel = EmailChannel(
            self.settings,
            secret=SECRET,
            imap_password=PASSWORD,
            watcher_options=options | (watcher or {}),
            on_handled=self._saw,
        )
        self.ctx = Context()
        self.ctx.plugin(AgentRegistry)
        self.ctx.plugin(UserQuestionService)
        install_channel(self.ctx, self.channel, Router(["email"], {"email": self.settings.subscriptions}), self.ledger)

    async def start(self) -> None:
        self.group.start_soon(self.channel.run)
        with anyio.fail_after(WAIT):
            while self.channel.watcher is None:
                await anyio.sleep(0.01)
            await self.channel.watcher.watching.wait()

    def ask(self, *questions: AskUserQuestionItem) -> Asked:
        return ask_in_background(self.group, self.ctx, AskUserQuestionRequest(questions=list(questions)))

    async def mails_to(self, user: str, count: int) -> list[EmailMessage]:
        """The first `count` mails delivered to `user`, once they are there."""
        with anyio.fail_after(WAIT):
            while len(found := self.dovecot.messages(user)) < count:
                await anyio.sleep(0.01)
        return [parse(raw) for raw in found]

    async def question_mails(self, count: int) -> list[EmailMessage]:
        return await self.mails_to(self.alice, count)

    def in_ask_order(self, mails: list[EmailMessage]) -> list[EmailMessage]:
        """`mails` (one question mail per ask) sorted in the order the questions were asked."""
        records = sync_store(self.ledger.store).list_questions(newest_first=False, limit=10_000)
        order = {self.channel.binding.token_for(record.id): index for index, record in enumerate(records)}

        def token(mail: EmailMessage) -> str:
            return str(mail["Reply-To"]).split("+", 1)[1].split("@", 1)[0]

        return sorted(mails, key=lambda mail: order[token(mail)])

    async def send(self, raw: bytes, recipient: str, sender: str | None = None) -> None:
        """Send a mail through the SMTP server, which delivers it into Dovecot."""
        mail = parse(raw)
        await aiosmtplib.send(
            mail, sender=sender or self.alice, recipients=[recipient], hostname="127.0.0.1", port=self.smtp.port
        )

    async def append(self, raw: bytes) -> None:
        """Put a mail straight into the bot's mailbox, as IMAP APPEND does."""
        await append(self.dovecot, self.bot, raw)

    def _saw(self, handled: Handled) -> None:
        self.seen.append(handled)
        self._seen_more.set()
        self._seen_more = anyio.Event()

    async def handled(self, count: int) -> list[Handled]:
        """The mails the channel has handled, once there are at least `count`."""
        with anyio.fail_after(WAIT):
            while len(self.seen) < count:
                await self._seen_more.wait()
        return list(self.seen)


async def append(dovecot: Dovecot, user: str, raw: bytes) -> None:
    imap = aioimaplib.IMAP4(host=dovecot.host, port=dovecot.port, timeout=10)
    await imap.wait_hello_from_server()
    await imap.login(user, PASSWORD)
    response = await imap.append(raw, mailbox="INBOX")
    assert response.result == "OK", response
    await imap.logout()


def parse(raw: bytes) -> EmailMessage:
    message = email.message_from_bytes(raw, policy=policy.default)
    assert isinstance(message, EmailMessage)
    return message


@asynccontextmanager
async def live(
    tmp_path: Path,
    dovecot: Dovecot,
    smtp: SmtpToDovecot,
    number: int,
    watcher: dict[str, Any] | None = None,
    imap: dict[str, Any] | None = None,
    **settings: Any,
) -> AsyncIterator[LiveRig]:
    async with anyio.create_task_group() as group:
        rig = LiveRig(tmp_path, dovecot, smtp, number, group, watcher, imap, **settings)
        await rig.start()
        yield rig
        group.cancel_scope.cancel()
