"""A channel kind: everything the program needs to know about one way of reaching people, described once.

A channel package describes itself with one `ChannelKind` (its settings table, the secrets it needs, how it is
built) and `bot/kinds.py` registers it. Config loading, routing, install, `handraise routes` and the web inbox loop
over the registry; nothing else names a channel. `KindRegistry` checks each kind when it is registered, so a kind
missing a piece fails at start-up, loudly, instead of quietly getting no subscriptions (which would route every
request to it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, get_args, get_origin

from pydantic import Field, create_model

from bot.errors import BotErrorCode, HandraiseError
from bot.settings.tables import ChannelSettings, Config, Subscription

if TYPE_CHECKING:
    from bot.channels.base import Channel
    from bot.questions.ledger import Ledger

S = TypeVar("S", bound=ChannelSettings[Any])

Secret = tuple[tuple[str | int, ...], str]
"""An environment variable a channel needs: (its key inside the channel's table, the variable's name)."""
ChannelCommand = tuple[str, str]
"""A command of the channel's own, `handraise <channel> <command>`: "module:function", called with the channel's
settings and the rest of the command line (returning the exit code) only when it runs; and its one-line help."""

_NAME = re.compile(r"[a-z][a-z0-9_]{0,30}")
_RESERVED = frozenset(Config.model_fields) | {"api", "bot"}
"""Names a channel cannot take: the config's own tables, and the `via` of answers that come from no channel."""


class KindError(HandraiseError):
    """A channel kind is registered incompletely or twice: a programming error, raised at import."""

    code = BotErrorCode.BAD_CHANNEL_KIND


@dataclass(frozen=True)
class BuildContext:
    """What a kind's `build` gets besides its settings: the ledger answers go to, where secrets are read from, and
    how people read every registered channel's name (the web inbox says who answered "in Slack")."""

    ledger: Ledger
    environ: Mapping[str, str] | None = None
    titles: Mapping[str, str] = field(default_factory=dict[str, str])
    public_url: str | None = None
    """`[server] public_url`: where people and services outside reach this server (a phone's action buttons post
    back there, the web inbox's sign-in redirect URI)."""


@dataclass(frozen=True)
class ChannelKind(Generic[S]):
    """One channel, described for the program.

    `name` is the config table (`[slack]`) and the channel's name in the store and audit log; `title` is how people
    read it ("Slack", "the web inbox"). `settings` is the table's model. `secrets` lists the environment variables
    the channel needs when it runs (checked at load time, so a missing one stops `serve` before it starts). `build`
    makes the channel, reading its secrets. `on_by_default` gives the table its defaults when the file has none
    (the web inbox, so that a bot with no config answers every question). `commands` are the channel's own
    commands (`handraise <channel> <command>`), run by `bot.commands.run_channel_command`.
    """

    name: str
    title: str
    settings: type[S]
    secrets: Callable[[S], Iterable[Secret]]
    build: Callable[[S, BuildContext], Channel]
    on_by_default: bool = False
    commands: Mapping[str, ChannelCommand] = field(default_factory=dict[str, ChannelCommand])

    def check(self) -> None:
        """Raise KindError naming the first missing or malformed piece."""
        where = f"channel kind {self.name!r}"
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name) or self.name in _RESERVED:
            raise KindError(f"{where}: the name must be a short lower-case word that is not one of {sorted(_RESERVED)}")
        if not isinstance(self.title, str) or not self.title.strip():
            raise KindError(f"{where}: give a title people read, e.g. 'Slack'")
        if not (isinstance(self.settings, type) and issubclass(self.settings, ChannelSettings)):
            raise KindError(f"{where}: settings must be a ChannelSettings model")
        field = self.settings.model_fields.get("subscriptions")
        item = get_args(field.annotation)[0] if field is not None and get_args(field.annotation) else None
        if item is None or get_origin(field.annotation if field else None) is not list or not _is_subscription(item):
            raise KindError(
                f"{where}: {self.settings.__name__} must declare `subscriptions: list[...Subscription]`, "
                "or its subscriptions would never reach the router"
            )
        for piece in ("secrets", "build"):
            if not callable(getattr(self, piece)):
                raise KindError(f"{where}: {piece} must be a function")
        if self.on_by_default:
            try:
                self.settings()
            except Exception as error:
                raise KindError(f"{where}: on_by_default needs settings that work with no keys ({error})") from None


def _is_subscription(item: object) -> bool:
    return isinstance(item, type) and issubclass(item, Subscription)


class KindRegistry:
    """The registered channel kinds, in their default waterfall order."""

    def __init__(self, *kinds: ChannelKind[Any]) -> None:
        """Raises KindError for an incomplete kind or a name registered twice."""
        self._kinds: dict[str, ChannelKind[Any]] = {}
        for kind in kinds:
            if not isinstance(kind, ChannelKind):
                raise KindError(f"{kind!r} is not a ChannelKind")
            kind.check()
            if kind.name in self._kinds:
                raise KindError(f"channel kind {kind.name!r} is registered twice")
            self._kinds[kind.name] = kind
        if not self._kinds:
            raise KindError("register at least one channel kind")

    def __iter__(self) -> Iterator[ChannelKind[Any]]:
        return iter(self._kinds.values())

    def get(self, name: str) -> ChannelKind[Any] | None:
        return self._kinds.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._kinds)

    @property
    def titles(self) -> dict[str, str]:
        """Each kind's title by its name."""
        return {name: kind.title for name, kind in self._kinds.items()}

    def config_model(self) -> type[Config]:
        """The config file's model: `Config` with one optional table per kind."""
        fields: dict[str, Any] = {}
        for kind in self:
            default = Field(default_factory=kind.settings) if kind.on_by_default else None
            fields[kind.name] = (kind.settings if kind.on_by_default else kind.settings | None, default)
        model = create_model("Config", __base__=Config, __doc__=Config.__doc__, **fields)
        model.kind_names = self.names
        return model
