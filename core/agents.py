"""Live agents and who owns whom at run time: the identity boundary of `ask()`."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from core.context import Context

Leave = Callable[[], None]


class Agent:
    """A running agent. Identity is the object itself: another `Agent` with the same id is not this agent."""

    def __init__(self, id: str, name: str | None = None, labels: Mapping[str, str] | None = None) -> None:
        self.id = id
        self.name = name
        self.labels: dict[str, str] = dict(labels or {})
        self._ctx: Context | None = None

    @property
    def ctx(self) -> Context:
        """The agent's scoped context. Raises RuntimeError until the agent has entered a registry."""
        if self._ctx is None:
            raise RuntimeError(f"agent {self.id!r} has no context until it enters an AgentRegistry")
        return self._ctx

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, name={self.name!r})"


class _Entry:
    __slots__ = ("agent", "owner")

    def __init__(self, agent: Agent, owner: Agent | None) -> None:
        self.agent = agent
        self.owner = owner


class AgentRegistry:
    """`ctx.agents`: which agents are live and which live agent owns which (a plugin: `ctx.plugin(AgentRegistry)`)."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._entries: dict[str, _Entry] = {}
        ctx.provide("agents", self)

    def enter(self, agent: Agent, owner: Agent | None = None) -> Leave:
        """Make `agent` live, owned by `owner` (a live agent) or a root; returns `leave`.

        An agent entering with a live agent's id replaces it. A stale `leave` (of a replaced agent) removes nothing.
        Raises ValueError when `owner` is not live or is the agent itself.
        """
        if owner is not None and (owner is agent or self.get(owner.id) is not owner):
            raise ValueError(f"owner {owner.id!r} of agent {agent.id!r} is not a live agent")
        entry = _Entry(agent, owner)
        self._entries[agent.id] = entry
        agent._ctx = self._ctx.for_agent(agent)  # pyright: ignore[reportPrivateUsage]

        def leave() -> None:
            if self._entries.get(agent.id) is entry:
                del self._entries[agent.id]

        return leave

    def get(self, id: str) -> Agent | None:
        entry = self._entries.get(id)
        return entry.agent if entry is not None else None

    def list(self) -> list[Agent]:
        return [entry.agent for entry in self._entries.values()]

    def roots(self) -> list[Agent]:
        """Live agents with no live owner (an agent whose owner left is a root again)."""
        return [entry.agent for entry in self._entries.values() if not self._owner_is_live(entry)]

    def is_root(self, agent: Agent) -> bool:
        """Whether `agent` itself is live and a root (`agent in roots()`), from its own entry: every ask checks it,
        and `roots()` walks every live agent."""
        entry = self._entries.get(agent.id)
        return entry is not None and entry.agent is agent and not self._owner_is_live(entry)

    def is_owned_by(self, id: str, parent: Agent | str) -> bool:
        """Whether the live agent `id` is owned, directly or through live owners, by the live agent `parent`."""
        parent_id = parent if isinstance(parent, str) else parent.id
        parent_entry = self._entries.get(parent_id)
        if parent_entry is None or (isinstance(parent, Agent) and parent_entry.agent is not parent):
            return False
        entry = self._entries.get(id)
        seen: set[str] = set()
        while entry is not None and self._owner_is_live(entry) and entry.agent.id not in seen:
            seen.add(entry.agent.id)
            owner = entry.owner
            assert owner is not None
            if owner is parent_entry.agent:
                return True
            entry = self._entries.get(owner.id)
        return False

    def _owner_is_live(self, entry: _Entry) -> bool:
        owner = entry.owner
        return owner is not None and self.get(owner.id) is owner
