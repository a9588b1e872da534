"""AgentRegistry: liveness by object identity, ownership, roots, stale leaves."""

from __future__ import annotations

import pytest

from core import Agent, AgentRegistry, Context


def make_registry() -> AgentRegistry:
    handle = Context().plugin(AgentRegistry)
    assert isinstance(handle.value, AgentRegistry)
    return handle.value


def test_enter_makes_an_agent_live_and_leave_removes_it() -> None:
    agents = make_registry()
    agent = Agent("a", name="Deployer", labels={"team": "infra"})
    leave = agents.enter(agent)
    assert agents.get("a") is agent and agents.list() == [agent] and agents.roots() == [agent]
    leave()
    assert agents.get("a") is None and agents.list() == []


def test_a_stale_leave_never_removes_a_later_agent_reusing_the_id() -> None:
    agents = make_registry()
    leave_old = agents.enter(Agent("a"))
    newer = Agent("a")
    agents.enter(newer)
    leave_old()
    assert agents.get("a") is newer


def test_roots_exclude_owned_agents_until_their_owner_leaves() -> None:
    agents = make_registry()
    parent, child, grandchild = Agent("p"), Agent("c"), Agent("g")
    leave_parent = agents.enter(parent)
    agents.enter(child, owner=parent)
    agents.enter(grandchild, owner=child)
    assert agents.roots() == [parent]
    leave_parent()
    assert agents.roots() == [child]


def test_is_root_answers_as_membership_of_roots_does() -> None:
    agents = make_registry()
    parent, child, stranger = Agent("p"), Agent("c"), Agent("s")
    leave_parent = agents.enter(parent)
    agents.enter(child, owner=parent)
    everyone = [parent, child, stranger, Agent("p")]  # the last: another object with a live agent's id
    assert [agents.is_root(agent) for agent in everyone] == [True, False, False, False]
    assert [agents.is_root(agent) for agent in everyone] == [agent in agents.roots() for agent in everyone]
    leave_parent()
    assert [agents.is_root(agent) for agent in everyone] == [False, True, False, False]
    assert [agents.is_root(agent) for agent in everyone] == [agent in agents.roots() for agent in everyone]


def test_is_owned_by_follows_live_owners() -> None:
    agents = make_registry()
    parent, child, grandchild = Agent("p"), Agent("c"), Agent("g")
    agents.enter(parent)
    leave_child = agents.enter(child, owner=parent)
    agents.enter(grandchild, owner=child)
    assert agents.is_owned_by("c", parent)
    assert agents.is_owned_by("g", "p")
    assert not agents.is_owned_by("p", child)
    assert not agents.is_owned_by("c", Agent("p"))  # another object with the owner's id is not the owner
    leave_child()
    assert not agents.is_owned_by("g", parent)


def test_an_owner_that_is_not_live_is_refused() -> None:
    agents = make_registry()
    with pytest.raises(ValueError, match="not a live agent"):
        agents.enter(Agent("c"), owner=Agent("p"))


def test_an_agent_cannot_own_itself() -> None:
    agents = make_registry()
    agent = Agent("a")
    agents.enter(agent)
    with pytest.raises(ValueError):
        agents.enter(agent, owner=agent)


def test_labels_are_copied() -> None:
    labels = {"team": "infra"}
    agent = Agent("a", labels=labels)
    labels["team"] = "changed"
    assert agent.labels == {"team": "infra"}
