"""An email channel on a real ledger and seam, with a recording mail sender: no network, every reply by hand."""

from __future__ import annotations

import secrets
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import anyio

from bot.channels.base import DeliveryError, install_channel
from bot.email.channel import EmailChannel, Handled
from bot.email.settings import EmailSettings
from bot.questions.clock import Clock
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.store.sqlite.async_store import SqliteStore
from core import (
    AbortSignal,
    AgentRegistry,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    Context,
    UserQuestionError,
    UserQuestionService,
)
from tests.bot.fakes import sync_store
from tests.fake_clock import FakeClock

SECRET = "email-tests-secret-0123456789abcdef"
BOT = "bot@example.org"


def email_settings(subscription: dict[str, Any] | None = None, **overrides: Any) -> EmailSettings:
    raw: dict[str, Any] = {
        "address": BOT,
        "smtp": {"host": "127.0.0.1", "port": 2525, "security": "none"},
        "imap": {"host": "127.0.0.1", "port": 1143, "security": "none", "username": BOT, "password_env": "IMAP_PW"},
        "subscriptions": [
            subscription or {"to": ["alice@example.org"], "responders": ["alice@example.org", "@ops.example.org"]}
        ],
    }
    raw.update(overrides)
    return EmailSettings.model_validate(raw)


class RecordingSender:
    """Keeps what the channel sends; `fail_with` makes every send fail like an unreachable SMTP server."""

    def __init__(self) -> None:
        self.sent: list[EmailMessage] = []
        self.fail_with: str | None = None
        self._changed = anyio.Event()

    async def send(self, message: EmailMessage) -> None:
        if self.fail_with is not None:
            raise DeliveryError(self.fail_with)
        self.sent.append(message)
        self._changed.set()
        self._changed = anyio.Event()

    async def aclose(self) -> None:
        """Nothing is kept open between mails."""

    async def wait_for(self, count: int) -> list[EmailMessage]:
        with anyio.fail_after(5):
            while len(self.sent) < count:
                await self._changed.wait()
        return self.sent


class EmailRig:
    def __init__(self, tmp_path: Path, settings: EmailSettings | None = None, clock: Clock | None = None) -> None:
        self.settings = settings or email_settings()
        self.clock = clock or FakeClock()
        self.ledger = Ledger(SqliteStore.open(tmp_path / "handraise.db"), self.clock)
        self.sender = RecordingSender()
        self.handled: list[Handled] = []
        self.channel = EmailChannel(self.settings, secret=SECRET, sender=self.sender, on_handled=self.handled.append)
        self.ctx = Context()
        self.ctx.plugin(AgentRegistry)
        self.ctx.plugin(UserQuestionService)
        install_channel(self.ctx, self.channel, Router(["email"], {"email": self.settings.subscriptions}), self.ledger)
        self.outcome: list[Any] = []

    async def ask(self, *questions: AskUserQuestionItem, signal: AbortSignal | None = None) -> None:
        service = self.ctx.user_questions
        assert service is not None
        try:
            request = AskUserQuestionRequest(questions=list(questions), signal=signal)
            self.outcome.append(await service.ask(request))
        except UserQuestionError as error:
            self.outcome.append(error)

    async def question_mail(self) -> EmailMessage:
        return (await self.sender.wait_for(1))[0]

    def question_id(self) -> str:
        (record,) = sync_store(self.ledger.store).list_questions()
        return record.id


def reply_to(
    original: EmailMessage,
    text: str,
    *,
    sender: str = "Alice <alice@example.org>",
    to: str | None = None,
    html: str | None = None,
    extra: dict[str, str] | None = None,
    subject: str | None = None,
    references: bool = True,
) -> bytes:
    """A reply to `original` as a mail client would send it: to its Reply-To, threaded, quoting it."""
    reply = EmailMessage()
    reply["From"] = sender
    reply["To"] = to if to is not None else str(original["Reply-To"])
    reply["Subject"] = subject if subject is not None else f"Re: {original['Subject']}"
    reply["Message-ID"] = f"<{secrets.token_hex(8)}@client.example.org>"
    if references:
        reply["In-Reply-To"] = str(original["Message-ID"])
        reply["References"] = str(original["Message-ID"])
    for name, value in (extra or {}).items():
        reply[name] = value
    if text or html is None:
        reply.set_content(text)
    if html is not None:
        if text:
            reply.add_alternative(html, subtype="html")
        else:
            reply.set_content(html, subtype="html")
    return reply.as_bytes()


def body_of(message: EmailMessage) -> str:
    part = message.get_body(("plain",))
    assert part is not None
    content = part.get_content()
    assert isinstance(content, str)
    return content
