"""Rules that decide a coding agent's permission prompt without a person: from the config, or learned.

A rule allows or denies. Deny wins, whatever the order of the rules. A shell command is split into the simple
commands it runs (`bot.permissions.shell`): it is allowed only when every one of them is allowed by some rule, and
denied when any one of them is denied; a command that cannot be split for sure is never allowed by a config rule.
Anything no rule decides goes to a person. A learned rule ("Always allow") allows exactly one request: the same
agent tool, project, tool and request text, byte for byte.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from bot.permissions.prompt import BadPermission, Permission, decision_of
from bot.permissions.shell import command_parts, without_reserved_words
from bot.settings.tables import LEARNED_PREFIX, SHELL_TOOL, RuleSettings, rule_id
from bot.store.records import AgentRef, LearnedRule, QuestionRecord
from core import AskUserQuestionAnswer

RuleDecision = Literal["allow", "deny"]
RuleSource = Literal["config", "learned"]


def glob_matches(pattern: str, text: str) -> bool:
    """Whether `text` is `pattern` with each `*` standing for any run of characters, spaces and newlines included;
    every other character stands for itself (case counts). Linear in the text: a pattern never backtracks."""
    pieces = pattern.split("*")
    if len(pieces) == 1:
        return pattern == text
    first, *middle, last = pieces
    end = len(text) - len(last)
    if end < len(first) or not text.startswith(first) or not text.endswith(last):
        return False
    position = len(first)
    for piece in middle:
        found = text.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return True


@dataclass(frozen=True)
class Rule:
    """One rule. `agents` (globs on the agent's id or name) and `labels` (each must equal the agent's) narrow whom it
    is for. A learned rule carries the request it allows (`agent`, `project`, and `match` the request itself)."""

    id: str
    tool: str
    match: str
    decision: RuleDecision
    source: RuleSource = "config"
    agents: tuple[str, ...] | None = None
    labels: Mapping[str, str] = field(default_factory=dict[str, str])
    learned_at: datetime | None = None
    agent: str | None = None
    """A learned rule's agent tool (`claude`, `codex`, …), as the permission names it."""
    project: str | None = None

    @classmethod
    def from_settings(cls, settings: RuleSettings, index: int) -> Rule:
        return cls(
            id=rule_id(settings, index),
            tool=settings.tool,
            match=settings.match,
            decision=settings.decision,
            agents=None if settings.agents is None else tuple(settings.agents),
            labels=dict(settings.labels),
        )

    @classmethod
    def learned(cls, learned: LearnedRule) -> Rule:
        return cls(
            id=learned.id,
            tool=learned.tool,
            match=learned.request,
            decision="allow",
            source="learned",
            learned_at=learned.learned_at,
            agent=learned.agent,
            project=learned.project,
        )

    def is_for(self, permission: Permission, agent: AgentRef | None) -> bool:
        """Whether this rule speaks to `permission` from `agent` at all (its tool, its agents and labels)."""
        if self.source == "learned":
            return (self.agent, self.project, self.tool) == (permission.agent, permission.project, permission.tool)
        if self.tool == SHELL_TOOL:
            if permission.kind != "shell":
                return False
        elif not glob_matches(self.tool, permission.tool):
            return False
        if self.agents is not None:
            names = [] if agent is None else [name for name in (agent.id, agent.name) if name is not None]
            if not any(fnmatch.fnmatchcase(name, glob) for glob in self.agents for name in names):
                return False
        labels = {"tool": permission.agent, "project": permission.project} | (agent.labels if agent else {})
        return all(labels.get(key) == value for key, value in self.labels.items())

    def matches(self, text: str) -> bool:
        """Whether `match` covers `text` (a learned rule's only the very same text)."""
        return text == self.match if self.source == "learned" else glob_matches(self.match, text)

    def to_wire(self) -> dict[str, Any]:
        """The rule as the API's answer names it."""
        return {"id": self.id, "tool": self.tool, "match": self.match, "decision": self.decision, "source": self.source}

    def to_listing(self) -> dict[str, Any]:
        """Everything about the rule, for `handraise rules --json`."""
        listing = self.to_wire()
        if self.agents is not None:
            listing["agents"] = list(self.agents)
        if self.labels:
            listing["labels"] = dict(self.labels)
        if self.source == "learned":
            listing |= {"agent": self.agent, "project": self.project}
            listing["learned_at"] = self.learned_at.isoformat() if self.learned_at else None
        return listing


