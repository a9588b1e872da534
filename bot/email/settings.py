"""The `[email]` table: SMTP out, IMAP in, the reply-token secret, and the subscriptions."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Literal

from pydantic import Field, model_validator

from bot.settings.durations import Duration
from bot.settings.tables import ChannelSettings, EnvName, FieldProblem, Subscription, Table, non_empty, shaped

EmailAddress = Annotated[
    str, shaped(r"[^@\s]+@[^@\s]+\.[^@\s.]+", 'is not an email address; write e.g. "oncall@example.org"')
]
EmailResponder = Annotated[
    str,
    shaped(
        r"[^@\s]*@[^@\s]+\.[^@\s.]+",
        'is neither an address nor a domain; write e.g. "alice@example.org" or "@example.org"',
    ),
]


class EmailSubscription(Subscription):
    """An email route: send the question to these addresses; responders may be addresses or "@domain"."""

    to: Annotated[list[EmailAddress], non_empty('is empty; list at least one address, e.g. to = ["a@example.org"]')]
    responders: list[EmailResponder] = Field(default_factory=list)


class SmtpSettings(Table):
    """The server that sends questions; username and password_env go together."""

    host: str = Field(min_length=1)
    port: int = Field(default=587, ge=1, le=65535)
    security: Literal["starttls", "tls", "none"] = "starttls"
    username: str | None = None
    password_env: EnvName | None = None
    timeout: Duration = timedelta(seconds=30)

    @model_validator(mode="after")
    def _check_login(self) -> SmtpSettings:
        if (self.username is None) != (self.password_env is None):
            missing = "password_env" if self.password_env is None else "username"
            raise FieldProblem("required when the other half of the login is given; set both or neither", missing)
        return self


class ImapSettings(Table):
    """The mailbox the bot polls for replies; processed_folder, when set, is where handled mail is moved."""

    host: str = Field(min_length=1)
    port: int = Field(default=993, ge=1, le=65535)
    security: Literal["tls", "none"] = "tls"  # aioimaplib has no STARTTLS: refused here, not at first connect
    username: str
    password_env: EnvName
    mailbox: str = "INBOX"
    processed_folder: str | None = None
    poll_interval: Duration = timedelta(seconds=60)


class EmailSettings(ChannelSettings[EmailSubscription]):
    """The email channel: questions go out by SMTP, replies to the plus-address of `address` come back by IMAP."""

    address: EmailAddress
    from_name: str = "handraise"
    smtp: SmtpSettings
    imap: ImapSettings
    token_secret_env: EnvName = "HANDRAISE_EMAIL_SECRET"
    confirmations: bool = True
    require_dmarc: bool = False
    trusted_authserv_id: str | None = None

    @model_validator(mode="after")
    def _check_dmarc(self) -> EmailSettings:
        if self.require_dmarc and self.trusted_authserv_id is None:
            raise FieldProblem(
                "required when require_dmarc = true: only Authentication-Results from your own server can be "
                'trusted; set it to that header\'s first word, e.g. "mx.example.org"',
                "trusted_authserv_id",
            )
        return self
