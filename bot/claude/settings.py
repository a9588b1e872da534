"""`handraise claude-hook install|uninstall`: put handraise's hook entries into Claude Code's settings file, or take
them out again, leaving every other setting and hook as it was.

Layout from Claude Code's "Hooks reference" (configuration section): `hooks` → event name → a list of matcher groups
`{"matcher": …, "hooks": [{"type": "command", "command": …, "timeout": seconds}]}`. handraise's entries are the
commands that run `handraise claude-hook`; installing twice changes nothing, and a changed command is replaced.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import urllib.parse
from pathlib import Path
from typing import Any

from bot.clients.ask import BadInput, parse_labels

HOOK_TIMEOUT_SECONDS = 3600
"""The `timeout` written into the hook entries (Claude Code's own default is 600 s): above the hook's own wait of
59m40s (bot/hooks/runner.py), so the hook cancels its question before Claude Code kills it."""

ENTRIES = (("PreToolUse", "AskUserQuestion"), ("PermissionRequest", "*"))
"""Where handraise hooks in: AskUserQuestion before it runs, and every permission prompt."""


def settings_path(scope: str, cwd: Path | None = None) -> Path:
    """~/.claude/settings.json (user) or ./.claude/settings.json (project)."""
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    return (cwd or Path.cwd()) / ".claude" / "settings.json"


def hook_command(server: str | None, labels: list[str]) -> str:
    words = ["handraise", "claude-hook"]
    if server:
        words += ["--server", server]
    for label in labels:
        words += ["--label", label]
    return shlex.join(words)


def is_ours(hook: object) -> bool:
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return False
    return len(words) >= 2 and os.path.basename(words[0]) == "handraise" and words[1] == "claude-hook"


def install_hooks(settings: dict[str, Any], command: str, events: tuple[tuple[str, str], ...]) -> list[str]:
    """Add or update handraise's entries in `settings` (changed in place); returns what changed, one line each."""
    hooks = _hooks_table(settings)
    changes: list[str] = []
    wanted = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}
    for event, matcher in events:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise BadInput(f"hooks.{event} in the settings file is not a list; fix it by hand first")
        group = next((g for g in groups if isinstance(g, dict) and g.get("matcher") == matcher), None)
        if group is None:
            groups.append({"matcher": matcher, "hooks": [wanted]})
            changes.append(f"added {event} [{matcher}]: {command} (timeout {HOOK_TIMEOUT_SECONDS} s)")
            continue
        entries = group.setdefault("hooks", [])
        ours = [entry for entry in entries if is_ours(entry)]
        if ours == [wanted]:
            continue
        group["hooks"] = [entry for entry in entries if not is_ours(entry)] + [wanted]
        verb = "updated" if ours else "added"
        changes.append(f"{verb} {event} [{matcher}]: {command} (timeout {HOOK_TIMEOUT_SECONDS} s)")
    return changes


def uninstall_hooks(settings: dict[str, Any]) -> list[str]:
    """Remove every handraise entry (and the groups and events it leaves empty); returns what changed."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return []
    changes: list[str] = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups: list[Any] = []
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list) or not any(is_ours(entry) for entry in entries):
                kept_groups.append(group)
                continue
            for entry in entries:
                if is_ours(entry):
                    changes.append(f"removed {event} [{group.get('matcher', '')}]: {entry['command']}")
            kept = [entry for entry in entries if not is_ours(entry)]
            if kept:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del settings["hooks"]
    return changes


def _hooks_table(settings: dict[str, Any]) -> dict[str, Any]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise BadInput("hooks in the settings file is not an object; fix it by hand first")
    return hooks


def read_settings(path: Path) -> dict[str, Any]:
    """The settings as a dict ({} when there is no file). Raises BadInput for a file that is not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise BadInput(f"{path}: {error.strerror or error}") from None
    try:
        settings = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as error:
        raise BadInput(f"{path}: not valid JSON ({error}); fix it by hand, nothing was changed") from None
    if not isinstance(settings, dict):
        raise BadInput(f"{path}: expected a JSON object; nothing was changed")
    return settings


def write_settings(path: Path, settings: dict[str, Any]) -> None:
    # Written beside the file and renamed over it, so Claude Code never reads half a file.
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False, suffix=".tmp") as out:
        json.dump(settings, out, indent=2, ensure_ascii=False)
        out.write("\n")
    os.replace(out.name, path)


def run_settings(args: argparse.Namespace) -> int:
    """`claude-hook install` / `uninstall`: 0 whether or not anything changed, 2 for a settings file it cannot edit."""
    path = Path(args.settings) if args.settings else settings_path("user" if args.user else "project")
    settings = read_settings(path)
    if args.action == "install":
        # A label or server the hook cannot use would make every run fall back to the terminal, silently.
        parse_labels(args.label)
        if args.server and not _is_http_url(args.server):
            raise BadInput(f"--server {args.server!r}: write the URL of `handraise serve`, e.g. http://127.0.0.1:8765")
        events = ENTRIES[:1] if args.no_permissions else ENTRIES
        changes = install_hooks(settings, hook_command(args.server, args.label), events)
    else:
        changes = uninstall_hooks(settings)
    if not changes:
        print(f"{path}: already {'set up' if args.action == 'install' else 'without handraise hooks'}; no change")
        return 0
    write_settings(path, settings)
    for change in changes:
        print(f"{path}: {change}")
    if args.action == "install":
        print("Restart Claude Code (or run /hooks) for the hooks to take effect.", file=sys.stderr)
    return 0


def _is_http_url(text: str) -> bool:
    parts = urllib.parse.urlsplit(text)
    return parts.scheme in ("http", "https") and bool(parts.hostname) and not any(c.isspace() for c in text)
