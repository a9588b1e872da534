"""The configuration's shape: frozen pydantic models, one per TOML table, with the checks a value needs.

Loading the file and turning validation errors into one-line messages is `bot.config`'s job.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from bot.durations import Duration, format_duration
from bot.errors import BotErrorCode, HandraiseError

CHANNELS = ("slack", "email", "web")
"""Every channel, in the order they answer when bot.answerers does not say otherwise."""


class FieldProblem(HandraiseError, ValueError):
    """A validator's complaint about a key below the one it validates (a list item, or the field a model check blames),
    so the error names `escalate_after` or `agents[1]` rather than the whole table."""

    code = BotErrorCode.BAD_CONFIG

    def __init__(self, message: str, *within: str | int):
        super().__init__(message)
        self.within = within


def quote_value(value: object) -> str:
    # TOML and the examples use double quotes; repr() would show single ones.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if isinstance(value, str) else str(value)


_q = quote_value


def _shaped(pattern: str, problem: str) -> AfterValidator:
    """A validator for one string shape; in a `list[...]` pydantic adds the item's index to the error's key."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{_q(value)} {problem}")
        return value

    return AfterValidator(check)


def _non_empty(problem: str) -> AfterValidator:
    def check(items: list[str]) -> list[str]:
        if not items:
            raise ValueError(problem)
        return items

    return AfterValidator(check)


_NOT_A_USER_ID = 'is not a Slack user id; names change, so write ids like "U0123ABCD" (profile → ⋮ → Copy member ID)'
EnvName = Annotated[
    str,
    _shaped(
        r"[A-Za-z_][A-Za-z0-9_]*",
        'is not an environment variable name; write the name (e.g. "SLACK_BOT_TOKEN"), never the secret itself',
    ),
]
SlackUserId = Annotated[str, _shaped(r"[UW][A-Z0-9]{2,}", _NOT_A_USER_ID)]
SlackResponder = Annotated[str, _shaped(r"[UWS][A-Z0-9]{2,}", _NOT_A_USER_ID + ' or usergroup ids like "S0123ABCD"')]
SlackDestination = Annotated[
    str, _shaped(r"[CG][A-Z0-9]{2,}|#[^\s#]+", 'is not a channel; write its id ("C0123ABCD") or name ("#deploys")')
]
EmailAddress = Annotated[
    str, _shaped(r"[^@\s]+@[^@\s]+\.[^@\s.]+", 'is not an email address; write e.g. "oncall@example.org"')
]
EmailResponder = Annotated[
    str,
    _shaped(
        r"[^@\s]*@[^@\s]+\.[^@\s.]+",
        'is neither an address nor a domain; write e.g. "alice@example.org" or "@example.org"',
    ),
]


def _check_glob(glob: str) -> str:
    # fnmatch reads an unbalanced "[" literally, so a typo would silently match nothing the author meant.
    depth = 0
    for char in glob:
        depth = 1 if char == "[" else depth - 1 if char == "]" else depth
        if depth < 0:
            break
    if not glob.strip() or depth != 0:
        problem = "it is empty" if not glob.strip() else "unbalanced [ ]"
        raise ValueError(f'{_q(glob)} is a bad glob: {problem}; write e.g. "deploy-*" or "build-[0-9]"')
    return glob


Glob = Annotated[str, AfterValidator(_check_glob)]


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Subscription(_Settings):
    """Which requests a channel takes (agent globs, labels, agentless), who may answer, and how long to wait."""

    agents: (
        Annotated[list[Glob], _non_empty("is empty, so it matches no agent; remove it to match every agent")] | None
    ) = None
    labels: dict[str, str] = Field(default_factory=dict)
    agentless: bool | None = None
    responders: list[str] = Field(default_factory=list)
    escalate_after: Duration | None = None
    expire_after: Duration | None = None

    @model_validator(mode="after")
    def _check_expiry_after_escalation(self) -> Subscription:
        escalate, expire = self.escalate_after, self.expire_after
        if escalate is not None and expire is not None and escalate >= expire:
            raise FieldProblem(
                f'"{format_duration(expire)}" is not longer than escalate_after = "{format_duration(escalate)}", '
                "so the request would expire before it escalates; raise expire_after or lower escalate_after",
                "expire_after",
            )
        return self

    def matches(self, agent_id: str | None, agent_name: str | None, agent_labels: Mapping[str, str]) -> bool:
        """Whether this subscription takes a request from that agent; `agent_id=None` is a request with no agent."""
        has_agent_selector = self.agents is not None or bool(self.labels)
        if agent_id is None:
            return self.agentless if self.agentless is not None else not has_agent_selector
        names = [name for name in (agent_id, agent_name) if name is not None]
        if self.agents is not None and not any(fnmatch.fnmatchcase(n, glob) for glob in self.agents for n in names):
            return False
        if any(agent_labels.get(key) != value for key, value in self.labels.items()):
            return False
        # A subscription with only `agentless = true` is for agentless requests, not a catch-all.
        return has_agent_selector or self.agentless is not True

    def describe(self) -> str:
        """A short phrase for `handraise routes`, e.g. "agents deploy-* with labels team=infra"."""
        if self.agents is None and not self.labels:
            if self.agentless is None:
                return "every request"
            return "agentless requests only" if self.agentless else "every request with an agent"
        phrase = "agents" if self.agents is None else "agents " + ", ".join(self.agents)
        if self.labels:
            phrase += " with labels " + ", ".join(f"{key}={value}" for key, value in self.labels.items())
        return phrase + (" and agentless requests" if self.agentless else "")


