"""Claude Code's hook payloads ↔ handraise questions and answers: pure functions, standard library only.

Shapes from Claude Code's "Hooks reference" (code.claude.com/docs/en/hooks): the hook input's common fields, the
`PreToolUse` decision control (`permissionDecision`, `updatedInput`) and the `PermissionRequest` decision control
(`decision.behavior`, `decision.message`, `decision.updatedInput`). AskUserQuestion's `answers` map is described in
the same page's AskUserQuestion example: question text → chosen label, labels joined with ", " for multi-select.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from bot.errors import BotErrorCode, HandraiseError

ASK_TOOL = "AskUserQuestion"
PLAN_TOOL = "ExitPlanMode"
ALLOW, DENY = "Allow", "Deny…"
PERMISSION_ID = "permission"
DETAIL_LIMIT = 6_000
"""Characters of a tool's input shown for review; a Slack section holds 3,000 and a long diff is read elsewhere."""
HEAD_LINES = 40


class NotAHookEvent(HandraiseError, ValueError):
    """The input is not a hook event this command can act on; the message says why, in one line."""

    code = BotErrorCode.BAD_INPUT


@dataclass(frozen=True)
class HookEvent:
    """The fields of a hook's stdin that matter here."""

    event: str
    tool_name: str
    tool_input: dict[str, Any]
    session_id: str
    cwd: str

    @property
    def project(self) -> str:
        return os.path.basename(self.cwd.rstrip("/\\")) or "claude"


def parse_event(text: str) -> HookEvent:
    """Read one hook event. Raises NotAHookEvent for anything else (garbage, the wrong shape, missing fields)."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise NotAHookEvent(f"stdin is not JSON ({error})") from None
    if not isinstance(data, dict):
        raise NotAHookEvent("stdin is not a JSON object")
    return event_of(data)


def event_of(data: dict[str, Any]) -> HookEvent:
    """The fields of a decoded hook event. Raises NotAHookEvent when the tool fields are missing."""
    event, tool_name, tool_input = data.get("hook_event_name"), data.get("tool_name"), data.get("tool_input")
    if not isinstance(event, str) or not isinstance(tool_name, str) or not isinstance(tool_input, dict):
        raise NotAHookEvent("stdin has no hook_event_name, tool_name and tool_input")
    session_id, cwd = data.get("session_id"), data.get("cwd")
    return HookEvent(
        event=event,
        tool_name=tool_name,
        tool_input=tool_input,
        session_id=session_id if isinstance(session_id, str) and session_id else "unknown",
        cwd=cwd if isinstance(cwd, str) else "",
    )


def agent_of(event: HookEvent, labels: dict[str, str]) -> dict[str, Any]:
    """The asking agent for routing: one per Claude Code session, named for its project folder (as every agent's
    hook names its agent, bot/hooks/plans.py)."""
    project = event.project
    return {
        "id": f"claude-{event.session_id}",
        "name": project,
        "labels": {"tool": "claude", "project": project, **labels},
    }


# --- AskUserQuestion -----------------------------------------------------------------------------------------------


def questions_of(tool_input: dict[str, Any]) -> list[dict[str, Any]]:
    """AskUserQuestion's questions as handraise question items, with ids q1…qn by position.

    Claude Code's questions carry no ids; position is stable for the one call, and answers go back keyed by text.
    Raises NotAHookEvent when the input is not the documented shape.
    """
    raw_questions = tool_input.get("questions")
    if not isinstance(raw_questions, list) or not raw_questions:
        raise NotAHookEvent("AskUserQuestion input has no questions list")
    items: list[dict[str, Any]] = []
    for index, raw in enumerate(raw_questions, start=1):
        if not isinstance(raw, dict) or not isinstance(raw.get("question"), str):
            raise NotAHookEvent(f"AskUserQuestion question {index} has no question text")
        item: dict[str, Any] = {"id": f"q{index}", "question": raw["question"]}
        if isinstance(raw.get("header"), str) and raw["header"]:
            item["header"] = raw["header"]
        raw_options = raw.get("options")
        if raw_options is not None:
            if not isinstance(raw_options, list):
                raise NotAHookEvent(f"AskUserQuestion question {index}: options is not a list")
            options: list[dict[str, str]] = []
            for option in raw_options:
                if not isinstance(option, dict) or not isinstance(option.get("label"), str):
                    raise NotAHookEvent(f"AskUserQuestion question {index}: an option has no label")
                entry = {"label": option["label"]}
                if isinstance(option.get("description"), str) and option["description"]:
                    entry["description"] = option["description"]
                options.append(entry)
            if options:
                item["options"] = options
        if raw.get("multiSelect") is True:
            item["multiSelect"] = True
        items.append(item)
    return items


def answers_by_text(tool_input: dict[str, Any], answer: dict[str, Any]) -> dict[str, str]:
    """handraise's answer as AskUserQuestion's `answers`: question text → label, ", "-joined labels, or free text.

    Single-select: free text replaces the choice. Multi-select: free text follows the chosen labels. A skipped
    question is left out.
    """
    by_id = {item.get("id"): item for item in answer.get("answers") or [] if isinstance(item, dict)}
    answers: dict[str, str] = {}
    for index, raw in enumerate(tool_input["questions"], start=1):
        item = by_id.get(f"q{index}")
        if item is None:
            continue
        selected = [str(label) for label in item.get("selected") or []]
        custom = item.get("custom")
        if raw.get("multiSelect") is True:
            parts = selected + ([str(custom)] if custom else [])
            text = ", ".join(parts)
        else:
            text = str(custom) if custom else (selected[0] if selected else "")
        if text:
            answers[raw["question"]] = text
    return answers


def answered_input(tool_input: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    # `updatedInput` replaces the whole input: leaving `questions` out breaks the tool, so the original goes back.
    return {**tool_input, "questions": tool_input["questions"], "answers": answers_by_text(tool_input, answer)}


def pre_tool_use_answer(tool_input: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """PreToolUse output that answers AskUserQuestion (Hooks reference, "PreToolUse decision control")."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "answered through handraise",
            "updatedInput": answered_input(tool_input, answer),
        }
    }


