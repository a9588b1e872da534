"""The audit log's `rule` lines: a permission prompt a rule decided without a person, written by `serve` and shown by
`handraise history` (a JSON object of its own kind with `--json`, one readable line without)."""

from __future__ import annotations

import json
from typing import Any

from bot.permissions.prompt import Permission
from bot.permissions.rules import Verdict
from bot.store.records import AgentRef, AuditEvent

SHOWN_REQUEST = 200
"""Characters of a request shown in a readable history line before it is cut with an ellipsis."""


def rule_detail(verdict: Verdict, permission: Permission, agent: AgentRef | None) -> dict[str, Any]:
    """What a `rule` line keeps: the rule, the decision said to the agent, the agent, and the request (not the
    `detail` the person would have seen: the request says it)."""
    detail: dict[str, Any] = {"rule": verdict.rule.to_wire(), "decision": verdict.behavior, "message": verdict.message}
    if len(verdict.rules) > 1:
        detail["rules"] = [rule.id for rule in verdict.rules]
    if agent is not None:
        detail["agent"] = agent.model_dump(exclude_none=True)
    detail["permission"] = {key: value for key, value in permission.to_wire().items() if key != "detail"}
    return detail


def rule_line_json(event: AuditEvent) -> dict[str, Any]:
    """A `rule` line for `handraise history --json`: `kind` "rule", the rule (id, tool, match, decision, source),
    the decision, the agent, the tool and request, and the time."""
    detail = event.detail
    asked: dict[str, Any] = detail.get("permission") or {}
    line: dict[str, Any] = {"seq": event.seq, "at": event.at.isoformat(), "kind": "rule"}
    line |= {"rule": detail.get("rule"), "decision": detail.get("decision"), "message": detail.get("message")}
    if "rules" in detail:
        line["rules"] = detail["rules"]
    line["agent"] = detail.get("agent") or ({"id": event.actor} if event.actor else None)
    line |= {key: asked.get(key) for key in ("tool", "request", "project")}
    line["agent_tool"] = asked.get("agent")  # claude, codex, gemini or cursor
    return line


def rule_line_text(event: AuditEvent) -> str:
    """A `rule` line for `handraise history`: when, the decision and the rule, for whom, and what was asked."""
    detail = event.detail
    rule: dict[str, Any] = detail.get("rule") or {}
    asked: dict[str, Any] = detail.get("permission") or {}
    request = json.dumps(str(asked.get("request", "")), ensure_ascii=False)
    if len(request) > SHOWN_REQUEST:
        request = request[: SHOWN_REQUEST - 1] + "…"
    where = ", ".join(str(asked[key]) for key in ("agent", "project") if asked.get(key))
    who = f"{event.actor} ({where})" if event.actor else where or "an agentless request"
    return (
        f"{event.at:%Y-%m-%d %H:%M:%S}  rule  {detail.get('decision')} by rule {rule.get('id')} "
        f"({rule.get('source')}: {rule.get('tool')} {json.dumps(rule.get('match'), ensure_ascii=False)})  "
        f"for {who}  {asked.get('tool')} {request}"
    )
