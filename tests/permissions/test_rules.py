"""Rules deciding permission prompts: deny wins, every part of a compound command must be allowed, learned rules
allow only the very same request, and what no rule decides goes to a person."""

from __future__ import annotations

import time
from typing import Any

import pytest

from bot.permissions.prompt import ALLOW, ALWAYS, DENY, PERMISSION_ID, Permission, canonical_input
from bot.permissions.rules import (
    Rule,
    Verdict,
    config_rules,
    decide,
    glob_matches,
    learned_id,
    learned_rule,
    rule_learned_by,
)
from bot.settings.tables import RuleSettings
from bot.store.records import AgentRef, QuestionRecord
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem


def shell(command: str, agent: str = "codex", tool: str = "Bash", project: str = "shop") -> Permission:
    return Permission(agent=agent, project=project, tool=tool, kind="shell", request=command, detail=command)


def mcp(tool: str, tool_input: dict[str, Any], agent: str = "claude") -> Permission:
    request = canonical_input(tool_input)
    return Permission(agent=agent, project="shop", tool=tool, kind="mcp", request=request, detail=request)


def rules(*tables: dict[str, Any]) -> list[Rule]:
    return config_rules([RuleSettings.model_validate(table) for table in tables])


def allow(match: str, tool: str = "shell", **more: Any) -> dict[str, Any]:
    return {"tool": tool, "match": match, "decision": "allow", **more}


def deny(match: str, tool: str = "shell", **more: Any) -> dict[str, Any]:
    return {"tool": tool, "match": match, "decision": "deny", **more}


def behavior(verdict: Verdict | None) -> str | None:
    return None if verdict is None else verdict.behavior


AGENT = AgentRef(id="sess-1", name="Codex", labels={"tool": "codex", "project": "shop", "team": "web"})

# -- globs -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("git status*", "git status", True),
        ("git status*", "git status --short", True),
        ("git status*", "git  status", False),
        ("*", "", True),
        ("*", "anything at all\nacross lines", True),
        ("git *", "git", False),
        ("a*b*c", "aXbYc", True),
        ("a*b*c", "acb", False),
        ("a*a", "a", False),
        ("mcp__github__*", "mcp__github__create_issue", True),
        ("Git status*", "git status", False),
        ("ls [a]", "ls [a]", True),
        ("ls ?", "ls x", False),
    ],
)
def test_a_glob_star_spans_anything_and_every_other_character_stands_for_itself(
    pattern: str, text: str, matches: bool
) -> None:
    assert glob_matches(pattern, text) is matches


def test_a_hostile_glob_on_a_huge_text_is_quick() -> None:
    began = time.perf_counter()
    assert not glob_matches("*a" * 50 + "*b", "a" * 1_000_000)
    assert time.perf_counter() - began < 2


# -- shell commands --------------------------------------------------------------------------------------------------


def test_an_allow_rule_allows_a_matching_command() -> None:
    verdict = decide(shell("git status --short"), AGENT, rules(allow("git status*")))
    assert verdict is not None
    assert (verdict.behavior, verdict.rule.id, verdict.rule.source) == ("allow", "config-1", "config")
    assert "config-1" in verdict.message


def test_a_compound_command_is_never_allowed_by_a_rule_for_its_first_part() -> None:
    table = rules(allow("git status*"))
    for command in (
        "git status && rm -rf build",
        "git status; rm -rf build",
        "git status || rm -rf build",
        "git status | sh",
        "git status & rm -rf build",
        "git status\nrm -rf build",
        "git status $(rm -rf build)",
        "git status `rm -rf build`",
        'git status "$(rm -rf build)"',
        "git status <(rm -rf build)",
        "git status ${x:-$(rm -rf build)}",
    ):
        assert decide(shell(command), AGENT, table) is None, command


def test_a_compound_command_is_allowed_when_every_part_is() -> None:
    verdict = decide(shell("git status && git diff | less"), AGENT, rules(allow("git *"), allow("less*")))
    assert verdict is not None and verdict.behavior == "allow"
    assert [rule.id for rule in verdict.rules] == ["config-1", "config-2"]
    assert "config-1, config-2" in verdict.message


def test_a_quoted_operator_keeps_the_command_whole() -> None:
    assert behavior(decide(shell('git commit -m "a && b"'), AGENT, rules(allow("git commit *")))) == "allow"


def test_any_denied_part_denies_the_whole_command() -> None:
    table = rules(allow("*"), deny("rm -rf*"))
    assert behavior(decide(shell("ls && rm -rf /"), AGENT, table)) == "deny"
    assert behavior(decide(shell("echo $(rm -rf /)"), AGENT, table)) == "deny"
    assert behavior(decide(shell("if true; then rm -rf /; fi"), AGENT, table)) == "deny"
    assert behavior(decide(shell("ls"), AGENT, table)) == "allow"


def test_deny_wins_whatever_the_order() -> None:
    for table in (rules(allow("git *"), deny("git push*")), rules(deny("git push*"), allow("git *"))):
        verdict = decide(shell("git push --force"), AGENT, table)
        assert verdict is not None and verdict.behavior == "deny"
        assert verdict.rule.match == "git push*"


def test_a_command_that_cannot_be_read_is_never_allowed_but_can_be_denied() -> None:
    assert decide(shell("echo 'unbalanced && rm -rf /"), AGENT, rules(allow("echo *"))) is None
    assert behavior(decide(shell("rm -rf / 'oops"), AGENT, rules(deny("rm -rf*")))) == "deny"


def test_shell_rules_cover_every_agents_shell_tool_and_nothing_else() -> None:
    table = rules(allow("ls*"))
    for agent, tool in (("claude", "Bash"), ("codex", "Bash"), ("gemini", "run_shell_command"), ("cursor", "Shell")):
        assert behavior(decide(shell("ls -la", agent=agent, tool=tool), None, table)) == "allow"
    assert decide(mcp("ls", {"path": "."}), None, rules(allow("*"))) is None


