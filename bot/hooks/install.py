"""`handraise hook install|uninstall --for AGENT`: put `handraise hook AGENT` into the agent's own hooks file, or take
it out again, leaving every other hook and setting as the person had it.

Each agent's file and entry, from its hooks reference (see docs/agents.md):

- Claude Code: `.claude/settings.json`, `PreToolUse` [AskUserQuestion] and `PermissionRequest` [*] groups, handlers
  `{"type": "command", "command", "timeout": seconds}`.
- Codex: `.codex/hooks.json`, a `PermissionRequest` [*] group, the same handler.
- Gemini CLI: `.gemini/settings.json`, a `BeforeTool` group whose matcher (a regex) names the tools that ask,
  handler `{"name": "handraise", "type": "command", "command", "timeout": milliseconds}`.
- Cursor: `.cursor/hooks.json` with `"version": 1`, `beforeShellExecution` and `beforeMCPExecution` handlers
  `{"command", "timeout": seconds}`.

Without `--project` the user's file under the home folder (Codex's `$CODEX_HOME`, Claude Code's
`$CLAUDE_CONFIG_DIR` when set); with it, the one under the current folder. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tomllib
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.clients.ask import BadInput, parse_labels
from bot.hooks import entries
from bot.hooks.entries import Removed, Slot
from bot.hooks.json_file import display, read_settings

AGENT_TIMEOUT_SECONDS = 3600
"""The agent's own limit on one hook run, written into each entry. Longer than the hook's default wait (59m40s), so
the hook gives up first and cancels its question, rather than being killed with the question left open."""
GEMINI_TOOLS = "^(run_shell_command|write_file|replace|web_fetch|mcp_.*)$"
"""Gemini CLI's tools that ask before they run: the shell, writing and editing files, fetching a URL, MCP tools.
Gemini CLI names an MCP tool `mcp_<server>_<tool>` (one underscore each side; its hooks reference says
`mcp__<server>__<tool>`), so the prefix `mcp_` covers both spellings."""

Handler = Callable[[str], dict[str, Any]]


def _command_handler(command: str) -> dict[str, Any]:
    return {"type": "command", "command": command, "timeout": AGENT_TIMEOUT_SECONDS}


def _gemini_handler(command: str) -> dict[str, Any]:
    # Gemini counts milliseconds; the name is what `/hooks disable handraise` and its warnings show.
    return {"name": "handraise", "type": "command", "command": command, "timeout": AGENT_TIMEOUT_SECONDS * 1000}


def _cursor_handler(command: str) -> dict[str, Any]:
    return {"command": command, "timeout": AGENT_TIMEOUT_SECONDS}


@dataclass(frozen=True)
class AgentFile:
    """Where an agent keeps its hooks, and what handraise writes there."""

    name: str
    folder: str
    file: str
    slots: tuple[Slot, ...]
    handler: Handler
    home_variable: str | None = None
    """The environment variable that moves the agent's user folder away from `~/<folder>`."""
    version: int | None = None
    """A `version` the file must carry (Cursor's 1)."""
    notes: tuple[str, ...] = ()
    project_notes: tuple[str, ...] = field(default=())

    def path(self, *, project: bool) -> Path:
        if project:
            return Path.cwd() / self.folder / self.file
        moved = os.environ.get(self.home_variable) if self.home_variable else None
        return (Path(moved) if moved else Path.home() / self.folder) / self.file


AGENT_FILES: dict[str, AgentFile] = {
    "claude": AgentFile(
        "Claude Code",
        ".claude",
        "settings.json",
        (Slot("PreToolUse", "AskUserQuestion"), Slot("PermissionRequest", "*")),
        _command_handler,
        home_variable="CLAUDE_CONFIG_DIR",
        notes=("Claude Code reads its settings when it starts: restart it (or review the hooks in /hooks).",),
    ),
    "codex": AgentFile(
        "Codex",
        ".codex",
        "hooks.json",
        (Slot("PermissionRequest", "*"),),
        _command_handler,
        home_variable="CODEX_HOME",
        notes=(
            "Codex runs a new or changed hook only once you trust it: start Codex, open /hooks and trust handraise's.",
            "Codex releases from before hooks were on by default need `[features] codex_hooks = true` in config.toml.",
        ),
        project_notes=("Codex loads a project's .codex/hooks.json only when you trust the project.",),
    ),
    "gemini": AgentFile(
        "Gemini CLI",
        ".gemini",
        "settings.json",
        (Slot("BeforeTool", GEMINI_TOOLS),),
        _gemini_handler,
        notes=("Gemini CLI reads its settings when it starts: restart it (`/hooks panel` lists the hook).",),
        project_notes=("Gemini CLI warns once before it runs a new or changed project hook.",),
    ),
    "cursor": AgentFile(
        "Cursor",
        ".cursor",
        "hooks.json",
        (Slot("beforeShellExecution", None), Slot("beforeMCPExecution", None)),
        _cursor_handler,
        version=1,
        notes=("Restart Cursor so that it reads the new hooks (Settings → Hooks lists them).",),
    ),
}


# -- the parts `claude-hook install` shares ---------------------------------------------------------------------------


def hook_command(words: list[str], server: str | None, labels: list[str]) -> str:
    """The command line the agent runs, each word quoted for its shell."""
    words = list(words)
    if server:
        words += ["--server", server]
    for label in labels:
        # A label that starts with "-" would be read as a flag of its own; glued to --label it cannot be.
        words += [f"--label={label}"] if label.startswith("-") else ["--label", label]
    return shlex.join(words)


def check_flags(server: str | None, labels: list[str]) -> None:
    """Refuse now a label or server the hook could not use: every run would fall back to the agent, silently."""
    parse_labels(labels)
    if server and not is_http_url(server):
        raise BadInput(f"--server {server!r}: write the URL of `handraise serve`, e.g. http://127.0.0.1:8765")


