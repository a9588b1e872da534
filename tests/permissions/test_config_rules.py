"""`[[rules]]` in the config file: ids by place or given, and every mistake one line naming the rule."""

from __future__ import annotations

import pytest

from bot.config import parse_config
from bot.permissions.rules import config_rules
from bot.settings.errors import ConfigError


def rule(**keys: str) -> str:
    fields = {"tool": '"shell"', "match": '"ls*"', "decision": '"allow"'} | keys
    return "[[rules]]\n" + "".join(f"{key} = {value}\n" for key, value in fields.items() if value)


def test_rules_get_their_own_id_or_one_by_place_in_file_order() -> None:
    config = parse_config(rule() + rule(id='"git-read"') + rule(decision='"deny"'), environ={})
    assert [(r.id, r.decision, r.source) for r in config_rules(config.rules)] == [
        ("config-1", "allow", "config"),
        ("git-read", "allow", "config"),
        ("config-3", "deny", "config"),
    ]


def test_no_rules_is_the_default() -> None:
    assert parse_config("", environ={}).rules == []


def test_agents_labels_and_tool_globs_are_kept() -> None:
    text = rule(tool='"mcp__github__*"', match='"*"', agents='["sess-*"]', labels='{ project = "shop" }')
    [only] = config_rules(parse_config(text, environ={}).rules)
    assert (only.tool, only.agents, dict(only.labels)) == ("mcp__github__*", ("sess-*",), {"project": "shop"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (rule(decision='"maybe"'), 'line 4: rules[0].decision: "maybe" is not allowed; use "allow" or "deny" (rule'),
        (rule(decision=""), "rules[0].decision: is required; add decision = ..."),
        (rule(match=""), "rules[0].match: is required"),
        (rule(tool=""), "rules[0].tool: is required"),
        (rule(match='"  "'), 'rules[0].match: is empty, so it matches nothing; write e.g. "git status*"'),
        (rule(agents="[]"), "rules[0].agents: is empty, so the rule is for no agent"),
        (rule(agents='["[oops"]'), "unbalanced [ ]"),
        (rule(id='"learned-1"'), 'rules[0].id: "learned-1" starts with "learned-", as learned rules\' ids do'),
        (rule(id='"has space"'), 'rules[0].id: "has space" is not a rule id'),
        (
            rule(id='"a"') + rule(id='"a"'),
            'rules[1].id: is the id of rules[0] too; give each rule its own id (rule "a")',
        ),
        (rule() + rule(id='"config-1"'), "rules[1].id: is the id of rules[0] too"),
        (rule(agent='["x"]'), 'rules[0].agent: unknown key; did you mean "agents"? (rule "config-1")'),
        (rule(labels="{ team = 1 }"), "rules[0].labels.team"),
        ("rules = 3\n", "rules: 3 should be a list"),
        ("rules = [1]\n", 'rules[0]: 1 should be a table, e.g. [rules[0]] or { key = ... } (rule "config-1")'),
    ],
)
def test_every_mistake_is_one_line_naming_the_rule(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, environ={})
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_error_names_the_rule_by_its_own_id() -> None:
    with pytest.raises(ConfigError, match=r'\(rule "git-read"\)$'):
        parse_config(rule() + rule(id='"git-read"', decision='"no"'), environ={})