@dataclass(frozen=True)
class Verdict:
    """What the rules decided: `rule` is the one that decided (the first, when several allowed the parts of a
    compound command); `rules` all that took part."""

    behavior: RuleDecision
    rule: Rule
    rules: tuple[Rule, ...]

    @property
    def message(self) -> str:
        """Said to the agent: which rule decided, and where it comes from."""
        verb = "Allowed" if self.behavior == "allow" else "Denied"
        if len(self.rules) > 1:
            return f"{verb} by handraise rules {', '.join(rule.id for rule in self.rules)}."
        where = "learned from an earlier Always allow" if self.rule.source == "learned" else "in the config"
        return f"{verb} by handraise rule {self.rule.id} ({where})."


def config_rules(settings: Sequence[RuleSettings]) -> list[Rule]:
    return [Rule.from_settings(rule, index) for index, rule in enumerate(settings)]


def decide(permission: Permission, agent: AgentRef | None, rules: Iterable[Rule]) -> Verdict | None:
    """The rules' verdict on `permission` from `agent`, or None when a person must decide.

    Any deny rule that covers the request, or (for a shell command) any of its parts, denies. Else a learned rule
    for this very request allows; else every part must be allowed by some allow rule.
    """
    relevant = [rule for rule in rules if rule.is_for(permission, agent)]
    if not relevant:
        return None
    parts: tuple[str, ...] | None = (permission.request,)
    denied_texts = {permission.request}
    if permission.kind == "shell":
        parts = command_parts(permission.request)
        for part in parts or ():
            denied_texts |= {part, without_reserved_words(part)}
    denies = tuple(
        rule for rule in relevant if rule.decision == "deny" and any(rule.matches(text) for text in denied_texts)
    )
    if denies:
        return Verdict("deny", denies[0], denies)
    for rule in relevant:
        if rule.source == "learned" and rule.decision == "allow" and rule.matches(permission.request):
            return Verdict("allow", rule, (rule,))
    if parts is None or not parts:
        return None
    allows = [rule for rule in relevant if rule.decision == "allow" and rule.source == "config"]
    used: list[Rule] = []
    for part in parts:
        rule = next((rule for rule in allows if rule.matches(part)), None)
        if rule is None:
            return None
        if rule not in used:
            used.append(rule)
    return Verdict("allow", used[0], tuple(used))


def learned_id(permission: Permission) -> str:
    """The stable id of the rule "Always allow" learns for `permission`: the same request always gets the same."""
    identity = [permission.agent, permission.project, permission.tool, permission.request]
    digest = hashlib.sha256(json.dumps(identity, ensure_ascii=False).encode()).hexdigest()
    return LEARNED_PREFIX + digest[:16]


def learned_rule(permission: Permission, *, question_id: str | None = None, by: str | None = None) -> LearnedRule:
    """The rule "Always allow" stores for `permission`: this very request, from now on."""
    return LearnedRule(
        id=learned_id(permission),
        agent=permission.agent,
        project=permission.project,
        tool=permission.tool,
        request=permission.request,
        question_id=question_id,
        by=by,
    )


def rule_learned_by(record: QuestionRecord, answer: AskUserQuestionAnswer, by: str | None) -> LearnedRule | None:
    """The rule an answer teaches: for a permission prompt answered "Always allow", the rule that allows the very
    same request from now on; None for any other answer or question."""
    if record.permission is None:
        return None
    decision = decision_of(answer.to_wire(), by)
    if decision is None or not decision.always:
        return None
    try:
        permission = Permission.from_wire(record.permission)
    except BadPermission:  # not written by this server: nothing to learn from it
        return None
    return learned_rule(permission, question_id=record.id, by=by)