def is_http_url(text: str) -> bool:
    try:
        parts = urllib.parse.urlsplit(text)
        host = parts.hostname
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(host) and not any(c.isspace() for c in text)


def install_into(path: Path, agent: AgentFile, command: str, slots: tuple[Slot, ...]) -> list[tuple[str, Slot]]:
    """Put `command` in each slot of the file at `path` and save it if that changed anything; returns (verb, slot)
    for each change. Raises BadInput, with the file untouched, for a file it cannot edit."""
    settings = read_settings(path)
    data = settings.data
    if agent.version is not None:
        if "version" not in data:
            settings.data = data = {"version": agent.version, **data}
        elif data["version"] != agent.version:
            raise BadInput(f"{settings.shown}: version {data['version']!r} is not one handraise knows (expected 1)")
    existing = entries.hooks_table(data, settings.shown, create=False)
    if existing is not None:
        entries.check_slots(existing, slots, settings.shown)
    hooks = entries.hooks_table(data, settings.shown, create=True)
    assert hooks is not None
    changes = [(verb, slot) for slot in slots if (verb := entries.install(hooks, slot, agent.handler(command)))]
    if changes:
        settings.save()
    return changes


def uninstall_from(path: Path, agent: AgentFile) -> tuple[list[Removed], bool]:
    """Take handraise's entries out of the file at `path`: (what was removed, whether the file was deleted because
    nothing else was left in it, as when install created it)."""
    settings = read_settings(path)
    removed = entries.uninstall(settings.data)
    if not removed:
        return [], False
    empty = {} if agent.version is None else {"version": agent.version}
    if settings.data in ({}, empty):
        settings.delete()
        return removed, True
    settings.save()
    return removed, False


# -- `handraise hook install|uninstall` --------------------------------------------------------------------------------


def run_install(args: argparse.Namespace) -> int:
    """0 whether or not anything changed; 2, with nothing changed, for bad flags or a file it cannot edit."""
    return _reporting_bad_input(_install, args)


def run_uninstall(args: argparse.Namespace) -> int:
    """0 whether or not anything changed; 2, with nothing changed, for a file it cannot edit."""
    return _reporting_bad_input(_uninstall, args)


def _install(args: argparse.Namespace) -> int:
    agent = _agent_file(args.agent)
    server: str | None = getattr(args, "server", None)
    labels: list[str] = list(getattr(args, "label", None) or [])
    check_flags(server, labels)
    path = agent.path(project=args.project)
    command = hook_command(["handraise", "hook", args.agent], server, labels)
    changes = install_into(path, agent, command, agent.slots)
    where = display(path)
    if not changes:
        print(f"handraise is already in {where} ({_slots_text(agent.slots)}); no change")
    for verb in ("added", "updated"):
        slots = tuple(slot for done, slot in changes if done == verb)
        if slots:
            preposition = "to" if verb == "added" else "in"
            print(f"{verb.capitalize()} handraise {preposition} {where} ({_slots_text(slots)}), running: {command}")
    notes = [*agent.notes, *(agent.project_notes if args.project else ())] if changes else []
    for note in [*_switched_off(args.agent, path), *notes]:
        print(note, file=sys.stderr)
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    agent = _agent_file(args.agent)
    path = agent.path(project=args.project)
    where = display(path)
    removed, deleted = uninstall_from(path, agent)
    if not removed:
        print(f"{where} has no handraise hooks; no change")
        return 0
    events = ", ".join(dict.fromkeys(Slot(r.event, r.matcher).label for r in removed))
    tail = "; it held nothing else, so it is deleted" if deleted else ""
    print(f"Removed handraise from {where} ({events}){tail}")
    return 0


def _reporting_bad_input(step: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return step(args)
    except BadInput as error:
        print(f"handraise: {error}", file=sys.stderr)
        return 2


def _agent_file(agent: object) -> AgentFile:
    if not isinstance(agent, str) or agent not in AGENT_FILES:
        raise BadInput(f"--for {agent!r}: choose one of {', '.join(AGENT_FILES)}")
    return AGENT_FILES[agent]


def _slots_text(slots: tuple[Slot, ...]) -> str:
    return ", ".join(slot.label for slot in slots)


def _switched_off(agent: str, path: Path) -> list[str]:
    """Warnings for settings that stop the agent running any hook, or handraise's: the install alone is not enough."""
    try:
        data = read_settings(path).data
    except BadInput:
        return []
    warnings: list[str] = []
    if agent == "claude" and data.get("disableAllHooks") is True:
        warnings.append(f"{display(path)} sets disableAllHooks: Claude Code runs no hook until that is removed.")
    if agent == "gemini":
        config = data.get("hooksConfig")
        if isinstance(config, dict) and config.get("enabled") is False:
            warnings.append(f"{display(path)} sets hooksConfig.enabled to false: Gemini CLI runs no hook.")
        hooks = data.get("hooks")
        disabled = hooks.get("disabled") if isinstance(hooks, dict) else None
        if isinstance(disabled, list) and "handraise" in disabled:
            warnings.append(f"{display(path)} lists handraise in hooks.disabled: Gemini CLI will not run it.")
    if agent == "codex":
        warnings += _codex_features_off(path.parent / "config.toml")
    return warnings


def _codex_features_off(config: Path) -> list[str]:
    try:
        features = tomllib.loads(config.read_text(encoding="utf-8")).get("features")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    if isinstance(features, dict) and (features.get("hooks") is False or features.get("codex_hooks") is False):
        return [f"{display(config)} turns hooks off ([features]): Codex runs no hook until that is removed."]
    return []
