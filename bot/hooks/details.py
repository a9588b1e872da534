"""What a person reads under "Allow <tool>?": the command or the tool's input, verbatim, as Markdown.

Pure functions, standard library only. The text goes into the question's `detail`, cut at the same length as Claude
Code's (bot/claude/translate.py; not imported here, to spare the other agents' hooks its start-up).
"""

from __future__ import annotations

import json
import re
from typing import Any

DETAIL_LIMIT = 6_000
"""Characters of a tool's input shown for review; a Slack section holds 3,000 and a long diff is read elsewhere."""


def shell(command: str, description: str | None = None, where: str | None = None) -> str:
    """The command in a code block, after the agent's own words on why and the folder it runs in, when given."""
    why = f"{description}\n\n" if description else ""
    folder = f"In `{where}`:\n\n" if where else ""
    return limited(f"{why}{folder}{code(command)}")


def mcp(tool: str, server: str | None, tool_input: object) -> str:
    """An MCP call: which tool of which server, and its arguments."""
    of = f" of server `{server}`" if server else ""
    return limited(f"MCP tool `{tool}`{of} with\n\n" + code(as_json(tool_input)))


def tool(tool_name: str, tool_input: dict[str, Any]) -> str:
    """A non-shell tool: a file write or edit shown as the file and its text, anything else as its arguments."""
    path = _first_text(tool_input, "file_path", "path", "absolute_path")
    content = _first_text(tool_input, "content")
    old, new = _first_text(tool_input, "old_string"), _first_text(tool_input, "new_string")
    if path is not None and content is not None:
        lines = len(content.splitlines())
        return limited(f"{tool_name} `{path}` ({lines} lines)\n\n" + code(content))
    if path is not None and (old is not None or new is not None):
        return limited(f"{tool_name} `{path}`\n\n" + diff(old or "", new or ""))
    return limited(f"{tool_name} with\n\n" + code(as_json(tool_input)))


def limited(text: str) -> str:
    if len(text) <= DETAIL_LIMIT:
        return text
    return text[:DETAIL_LIMIT] + f"\n\n… ({len(text) - DETAIL_LIMIT} more characters not shown)"


def diff(old: str, new: str) -> str:
    removed = "\n".join(f"- {line}" for line in old.splitlines()) or "- (nothing)"
    added = "\n".join(f"+ {line}" for line in new.splitlines()) or "+ (nothing)"
    return code(f"{removed}\n{added}")


def code(text: str) -> str:
    # A fence longer than any backtick run inside, so the text cannot close it early. No language tag: Slack's mrkdwn
    # would show it as a first line of the code.
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def as_json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _first_text(data: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = data.get(name)
        if isinstance(value, str):
            return value
    return None
