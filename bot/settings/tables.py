"""The configuration's shape: frozen pydantic models, one per TOML table, with the checks a value needs.

Loading the file and turning validation errors into one-line messages is `bot.config`'s job.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from bot.errors import BotErrorCode, HandraiseError
from bot.settings.durations import Duration, format_duration


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


def shaped(pattern: str, problem: str) -> AfterValidator:
    """A validator for one string shape; in a `list[...]` pydantic adds the item's index to the error's key."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{_q(value)} {problem}")
        return value

    return AfterValidator(check)


def non_empty(problem: str) -> AfterValidator:
    def check(items: list[str]) -> list[str]:
        if not items:
            raise ValueError(problem)
        return items

    return AfterValidator(check)


EnvName = Annotated[
    str,
    shaped(
        r"[A-Za-z_][A-Za-z0-9_]*",
        'is not an environment variable name; write the name (e.g. "SLACK_BOT_TOKEN"), never the secret itself',
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


class Table(BaseModel):
    """A table of the config file: unknown keys are mistakes, and a loaded config never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)


DEFAULT_REMIND_MAX = 3


class Subscription(Table):
    """Which requests a channel takes (agent globs, labels, agentless), who may answer, and how long to wait."""

    agents: (
        Annotated[list[Glob], non_empty("is empty, so it matches no agent; remove it to match every agent")] | None
    ) = None
    labels: dict[str, str] = Field(default_factory=dict)
    agentless: bool | None = None
    responders: list[str] = Field(default_factory=list)
    escalate_after: Duration | None = None
    expire_after: Duration | None = None
    approvals: int = Field(default=1, ge=1, le=20, strict=True)
    """How many different responders must approve a plan review (or a question with an Approve option); any other
    answer from one of them ends it at once."""
    remind_every: Duration | None = None
    remind_max: int | None = Field(default=None, ge=1, le=100, strict=True)
    """At most this many reminders per question (with `remind_every`); unset: `DEFAULT_REMIND_MAX`."""

    @model_validator(mode="after")
    def _check_expiry_after_escalation(self) -> Subscription:
        escalate, expire = self.escalate_after, self.expire_after
        if escalate is not None and expire is not None and escalate >= expire:
            raise FieldProblem(
                f'"{format_duration(expire)}" is not longer than escalate_after = "{format_duration(escalate)}", '
                "so the request would expire before it escalates; raise expire_after or lower escalate_after",
                "expire_after",
            )
        if self.remind_max is not None and self.remind_every is None:
            raise FieldProblem(
                'has no effect without remind_every; add remind_every = "15m" (how often), or remove remind_max',
                "remind_max",
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


class BotSettings(Table):
    """Which channels answer, in waterfall order; unset means every enabled channel, in registration order."""

    answerers: list[str] | None = None

    @field_validator("answerers")
    @classmethod
    def _check_answerers(cls, answerers: list[str] | None) -> list[str] | None:
        # Whether a name is a channel at all is the config's check: only it knows the registered kinds.
        if answerers == []:
            raise ValueError("is empty, so no question could be answered; list channels or remove the key")
        for index, name in enumerate(answerers or ()):
            if name in (answerers or [])[:index]:
                raise FieldProblem(f"{_q(name)} is listed twice; list each channel once", index)
        return answerers


Sub = TypeVar("Sub", bound=Subscription)


class ChannelSettings(Table, Generic[Sub]):
    """What every channel's table has: `enabled`, and the subscriptions that route requests to it.

    A channel package subclasses `ChannelSettings[ItsSubscription]` and adds its own keys.
    """

    enabled: bool = True
    subscriptions: list[Sub] = Field(default_factory=list)


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


class ServerSettings(Table):
    """The local HTTP API that agents in other processes ask through, and the web inbox it serves."""

    listen: Annotated[str, AfterValidator(_check_listen)] = "127.0.0.1:8765"
    api_token_env: EnvName | None = None
    public_url: str | None = None
    """The URL people or Slack reach this server by through a proxy or tunnel; its host is answered to (see
    bot.api.guards), any other host name is refused."""
    max_waiting: int = Field(default=10_000, ge=1)
    """How many long-polls may wait at once; beyond it (or the open-files limit) agents get 503 and Retry-After."""
    log_format: Literal["text", "json"] = "text"
    """`json`: every line `serve` writes is one JSON object (`bot.logs`), for a log stack."""

    @field_validator("public_url")
    @classmethod
    def _check_public_url(cls, url: str | None) -> str | None:
        if url is not None and not re.fullmatch(
            r"https?://(\[[0-9A-Fa-f:.]+\]|[^/\s:@\[\]]+)(:[0-9]{1,5})?(/\S*)?", url
        ):
            raise ValueError(f'{_q(url)} is not an http(s) URL; write e.g. "https://handraise.example.org"')
        return url

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


class StoreSettings(Table):
    """Where pending questions and the audit log live: a SQLite file (`path`; load_config makes a relative path
    absolute), or PostgreSQL when `url_env` names the environment variable holding its `postgresql://` URL (the URL
    carries a password, so it never goes in the file). Several `serve` replicas can share one PostgreSQL database."""

    path: str = Field(default="handraise.db", min_length=1)
    url_env: EnvName | None = None
    lease_seconds: float = Field(default=15, ge=0.3, le=3600)
    """PostgreSQL only: a replica renews its lease every third of this; one silent for longer is taken for dead and
    another replica takes over its pending questions, its mailbox watcher and its Telegram polling."""


RULE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
LEARNED_PREFIX = "learned-"
"""The ids of learned rules start with this; a config rule's id may not, so `handraise rules remove` is unambiguous."""
SHELL_TOOL = "shell"
"""The `tool` of rules over shell commands, whichever agent's tool runs them."""


def _check_id(rule_id: str) -> str:
    if not RULE_ID.fullmatch(rule_id):
        raise ValueError(f'{_q(rule_id)} is not a rule id; use up to 64 letters, digits and - _ . : (e.g. "git-read")')
    if rule_id.startswith(LEARNED_PREFIX):
        raise ValueError(f"{_q(rule_id)} starts with {_q(LEARNED_PREFIX)}, as learned rules' ids do; rename it")
    return rule_id


def _check_pattern(pattern: str) -> str:
    if not pattern.strip():
        raise ValueError('is empty, so it matches nothing; write e.g. "git status*", or "*" for anything')
    return pattern


class RuleSettings(Table):
    """One `[[rules]]` table. `tool = "shell"` is every agent's shell tool; another value is a glob over the agent's
    tool name. `match` is a glob over the command (shell) or the tool input as canonical JSON; `*` spans anything."""

    id: Annotated[str, AfterValidator(_check_id)] | None = None
    tool: Annotated[str, AfterValidator(_check_pattern)]
    match: Annotated[str, AfterValidator(_check_pattern)]
    decision: Literal["allow", "deny"]
    agents: (
        Annotated[list[Glob], non_empty("is empty, so the rule is for no agent; remove it to cover every agent")] | None
    ) = None
    labels: dict[str, str] = Field(default_factory=dict)


def rule_id(rule: RuleSettings, index: int) -> str:
    """The rule's id: its own, else `config-<n>` by its place in the file, counting from 1."""
    return rule.id if rule.id is not None else f"config-{index + 1}"


def check_rule_ids(rules: list[RuleSettings]) -> None:
    """Raise FieldProblem (naming the second rule) when two rules have one id, given or by place."""
    seen: dict[str, int] = {}
    for index, rule in enumerate(rules):
        name = rule_id(rule, index)
        if name in seen:
            raise FieldProblem(
                f"is the id of rules[{seen[name]}] too; give each rule its own id",
                "rules",
                index,
                "id",
            )
        seen[name] = index


WebhookEvent = Literal["asked", "answered", "cancelled", "expired"]
DEFAULT_WEBHOOK_EVENTS: tuple[WebhookEvent, ...] = ("answered", "cancelled", "expired")


def _check_http_url(url: str) -> str:
    if not re.fullmatch(r"https?://(\[[0-9A-Fa-f:.]+\]|[^/\s:@\[\]]+)(:[0-9]{1,5})?([/?]\S*)?", url, re.IGNORECASE):
        raise ValueError(f'{_q(url)} is not an http(s) URL; write e.g. "https://ci.example.org/handraise"')
    return url


class WebhookSettings(Table):
    """One `[[webhooks]]` table: where each event of the listed kinds is POSTed, signed with the secret in the
    variable `secret_env` names (`bot.webhooks`)."""

    url: Annotated[str, AfterValidator(_check_http_url)]
    events: Annotated[
        list[WebhookEvent], non_empty('is empty, so nothing would be sent; list e.g. ["answered"] or remove it')
    ] = Field(default_factory=lambda: list(DEFAULT_WEBHOOK_EVENTS))
    secret_env: EnvName


def check_webhook_urls(webhooks: list[WebhookSettings]) -> None:
    """Raise FieldProblem (naming the second) when two webhooks have one URL: a delivery is known by its URL."""
    seen: dict[str, int] = {}
    for index, hook in enumerate(webhooks):
        if hook.url in seen:
            raise FieldProblem(
                f"is the url of webhooks[{seen[hook.url]}] too; list each URL once, with every event it wants",
                "webhooks",
                index,
                "url",
            )
        seen[hook.url] = index


class Config(Table):
    """The whole file. `bot`, `server` and `store` are here; each registered channel kind adds its own table (see
    `bot.kinds`, which builds the model that loading validates with). `Config()` is the embedded default, the web
    inbox alone on 127.0.0.1:8765."""

    kind_names: ClassVar[tuple[str, ...]] = ()
    """The registered channels, in their default waterfall order (set on the model `bot.kinds` builds)."""

    bot: BotSettings = Field(default_factory=BotSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    rules: list[RuleSettings] = Field(default_factory=list)
    """Permission prompts decided without a person, in file order (`bot.permissions.rules`)."""
    webhooks: list[WebhookSettings] = Field(default_factory=list)
    """Signed POSTs of questions' events to other systems, each delivered durably (`bot.webhooks`)."""

    if TYPE_CHECKING:
        # Each channel's table is a field of the model `bot.kinds` builds; read it as `config.slack`, or typed with
        # `channel(name)`.
        def __getattr__(self, name: str) -> Any: ...

    def channel(self, name: str) -> ChannelSettings[Any] | None:
        """The table of channel `name`, or None when the file has none (or no such channel is registered)."""
        settings = getattr(self, name, None) if name in self.kind_names else None
        return settings if isinstance(settings, ChannelSettings) else None

    @property
    def answerers(self) -> list[str]:
        """The channels that run, in waterfall order."""
        if self.bot.answerers is not None:
            return list(self.bot.answerers)
        return [name for name in self.kind_names if self._channel_state(name) == "enabled"]

    def _channel_state(self, name: str) -> str:
        settings = self.channel(name)
        return "absent" if settings is None else "enabled" if settings.enabled else "disabled"

    @model_validator(mode="after")
    def _check_rules(self) -> Config:
        check_rule_ids(self.rules)
        check_webhook_urls(self.webhooks)
        return self

    @model_validator(mode="after")
    def _check_answerers(self) -> Config:
        for index, name in enumerate(self.bot.answerers or ()):
            if name not in self.kind_names:
                listed = ", ".join(f'"{kind}"' for kind in self.kind_names[:-1])
                choices = f'{listed} or "{self.kind_names[-1]}"' if listed else f'"{self.kind_names[-1]}"'
                raise FieldProblem(f"{_q(name)} is not a channel; use {choices}", "bot", "answerers", index)
            state = self._channel_state(name)
            if state != "enabled":
                why = f"there is no [{name}] table" if state == "absent" else f"[{name}] has enabled = false"
                raise FieldProblem(
                    f"'{name}' is listed but {why}; configure it or remove '{name}' from bot.answerers",
                    "bot",
                    "answerers",
                )
        if self.kind_names and not self.answerers:
            tables = " or ".join(f"[{name}]" for name in self.kind_names)
            raise FieldProblem(f"no channel is enabled, so no question could be answered; enable {tables}")
        return self
