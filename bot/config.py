"""The bot's configuration: a TOML file validated into frozen pydantic models.

Every mistake becomes one ConfigError naming the file, line and dotted key, so that a typo stops the bot at start-up
with a message that says how to fix it, instead of a silent default or a stack trace (fail closed). Secrets never live
in the file: it names environment variables (`*_env`), and load_config checks that those the bot will use are set.
"""

from __future__ import annotations

import difflib
import fnmatch
import ipaddress
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from bot.durations import Duration, format_duration

Loc = tuple[str | int, ...]
CHANNELS = ("slack", "email", "web")
"""Every channel, in the order they answer when bot.answerers does not say otherwise."""


class ConfigError(Exception):
    """A configuration the bot refuses to run with; `str()` is one line: `path:line: key: what is wrong; what to do`."""

    code = "BAD_CONFIG"

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.key = key
        self.line = line

    def __str__(self) -> str:
        where = self.path or ""
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        return ": ".join(part for part in (where, self.key, self.message) if part)


class _FieldProblem(ValueError):
    """A validator's complaint about a key below the one it validates (a list item, or the field a model check blames),
    so the error names `escalate_after` or `agents[1]` rather than the whole table."""

    def __init__(self, message: str, *within: str | int):
        super().__init__(message)
        self.within = within


def _quote(value: object) -> str:
    # TOML and the examples use double quotes; repr() would show single ones.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' if isinstance(value, str) else str(value)


def _shaped(pattern: str, problem: str) -> AfterValidator:
    """A validator for one string shape; in a `list[...]` pydantic adds the item's index to the error's key."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{_quote(value)} {problem}")
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
        raise ValueError(f'{_quote(glob)} is a bad glob: {problem}; write e.g. "deploy-*" or "build-[0-9]"')
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
            raise _FieldProblem(
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
                raise _FieldProblem(f'{_quote(name)} is not a channel; use "slack", "email" or "web"', index)
            if name in (answerers or [])[:index]:
                raise _FieldProblem(f"{_quote(name)} is listed twice; list each channel once", index)
        return answerers


_LISTEN = re.compile(r"(?:\[(?P<v6>[^\]]*)\]|(?P<host>[^:\[\]]+)):(?P<port>[0-9]+)")


def _split_listen(listen: str) -> tuple[str, int]:
    match = _LISTEN.fullmatch(listen)
    if match is None:
        if listen.count(":") > 1 and not listen.startswith("["):
            raise ValueError(f'{_quote(listen)} is a bare IPv6 address; put it in brackets, e.g. "[::1]:8765"')
        raise ValueError(f'{_quote(listen)} is not host:port; write e.g. "127.0.0.1:8765" or "[::1]:8765"')
    host, port = match["v6"] if match["v6"] is not None else match["host"], int(match["port"])
    if match["v6"] is not None:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f'{_quote(listen)}: "{host}" is not an IPv6 address; write e.g. "[::1]:8765"') from None
    if port > 65535:
        raise ValueError(f"{_quote(listen)}: port {port} is out of range; use 0-65535 (0 picks a free port)")
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
            raise _FieldProblem(
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
            raise ValueError(f'{_quote(api_url)} is not an http(s) URL; write e.g. "https://slack.com/api/"')
        return api_url if api_url.endswith("/") else api_url + "/"  # the Slack SDK joins method names onto it

    @model_validator(mode="after")
    def _check_mode_secrets(self) -> SlackSettings:
        if self.mode == "socket" and self.app_token_env is None:
            raise _FieldProblem(
                'required when mode = "socket"; set app_token_env = "SLACK_APP_TOKEN" and export the xapp- token',
                "app_token_env",
            )
        if self.mode == "http" and self.signing_secret_env is None:
            raise _FieldProblem(
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
            raise _FieldProblem("required when the other half of the login is given; set both or neither", missing)
        return self


class ImapSettings(_Settings):
    """The mailbox the bot polls for replies; processed_folder, when set, is where handled mail is moved."""

    host: str = Field(min_length=1)
    port: int = Field(default=993, ge=1, le=65535)
    security: Literal["tls", "starttls", "none"] = "tls"
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
            raise _FieldProblem(
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
                raise _FieldProblem(
                    f"'{name}' is listed but {why}; configure it or remove '{name}' from bot.answerers",
                    "bot",
                    "answerers",
                )
        if not self.answerers:
            raise _FieldProblem(
                "no channel is enabled, so no question could be answered; enable [web], [slack] or [email]",
                "web",
                "enabled",
            )
        return self


def load_config(path: str | os.PathLike[str] | None, *, environ: Mapping[str, str] | None = None) -> Config:
    """Read, validate and check a config file; `None` gives the embedded default (web inbox alone).

    Raises ConfigError for an unreadable file, bad TOML, a bad value, or a missing environment variable.
    """
    if path is None:
        return parse_config("", environ=environ)
    shown = os.fspath(path)
    try:
        with open(shown, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        raise ConfigError(
            "no such config file; copy config.example.toml there, or give no config to run the web inbox alone",
            path=shown,
        ) from None
    except OSError as err:
        raise ConfigError(f"cannot read the config file ({err.strerror}); check its permissions", path=shown) from err
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError("the file is not UTF-8 text; save it as UTF-8", path=shown, line=None) from err
    return parse_config(text, path=shown, environ=environ)


def parse_config(text: str, *, path: str | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Validate config text; `path` names it in errors and anchors a relative store path (else the current directory).

    Raises ConfigError naming the first problem, its dotted key and, where it can be found, its line.
    """
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _toml_error(err, path) from err
    if secret := _literal_secret(raw):
        name = str(secret[-1])
        raise _error(
            f'secrets never go in the config file; set {name}_env = "NAME" and export NAME', secret, text, path
        )
    try:
        config = Config.model_validate(raw)
    except ValidationError as err:
        loc, message = _explain(err.errors()[0])
        raise _error(message, loc, text, path) from err
    env = os.environ if environ is None else environ
    for loc, name in _required_environment(config):
        if problem := _env_problem(name, env, noun=str(loc[-1]).removesuffix("_env").rsplit("_", 1)[-1]):
            raise _error(problem, loc, text, path)
    base = os.path.dirname(os.path.abspath(path)) if path is not None else os.getcwd()
    if config.store.path == ":memory:":  # SQLite's in-memory database is not a file
        return config
    store = StoreSettings(path=os.path.normpath(os.path.join(base, os.path.expanduser(config.store.path))))
    return config.model_copy(update={"store": store})


