"""The bot's configuration: a TOML file validated into frozen pydantic models.

Every mistake becomes one ConfigError naming the file, line and dotted key, so that a typo stops the bot at start-up
with a message that says how to fix it, instead of a silent default or a stack trace (fail closed). Secrets never live
in the file: it names environment variables (`*_env`), and load_config checks that those the bot will use are set.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from bot.settings.errors import ConfigError
from bot.settings.secrets import env_problem
from bot.settings.tables import BotSettings as BotSettings
from bot.settings.tables import ChannelSettings as ChannelSettings
from bot.settings.tables import EnvName as EnvName
from bot.settings.tables import FieldProblem as FieldProblem
from bot.settings.tables import Glob as Glob
from bot.settings.tables import ServerSettings as ServerSettings
from bot.settings.tables import StoreSettings as StoreSettings
from bot.settings.tables import Subscription as Subscription
from bot.settings.tables import quote_value as _q

if TYPE_CHECKING:
    from bot.channels.kind import KindRegistry
    from bot.settings.tables import Config as Config
else:
    from bot.kinds import KINDS

    Config = KINDS.config_model()
    """The config file's model: `bot.settings.tables.Config` with one table per registered channel kind."""

Loc = tuple[str | int, ...]


def load_config(
    path: str | os.PathLike[str] | None, *, environ: Mapping[str, str] | None = None, check_environment: bool = True
) -> Config:
    """Read, validate and check a config file; `None` gives the embedded default (web inbox alone).

    Raises ConfigError for an unreadable file, bad TOML, a bad value, or a missing environment variable.
    """
    if path is None:
        return parse_config("", environ=environ, check_environment=check_environment)
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
    return parse_config(text, path=shown, environ=environ, check_environment=check_environment)


def parse_config(
    text: str,
    *,
    path: str | None = None,
    environ: Mapping[str, str] | None = None,
    check_environment: bool = True,
) -> Config:
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
        raise _error(message + _rule_named(raw, loc), loc, text, path) from err
    env = os.environ if environ is None else environ
    # Commands that only read the config (routes, history) need no secrets; serve and ask-time code do.
    for loc, name in required_environment(config) if check_environment else ():
        if problem := env_problem(name, env, noun=str(loc[-1]).removesuffix("_env").rsplit("_", 1)[-1]):
            raise _error(problem, loc, text, path)
    base = os.path.dirname(os.path.abspath(path)) if path is not None else os.getcwd()
    if config.store.path == ":memory:":  # SQLite's in-memory database is not a file
        return config
    path = os.path.normpath(os.path.join(base, os.path.expanduser(config.store.path)))
    return config.model_copy(update={"store": config.store.model_copy(update={"path": path})})


def required_environment(config: Config, kinds: KindRegistry | None = None) -> Iterator[tuple[Loc, str]]:
    """The environment variables `config` needs, with the key naming each: the API token and the secrets of the
    channels that will run (a disabled table may keep stale names). `kinds` defaults to the registered ones."""
    if kinds is None:
        from bot.kinds import KINDS as kinds
    if config.server.api_token_env is not None:
        yield ("server", "api_token_env"), config.server.api_token_env
    if config.store.url_env is not None:
        yield ("store", "url_env"), config.store.url_env
    for index, hook in enumerate(config.webhooks):
        yield ("webhooks", index, "secret_env"), hook.secret_env
    for name in config.answerers:
        kind, settings = kinds.get(name), config.channel(name)
        if kind is not None and settings is not None:
            for within, env_name in kind.secrets(settings):
                yield (name, *within), env_name


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


def _rule_named(raw: Mapping[str, Any], loc: Loc) -> str:
    """` (rule "git-read")` for a mistake inside a `[[rules]]` table: its id, or `config-<n>` by its place."""
    if len(loc) < 2 or loc[0] != "rules" or not isinstance(loc[1], int):
        return ""
    rules = raw.get("rules")
    table = rules[loc[1]] if isinstance(rules, list) and loc[1] < len(rules) else None
    given = table.get("id") if isinstance(table, dict) else None
    return f" (rule {_q(given if isinstance(given, str) else f'config-{loc[1] + 1}')})"


def _explain(error: ErrorDetails) -> tuple[Loc, str]:
    """Turn one pydantic error into (where, what to do), in the words of the file rather than of Python."""
    loc: Loc = tuple(error["loc"])
    kind, given = error["type"], error["input"]
    cause = error.get("ctx", {}).get("error")
    if kind == "value_error" and isinstance(cause, Exception):
        return (*loc, *cause.within) if isinstance(cause, FieldProblem) else loc, str(cause)
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
        return loc, f"{_q(given)} is not allowed; use " + str(error.get("ctx", {})["expected"]).replace("'", '"')
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return loc, f"{_q(given)} should be a table, e.g. [{_format_key(loc)}] or {{ key = ... }}"
    if kind == "list_type":
        return (
            loc,
            f"{_q(given)} should be a list, e.g. [{_q(given) if isinstance(given, str) else ''}]",
        )
    return loc, f"{_q(given)} is not valid here: {error['msg'][:1].lower()}{error['msg'][1:]}"


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