# --- PermissionRequest ---------------------------------------------------------------------------------------------


def permission_question(event: HookEvent) -> dict[str, Any]:
    """A plan-review question: "Allow Bash?", the tool's input rendered readably as `detail`, Allow / Deny… (the
    option that asks for the person's reason)."""
    return {
        "id": PERMISSION_ID,
        "question": f"Allow {event.tool_name}?",
        "header": f"Claude Code · {event.project}",
        "detail": describe_tool(event.tool_name, event.tool_input),
        "options": [
            {"label": ALLOW, "description": "let Claude run it"},
            {"label": DENY, "description": "Claude is told no, with your reason when you give one"},
        ],
        "intent": {"kind": "plan-review", "approve": ALLOW, "reject": DENY},
    }


def permission_decision(answer: dict[str, Any], resolved_by: str | None) -> dict[str, Any] | None:
    """PermissionRequest output for the answer (Hooks reference, "PermissionRequest decision control").

    Allow → allow; free text → deny with that text as the message Claude sees; Deny → deny naming who; a skipped
    question → None (no opinion: Claude Code shows its own prompt).
    """
    item = next((i for i in answer.get("answers") or [] if isinstance(i, dict) and i.get("id") == PERMISSION_ID), {})
    custom, selected = item.get("custom"), list(item.get("selected") or [])
    if custom:
        decision: dict[str, Any] = {"behavior": "deny", "message": str(custom)}
    elif ALLOW in selected:
        decision = {"behavior": "allow"}
    elif DENY in selected:
        who = f" by {resolved_by}" if resolved_by else ""
        decision = {"behavior": "deny", "message": f"Denied{who} through handraise."}
    else:
        return None
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def permission_answer(tool_input: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """PermissionRequest output answering AskUserQuestion, for set-ups that route it through the permission prompt."""
    decision = {"behavior": "allow", "updatedInput": answered_input(tool_input, answer)}
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def describe_tool(tool_name: str, tool_input: dict[str, Any]) -> str:
    """What the tool will do, as Markdown a person can judge at a glance. Tool input shapes: Claude Code's tools."""
    text = _describe(tool_name, tool_input)
    if len(text) > DETAIL_LIMIT:
        text = text[:DETAIL_LIMIT] + f"\n\n… ({len(text) - DETAIL_LIMIT} more characters not shown)"
    return text


def _describe(tool_name: str, tool_input: dict[str, Any]) -> str:
    def text(key: str) -> str | None:
        value = tool_input.get(key)
        return value if isinstance(value, str) else None

    path = text("file_path")
    if tool_name == "Bash" and (command := text("command")) is not None:
        why = f"{description}\n\n" if (description := text("description")) else ""
        return f"{why}{_code(command)}"
    if tool_name == "Edit" and path is not None:
        every = " (every occurrence)" if tool_input.get("replace_all") is True else ""
        return f"Edit `{path}`{every}\n\n" + _diff(text("old_string") or "", text("new_string") or "")
    edits = tool_input.get("edits")
    if tool_name == "MultiEdit" and path is not None and isinstance(edits, list):
        parts = [
            _diff(str(e.get("old_string", "")), str(e.get("new_string", ""))) for e in edits if isinstance(e, dict)
        ]
        return f"Edit `{path}` in {len(parts)} places\n\n" + "\n\n".join(parts)
    if tool_name == "Write" and path is not None:
        lines = (text("content") or "").splitlines()
        more = f"\n… ({len(lines) - HEAD_LINES} more lines)" if len(lines) > HEAD_LINES else ""
        return f"Write `{path}` ({len(lines)} lines)\n\n" + _code("\n".join(lines[:HEAD_LINES])) + more
    if tool_name == "WebFetch" and (url := text("url")) is not None:
        prompt = f"\n\nto: {prompt}" if (prompt := text("prompt")) else ""
        return f"Fetch {url}{prompt}"
    if tool_name == "WebSearch" and (query := text("query")) is not None:
        return f"Search the web for: {query}"
    if tool_name == PLAN_TOOL and (plan := text("plan")) is not None:
        return plan
    if tool_name.startswith("mcp__"):
        server, _, tool = tool_name[len("mcp__") :].partition("__")
        return f"MCP tool `{tool or server}` of server `{server}` with\n\n" + _code(_json(tool_input))
    return f"{tool_name} with\n\n" + _code(_json(tool_input))


def _diff(old: str, new: str) -> str:
    removed = "\n".join(f"- {line}" for line in old.splitlines()) or "- (nothing)"
    added = "\n".join(f"+ {line}" for line in new.splitlines()) or "+ (nothing)"
    return _code(f"{removed}\n{added}")


def _code(text: str) -> str:
    # A fence longer than any backtick run inside, so the tool's text cannot close it early. No language tag:
    # Slack's mrkdwn would show it as a first line of the code.
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