def resolve_secret(env_name: str, environ: Mapping[str, str] | None = None) -> str:
    """The secret in environment variable `env_name`; raises ConfigError when it is unset or empty."""
    env = os.environ if environ is None else environ
    if problem := _env_problem(env_name, env, noun="secret"):
        raise ConfigError(problem)
    return env[env_name]


def _env_problem(name: str, environ: Mapping[str, str], *, noun: str) -> str | None:
    value = environ.get(name)
    if value is None:
        return f"environment variable {name} is not set; export it (the {noun} itself never goes in the file)"
    if not value.strip():
        return f"environment variable {name} is empty; export the {noun} in it"
    return None


def _required_environment(config: Config) -> Iterator[tuple[Loc, str]]:
    # Only the channels that will run need their secrets; a disabled [slack] table may keep stale names.
    if config.server.api_token_env is not None:
        yield ("server", "api_token_env"), config.server.api_token_env
    for channel in config.answerers:
        if channel == "slack" and (slack := config.slack) is not None:
            yield ("slack", "bot_token_env"), slack.bot_token_env
            if slack.mode == "socket" and slack.app_token_env is not None:
                yield ("slack", "app_token_env"), slack.app_token_env
            if slack.mode == "http" and slack.signing_secret_env is not None:
                yield ("slack", "signing_secret_env"), slack.signing_secret_env
        elif channel == "email" and (email := config.email) is not None:
            yield ("email", "token_secret_env"), email.token_secret_env
            if email.smtp.password_env is not None:
                yield ("email", "smtp", "password_env"), email.smtp.password_env
            yield ("email", "imap", "password_env"), email.imap.password_env


def _literal_secret(table: Mapping[str, Any], loc: Loc = ()) -> Loc | None:
    # Checked before pydantic so that `bot_token = "xoxb-…"` earns advice rather than "unknown key".
    for key, value in table.items():
        here = (*loc, key)
        if key.lower().endswith(("token", "secret", "password")):
            return here
        if key == "labels":  # label names are the user's own words, not config keys
            continue
        tables = [(here, value)] if isinstance(value, dict) else []
        if isinstance(value, list):
            tables = [((*here, index), item) for index, item in enumerate(value) if isinstance(item, dict)]
        for where, sub in tables:
            if found := _literal_secret(sub, where):
                return found
    return None


