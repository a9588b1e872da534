"""Sending through a real SMTP server (aiosmtpd on loopback): success, retry with backoff, and clear failures."""

from __future__ import annotations

from collections.abc import Iterator
from email.message import EmailMessage
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from bot.channel import DeliveryError
from bot.config import SmtpSettings
from bot.email.transport import SmtpSender
from tests.bot.program_rig import free_port

pytestmark = pytest.mark.anyio


class Handler:
    def __init__(self) -> None:
        self.received: list[Any] = []
        self.answers: list[str] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.answers:
            return self.answers.pop(0)
        self.received.append(envelope)
        return "250 OK"


@pytest.fixture
def smtp() -> Iterator[tuple[Handler, int]]:
    handler = Handler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield handler, port
    finally:
        controller.stop()


def message() -> EmailMessage:
    mail = EmailMessage()
    mail["From"] = "bot@example.org"
    mail["To"] = "alice@example.org, bob@example.org"
    mail["Subject"] = "hi"
    mail.set_content("hello")
    return mail


def sender(port: int, **options: Any) -> SmtpSender:
    settings = SmtpSettings(host="127.0.0.1", port=port, security="none")
    return SmtpSender(settings, None, first_delay=0.01, max_delay=0.05, **options)


async def test_a_mail_reaches_every_recipient(smtp: tuple[Handler, int]) -> None:
    handler, port = smtp
    await sender(port).send(message())
    (envelope,) = handler.received
    assert envelope.rcpt_tos == ["alice@example.org", "bob@example.org"]


async def test_a_temporary_failure_is_retried(smtp: tuple[Handler, int]) -> None:
    handler, port = smtp
    handler.answers = ["451 4.3.0 try again later", "421 4.7.0 busy"]
    await sender(port).send(message())
    assert len(handler.received) == 1


async def test_a_permanent_refusal_fails_at_once_naming_the_server(smtp: tuple[Handler, int]) -> None:
    handler, port = smtp
    handler.answers = ["554 5.7.1 rejected as spam"]
    with pytest.raises(DeliveryError, match=rf"127\.0\.0\.1:{port} refused the mail \(554"):
        await sender(port).send(message())
    assert handler.answers == []


async def test_an_unreachable_server_fails_after_the_retries_naming_it() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(DeliveryError, match=rf"SMTP server 127\.0\.0\.1:{port} after 3 attempts") as caught:
        await sender(port, attempts=3).send(message())
    assert caught.value.code == "DELIVERY_FAILED"
