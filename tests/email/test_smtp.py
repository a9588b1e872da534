"""Sending through a real SMTP server (aiosmtpd on loopback): success, retry with backoff, clear failures, and one
logged-in connection reused for a burst of mails, replaced when the server drops it, closed when idle."""

from __future__ import annotations

from collections.abc import Iterator
from email.message import EmailMessage
from typing import Any

import anyio
import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from bot.channels.base import DeliveryError
from bot.email.sending import SmtpSender
from bot.email.settings import SmtpSettings
from tests.bot.program_rig import free_port

pytestmark = pytest.mark.anyio


class Handler:
    """Records mail, and counts the connections (by the client's address) and logins it saw."""

    def __init__(self) -> None:
        self.received: list[Any] = []
        self.answers: list[str] = []
        self.connections: set[Any] = set()
        self.logins = 0
        self.servers: list[Any] = []

    async def handle_EHLO(self, server: Any, session: Any, envelope: Any, hostname: str, responses: list[str]) -> Any:
        self.connections.add(session.peer)
        self.servers.append(server)
        session.host_name = hostname
        return responses

    def authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
        self.logins += 1
        return AuthResult(success=True)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.answers:
            return self.answers.pop(0)
        self.received.append(envelope)
        return "250 OK"

    def drop_connections(self) -> None:
        """The server side closes every connection, as a server does on a restart or an idle timeout."""
        for server in self.servers:
            server.transport.close()


@pytest.fixture
def smtp() -> Iterator[tuple[Handler, int]]:
    handler = Handler()
    port = free_port()
    controller = Controller(
        handler, hostname="127.0.0.1", port=port, authenticator=handler.authenticate, auth_require_tls=False
    )
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


def sender(port: int, *, login: bool = False, **options: Any) -> SmtpSender:
    settings = SmtpSettings(host="127.0.0.1", port=port, security="none")
    if login:
        settings = SmtpSettings(host="127.0.0.1", port=port, security="none", username="bot", password_env="SMTP_PW")
    return SmtpSender(settings, "secret" if login else None, first_delay=0.01, max_delay=0.05, **options)


async def test_a_mail_reaches_every_recipient(smtp: tuple[Handler, int]) -> None:
    handler, port = smtp
    mailer = sender(port)
    await mailer.send(message())
    await mailer.aclose()
    (envelope,) = handler.received
    assert envelope.rcpt_tos == ["alice@example.org", "bob@example.org"]


async def test_a_temporary_failure_is_retried(smtp: tuple[Handler, int]) -> None:
    handler, port = smtp
    handler.answers = ["451 4.3.0 try again later", "421 4.7.0 busy"]
    mailer = sender(port)
    await mailer.send(message())
    await mailer.aclose()
    assert len(handler.received) == 1


async def test_a_permanent_refusal_fails_at_once_naming_the_server(smtp: tuple[Handler, int]) -> None:
    handler, port = smtp
    handler.answers = ["554 5.7.1 rejected as spam"]
    mailer = sender(port)
    with pytest.raises(DeliveryError, match=rf"127\.0\.0\.1:{port} refused the mail \(554"):
        await mailer.send(message())
    assert not mailer.connected
    assert handler.answers == []


async def test_an_unreachable_server_fails_after_the_retries_naming_it() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(DeliveryError, match=rf"SMTP server 127\.0\.0\.1:{port} after 3 attempts") as caught:
        await sender(port, attempts=3).send(message())
    assert caught.value.code == "DELIVERY_FAILED"


async def test_a_burst_of_mails_shares_one_connection_and_one_login(smtp: tuple[Handler, int]) -> None:
    handler, port = smtp
    mailer = sender(port, login=True)
    for _ in range(5):
        await mailer.send(message())
    assert len(handler.received) == 5
    assert len(handler.connections) == 1
    assert handler.logins == 1
    await mailer.aclose()


async def test_a_connection_the_server_dropped_is_replaced_and_nothing_is_lost(smtp: tuple[Handler, int]) -> None:
    handler, port = smtp
    mailer = sender(port, login=True, attempts=1)  # the reconnect must not need a retry
    await mailer.send(message())
    handler.drop_connections()
    await mailer.send(message())
    await mailer.send(message())
    assert len(handler.received) == 3
    assert len(handler.connections) == 2
    assert handler.logins == 2
    await mailer.aclose()


async def test_a_421_on_the_kept_connection_reconnects_at_once(smtp: tuple[Handler, int]) -> None:
    handler, port = smtp
    mailer = sender(port, attempts=1)
    await mailer.send(message())
    handler.answers = ["421 4.4.2 idle too long, closing"]
    await mailer.send(message())
    assert len(handler.received) == 2
    assert len(handler.connections) == 2
    await mailer.aclose()


async def test_an_idle_connection_is_closed_and_the_next_mail_opens_a_new_one(smtp: tuple[Handler, int]) -> None:
    handler, port = smtp
    mailer = sender(port, idle_seconds=0.05)
    await mailer.send(message())
    assert mailer.connected
    with anyio.fail_after(5):
        while mailer.connected:
            await anyio.sleep(0.01)
    await mailer.send(message())
    assert len(handler.received) == 2
    assert len(handler.connections) == 2
    await mailer.aclose()


async def test_mails_sent_at_the_same_time_all_arrive_over_one_connection(smtp: tuple[Handler, int]) -> None:
    handler, port = smtp
    mailer = sender(port)
    async with anyio.create_task_group() as tasks:
        for _ in range(10):
            tasks.start_soon(mailer.send, message())
    assert len(handler.received) == 10
    assert len(handler.connections) == 1
    await mailer.aclose()