class WebSubscription(Subscription):
    """A web inbox route: the inbox shows the request to the listed responders (everyone when empty)."""


class SlackSubscription(Subscription):
    """A Slack route: post to a channel, or as a DM to a user, in one thread per agent or per request."""

    channel: SlackDestination | None = None
    user: SlackUserId | None = None
    thread: Literal["agent", "request"] = "agent"
    mention: list[SlackUserId] = Field(default_factory=list)
    responders: list[SlackResponder] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_destination(self) -> SlackSubscription:
        if self.channel is None and self.user is None:
            raise ValueError('give a destination: channel = "#deploys" or user = "U0123"')
        if self.channel is not None and self.user is not None:
            raise ValueError('give one destination, not both: channel = "#deploys" or user = "U0123"')
        return self


class EmailSubscription(Subscription):
    """An email route: send the question to these addresses; responders may be addresses or "@domain"."""

    to: Annotated[list[EmailAddress], _non_empty('is empty; list at least one address, e.g. to = ["a@example.org"]')]
    responders: list[EmailResponder] = Field(default_factory=list)


class BotSettings(_Settings):
    """Which channels answer, in waterfall order; unset means every enabled channel, in CHANNELS order."""

    answerers: list[str] | None = None

    @field_validator("answerers")
    @classmethod
    def _check_answerers(cls, answerers: list[str] | None) -> list[str] | None:
        if answerers == []:
            raise ValueError("is empty, so no question could be answered; list channels or remove the key")
        for index, name in enumerate(answerers or ()):
            if name not in CHANNELS:
                raise FieldProblem(f'{_q(name)} is not a channel; use "slack", "email" or "web"', index)
            if name in (answerers or [])[:index]:
                raise FieldProblem(f"{_q(name)} is listed twice; list each channel once", index)
        return answerers


_LISTEN = re.compile(r"(?:\[(?P<v6>[^\]]*)\]|(?P<host>[^:\[\]]+)):(?P<port>[0-9]+)")


def _split_listen(listen: str) -> tuple[str, int]:
    match = _LISTEN.fullmatch(listen)
    if match is None:
        if listen.count(":") > 1 and not listen.startswith("["):
            raise ValueError(f'{_q(listen)} is a bare IPv6 address; put it in brackets, e.g. "[::1]:8765"')
        raise ValueError(f'{_q(listen)} is not host:port; write e.g. "127.0.0.1:8765" or "[::1]:8765"')
    host, port = match["v6"] if match["v6"] is not None else match["host"], int(match["port"])
    if match["v6"] is not None:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f'{_q(listen)}: "{host}" is not an IPv6 address; write e.g. "[::1]:8765"') from None
    if port > 65535:
        raise ValueError(f"{_q(listen)}: port {port} is out of range; use 0-65535 (0 picks a free port)")
    return host, port


def _check_listen(listen: str) -> str:
    _split_listen(listen)
    return listen


class ServerSettings(_Settings):
    """The local HTTP API that agents in other processes ask through, and the web inbox it serves."""

    listen: Annotated[str, AfterValidator(_check_listen)] = "127.0.0.1:8765"
    api_token_env: EnvName | None = None

    @property
    def host(self) -> str:
        """The host to bind, without the brackets of an IPv6 address."""
        return _split_listen(self.listen)[0]

    @property
    def port(self) -> int:
        return _split_listen(self.listen)[1]

    @property
    def is_loopback(self) -> bool:
        """Whether only this machine can connect (127.0.0.0/8, ::1, localhost)."""
        if self.host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:  # a host name other than localhost may resolve to anything
            return False

    @model_validator(mode="after")
    def _check_token_off_loopback(self) -> ServerSettings:
        if self.api_token_env is None and not self.is_loopback:
            raise FieldProblem(
                "required when server.listen is not a loopback address (anyone on the network could answer); "
                'set api_token_env = "NAME" and export NAME',
                "api_token_env",
            )
        return self