def _explain(error: ErrorDetails) -> tuple[Loc, str]:
    """Turn one pydantic error into (where, what to do), in the words of the file rather than of Python."""
    loc: Loc = tuple(error["loc"])
    kind, given = error["type"], error["input"]
    cause = error.get("ctx", {}).get("error")
    if kind == "value_error" and isinstance(cause, Exception):
        return (*loc, *cause.within) if isinstance(cause, _FieldProblem) else loc, str(cause)
    if kind == "extra_forbidden":
        known = list(model.model_fields) if (model := _model_at(loc[:-1])) else []
        if close := difflib.get_close_matches(str(loc[-1]), known, n=1):
            return loc, f'unknown key; did you mean "{close[0]}"?'
        return loc, "unknown key; the keys here are " + ", ".join(known) if known else "unknown key; remove it"
    if kind == "missing":
        if _model_at(loc) is not None:
            return loc, f"is required; add a [{_format_key(loc)}] table"
        return loc, f"is required; add {loc[-1]} = ..." + (f" to [{_format_key(loc[:-1])}]" if loc[:-1] else "")
    if kind == "literal_error":
        return loc, f"{_quote(given)} is not allowed; use " + str(error.get("ctx", {})["expected"]).replace("'", '"')
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return loc, f"{_quote(given)} should be a table, e.g. [{_format_key(loc)}] or {{ key = ... }}"
    if kind == "list_type":
        return loc, f"{_quote(given)} should be a list, e.g. [{_quote(given) if isinstance(given, str) else ''}]"
    return loc, f"{_quote(given)} is not valid here: {error['msg'][:1].lower()}{error['msg'][1:]}"


def _model_at(loc: Loc) -> type[BaseModel] | None:
    model: type[BaseModel] | None = Config
    for part in loc:
        if isinstance(part, str) and model is not None:
            field = model.model_fields.get(part)
            model = _model_in(field.annotation) if field is not None else None
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):  # `X | None`, `list[X]`
        if found := _model_in(arg):
            return found
    return None


def _format_key(loc: Loc) -> str:
    key = ""
    for part in loc:
        key += f"[{part}]" if isinstance(part, int) else f".{part}" if key else part
    return key


def _error(message: str, loc: Loc, text: str, path: str | None) -> ConfigError:
    return ConfigError(message, path=path, key=_format_key(loc) or None, line=_line_of(text, loc))


def _toml_error(err: tomllib.TOMLDecodeError, path: str | None) -> ConfigError:
    where = re.search(r" \(at line (\d+), column (\d+)\)", str(err))
    reason = str(err)[: where.start()] if where else str(err)
    return ConfigError(
        f"not valid TOML ({reason[:1].lower()}{reason[1:]}); check the quotes, brackets, commas and = signs",
        path=path,
        line=int(where[1]) if where else None,
    )


_HEADER = re.compile(r"\s*(\[\[?)\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?")
_KEY = re.compile(r"\s*([A-Za-z0-9_-]+(?:\s*\.\s*[A-Za-z0-9_-]+)*)\s*=")


def _line_of(text: str, loc: Loc) -> int | None:
    """Best effort: the line that defines `loc`, else the nearest enclosing key or table header; None if neither."""
    table: Loc = ()
    arrays: dict[str, int] = {}
    best, best_depth = None, 0
    for number, line in enumerate(text.splitlines(), start=1):
        if header := _HEADER.fullmatch(line):
            parts = tuple(part.strip().strip('"') for part in header[2].split("."))
            if header[1] == "[[":
                arrays[header[2]] = arrays.get(header[2], -1) + 1
                parts = (*parts, arrays[header[2]])
            here = table = parts
        elif key := _KEY.match(line):
            here = (*table, *(part.strip() for part in key[1].split(".")))
        else:
            continue
        if len(here) > best_depth and loc[: len(here)] == here:
            best, best_depth = number, len(here)
            if best_depth == len(loc):
                return best
    return best
