"""Which channel takes which agent's questions: the per-agent routing of SPEC §3.

A channel with no subscriptions takes every request, agentless ones included; subscriptions only narrow. Within a
channel the first matching subscription (in file order) is the route.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from bot.settings.durations import format_duration
from bot.settings.tables import DEFAULT_REMIND_MAX, Config, Subscription
from bot.store.records import AgentRef


@dataclass(frozen=True)
class Route:
    """Where one channel sends one request. `subscription` is None when the channel has none (it takes all)."""

    channel: str
    subscription: Subscription | None = None
    index: int | None = None

    @property
    def escalate_after(self) -> timedelta | None:
        return self.subscription.escalate_after if self.subscription else None

    @property
    def expire_after(self) -> timedelta | None:
        return self.subscription.expire_after if self.subscription else None

    @property
    def responders(self) -> list[str]:
        return list(self.subscription.responders) if self.subscription else []

    @property
    def approvals(self) -> int:
        return self.subscription.approvals if self.subscription else 1

    @property
    def remind_every(self) -> timedelta | None:
        return self.subscription.remind_every if self.subscription else None

    @property
    def remind_max(self) -> int:
        if self.subscription is None:
            return 0
        return self.subscription.remind_max or DEFAULT_REMIND_MAX

    def describe(self) -> str:
        if self.subscription is None:
            return f"{self.channel}: takes every request (no subscriptions)"
        parts = [f"{self.channel}: subscription {self.index} ({self.subscription.describe()})"]
        if self.escalate_after:
            parts.append(f"escalates after {format_duration(self.escalate_after)}")
        if self.expire_after:
            parts.append(f"expires after {format_duration(self.expire_after)}")
        if self.approvals > 1:
            parts.append(f"needs {self.approvals} approvals")
        if self.remind_every:
            parts.append(f"reminds every {format_duration(self.remind_every)} (at most {self.remind_max} times)")
        return ", ".join(parts)


class Router:
    """Routes requests to channels in the configured answerer order."""

    def __init__(self, order: Sequence[str], subscriptions: Mapping[str, Sequence[Subscription]]) -> None:
        self.order = list(order)
        # A channel missing from `subscriptions` is not routed at all: an empty list would mean "takes everything",
        # which a forgotten wiring step must never turn into.
        self._subscriptions = {name: list(subscriptions[name]) for name in order if name in subscriptions}
        # The route of a channel that takes every request, built once (Route is frozen): `route` runs per question.
        self._takes_all = {name: Route(name) for name, listed in self._subscriptions.items() if not listed}

    @classmethod
    def from_config(cls, config: Config) -> Router:
        """The routes of every channel table in `config`, in its answerer order."""
        subscriptions: dict[str, Sequence[Subscription]] = {}
        for name in config.answerers:
            settings = config.channel(name)
            if settings is not None:
                subscriptions[name] = settings.subscriptions
        return cls(config.answerers, subscriptions)

    def route(self, channel: str, agent: AgentRef | None) -> Route | None:
        """The route for `agent` (None: an agentless request) on `channel`, or None when it is not routed there."""
        subscriptions = self._subscriptions.get(channel)
        if subscriptions is None:
            return None
        if not subscriptions:
            return self._takes_all[channel]
        agent_id, name, labels = (agent.id, agent.name, agent.labels) if agent else (None, None, {})
        for index, subscription in enumerate(subscriptions):
            if subscription.matches(agent_id, name, labels):
                return Route(channel, subscription, index)
        return None

    def routes(self, agent: AgentRef | None) -> list[Route]:
        """Every channel that would take the request, in waterfall order."""
        return [route for channel in self.order if (route := self.route(channel, agent)) is not None]

    def takes(self, agent: AgentRef | None) -> bool:
        """Whether any channel would take the request: `routes` stopping at the first (checked on every ask)."""
        return any(self.route(channel, agent) is not None for channel in self.order)

    def explain(self, agent: AgentRef | None) -> list[str]:
        """One line per configured answerer saying whether it takes the request and why (`handraise routes`)."""
        lines: list[str] = []
        for channel in self.order:
            route = self.route(channel, agent)
            if route is not None:
                lines.append(f"takes   {route.describe()}")
            else:
                count = len(self._subscriptions.get(channel, ()))
                why = f"none of its {count} subscriptions matches" if count else "it has no routes configured"
                lines.append(f"passes  {channel}: {why}")
        return lines