# -- other tools -----------------------------------------------------------------------------------------------------


def test_a_tool_rule_matches_the_tool_name_as_a_glob_and_the_input_as_text() -> None:
    create = mcp("mcp__github__create_issue", {"title": "bug", "repo": "shop"})
    assert behavior(decide(create, None, rules(allow("*", tool="mcp__github__*")))) == "allow"
    assert behavior(decide(create, None, rules(allow('*"repo":"shop"*', tool="mcp__github__create_issue")))) == "allow"
    assert decide(create, None, rules(allow('*"repo":"prod"*', tool="mcp__github__*"))) is None
    assert decide(create, None, rules(allow("*", tool="mcp__slack__*"))) is None
    assert behavior(decide(create, None, rules(allow("*", tool="mcp__*"), deny("*", tool="*create*")))) == "deny"


# -- whom a rule is for ----------------------------------------------------------------------------------------------


def test_agents_and_labels_narrow_a_rule() -> None:
    command = shell("make test")
    assert behavior(decide(command, AGENT, rules(allow("make *", agents=["sess-*"])))) == "allow"
    assert behavior(decide(command, AGENT, rules(allow("make *", agents=["Codex"])))) == "allow"
    assert decide(command, AGENT, rules(allow("make *", agents=["other-*"]))) is None
    assert decide(command, None, rules(allow("make *", agents=["*"]))) is None
    assert behavior(decide(command, AGENT, rules(allow("make *", labels={"team": "web"})))) == "allow"
    assert decide(command, AGENT, rules(allow("make *", labels={"team": "ops"}))) is None


def test_the_permissions_agent_tool_and_project_count_as_labels() -> None:
    command = shell("make test", agent="gemini", tool="run_shell_command", project="shop")
    assert behavior(decide(command, None, rules(allow("make *", labels={"tool": "gemini"})))) == "allow"
    assert behavior(decide(command, None, rules(allow("make *", labels={"project": "shop"})))) == "allow"
    assert decide(command, None, rules(allow("make *", labels={"tool": "codex"}))) is None


def test_no_rules_ask_a_person() -> None:
    assert decide(shell("ls"), AGENT, []) is None


# -- learned rules ---------------------------------------------------------------------------------------------------


def test_a_learned_rule_allows_only_the_very_same_request() -> None:
    original = shell("ls *.py && rm x")
    learned = [Rule.learned(learned_rule(original))]
    verdict = decide(original, AGENT, learned)
    assert verdict is not None and (verdict.behavior, verdict.rule.source) == ("allow", "learned")
    assert verdict.rule.id.startswith("learned-")
    assert decide(shell("ls a.py && rm x"), AGENT, learned) is None  # its * is no glob
    assert decide(shell("ls *.py && rm x", project="other"), AGENT, learned) is None
    assert decide(shell("ls *.py && rm x", agent="claude"), AGENT, learned) is None
    assert decide(shell("ls *.py && rm x", tool="Shell"), AGENT, learned) is None


def test_a_config_deny_beats_a_learned_allow() -> None:
    original = shell("git push --force")
    verdict = decide(original, AGENT, [*rules(deny("git push*")), Rule.learned(learned_rule(original))])
    assert behavior(verdict) == "deny"


def test_the_learned_id_is_stable_and_names_the_request() -> None:
    assert learned_id(shell("ls")) == learned_id(shell("ls"))
    assert learned_id(shell("ls")) != learned_id(shell("ls "))
    assert learned_id(shell("ls")) != learned_id(shell("ls", project="other"))
    assert len(learned_id(shell("x" * 100_000))) == len("learned-") + 16


def answered(label: str | None = None, custom: str | None = None) -> AskUserQuestionAnswer:
    item = AskUserQuestionAnswerItem(id=PERMISSION_ID, selected=[label] if label else [], custom=custom)
    return AskUserQuestionAnswer(answers=[item])


def test_always_allow_teaches_a_rule_and_nothing_else_does() -> None:
    permission = shell("npm test")
    record = QuestionRecord(
        questions=[AskUserQuestionItem(id=PERMISSION_ID, question="Allow Bash?")], permission=permission.to_wire()
    )
    learned = rule_learned_by(record, answered(ALWAYS), "alice")
    assert learned is not None
    assert (learned.id, learned.request, learned.by, learned.question_id) == (
        learned_id(permission),
        "npm test",
        "alice",
        record.id,
    )
    assert rule_learned_by(record, answered(ALLOW), "alice") is None
    assert rule_learned_by(record, answered(DENY), "alice") is None
    assert rule_learned_by(record, answered(custom="no, use yarn"), "alice") is None
    assert rule_learned_by(record.model_copy(update={"permission": None}), answered(ALWAYS), "alice") is None
    garbage = record.model_copy(update={"permission": {"agent": "nobody"}})
    assert rule_learned_by(garbage, answered(ALWAYS), "alice") is None


def test_the_listing_says_everything_and_the_wire_the_five_fields() -> None:
    [rule] = rules(allow("make *", id="make", agents=["a-*"], labels={"team": "web"}))
    assert rule.to_wire() == {"id": "make", "tool": "shell", "match": "make *", "decision": "allow", "source": "config"}
    assert rule.to_listing() | {} == rule.to_wire() | {"agents": ["a-*"], "labels": {"team": "web"}}
    learned = Rule.learned(learned_rule(shell("ls")))
    listing = learned.to_listing()
    assert (listing["source"], listing["agent"], listing["project"], listing["match"]) == (
        "learned",
        "codex",
        "shop",
        "ls",
    )
    assert listing["learned_at"]