class StoreSettings(_Settings):
    """Where pending questions and the audit log live (SQLite); load_config makes a relative path absolute."""

    path: str = Field(default="handraise.db", min_length=1)


class WebSettings(_Settings):
    """The local web inbox, on by default so that a bot with no config still answers every question."""

    enabled: bool = True
    responders: list[str] = Field(default_factory=list)
    subscriptions: list[WebSubscription] = Field(default_factory=list)


class SlackSettings(_Settings):
    """The Slack app: Socket Mode (no public URL) or HTTP events (signed requests)."""

    enabled: bool = True
    mode: Literal["socket", "http"] = "http"
    bot_token_env: EnvName = "SLACK_BOT_TOKEN"
    app_token_env: EnvName | None = None
    signing_secret_env: EnvName | None = "SLACK_SIGNING_SECRET"
    api_url: str = "https://slack.com/api/"
    subscriptions: list[SlackSubscription] = Field(default_factory=list)

    @field_validator("api_url")
    @classmethod
    def _check_api_url(cls, api_url: str) -> str:
        if not re.match(r"https?://[^/\s]+", api_url):
            raise ValueError(f'{_q(api_url)} is not an http(s) URL; write e.g. "https://slack.com/api/"')
        return api_url if api_url.endswith("/") else api_url + "/"  # the Slack SDK joins method names onto it

    @model_validator(mode="after")
    def _check_mode_secrets(self) -> SlackSettings:
        if self.mode == "socket" and self.app_token_env is None:
            raise FieldProblem(
                'required when mode = "socket"; set app_token_env = "SLACK_APP_TOKEN" and export the xapp- token',
                "app_token_env",
            )
        if self.mode == "http" and self.signing_secret_env is None:
            raise FieldProblem(
                'required when mode = "http", to verify that requests come from Slack; '
                'set signing_secret_env = "SLACK_SIGNING_SECRET" and export it',
                "signing_secret_env",
            )
        return self


class SmtpSettings(_Settings):
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


class ImapSettings(_Settings):
    """The mailbox the bot polls for replies; processed_folder, when set, is where handled mail is moved."""

    host: str = Field(min_length=1)
    port: int = Field(default=993, ge=1, le=65535)
    security: Literal["tls", "none"] = "tls"  # aioimaplib has no STARTTLS: refused here, not at first connect
    username: str
    password_env: EnvName
    mailbox: str = "INBOX"
    processed_folder: str | None = None
    poll_interval: Duration = timedelta(seconds=60)


class EmailSettings(_Settings):
    """The email channel: questions go out by SMTP, replies to the plus-address of `address` come back by IMAP."""

    enabled: bool = True
    address: EmailAddress
    from_name: str = "handraise"
    smtp: SmtpSettings
    imap: ImapSettings
    token_secret_env: EnvName = "HANDRAISE_EMAIL_SECRET"
    confirmations: bool = True
    require_dmarc: bool = False
    trusted_authserv_id: str | None = None
    subscriptions: list[EmailSubscription] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_dmarc(self) -> EmailSettings:
        if self.require_dmarc and self.trusted_authserv_id is None:
            raise FieldProblem(
                "required when require_dmarc = true: only Authentication-Results from your own server can be "
                'trusted; set it to that header\'s first word, e.g. "mx.example.org"',
                "trusted_authserv_id",
            )
        return self


class Config(_Settings):
    """The whole file; `Config()` is the embedded default, the web inbox alone on 127.0.0.1:8765."""

    bot: BotSettings = Field(default_factory=BotSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    slack: SlackSettings | None = None
    email: EmailSettings | None = None

    @property
    def answerers(self) -> list[str]:
        """The channels that run, in waterfall order."""
        if self.bot.answerers is not None:
            return list(self.bot.answerers)
        return [name for name in CHANNELS if self._channel_state(name) == "enabled"]

    def _channel_state(self, name: str) -> Literal["absent", "disabled", "enabled"]:
        settings: WebSettings | SlackSettings | EmailSettings | None = getattr(self, name)
        return "absent" if settings is None else "enabled" if settings.enabled else "disabled"

    @model_validator(mode="after")
    def _check_answerers(self) -> Config:
        for name in self.bot.answerers or ():
            state = self._channel_state(name)
            if state != "enabled":
                why = f"there is no [{name}] table" if state == "absent" else f"[{name}] has enabled = false"
                raise FieldProblem(
                    f"'{name}' is listed but {why}; configure it or remove '{name}' from bot.answerers",
                    "bot",
                    "answerers",
                )
        if not self.answerers:
            raise FieldProblem(
                "no channel is enabled, so no question could be answered; enable [web], [slack] or [email]",
                "web",
                "enabled",
            )
        return self
