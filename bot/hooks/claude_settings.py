"""`handraise claude-hook install|uninstall`: put handraise's hook entries into Claude Code's settings file, or take
them out again, leaving every other setting and hook as it was.

The older spelling of `handraise hook install --for claude`, kept working as before: it writes `handraise
claude-hook` commands, takes `--settings FILE` and `--no-permissions`, and reports each change on a line of its own.
The editing itself is `bot.hooks.install`'s, shared with the other agents, so both spellings recognise and replace
each other's entries.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.hooks import install

CLAUDE = install.AGENT_FILES["claude"]


def run_settings(args: argparse.Namespace) -> int:
    """`claude-hook install` / `uninstall`: 0 whether or not anything changed, 2 for a settings file it cannot edit."""
    path = Path(args.settings) if args.settings else CLAUDE.path(project=not args.user)
    if args.action == "install":
        install.check_flags(args.server, args.label)
        command = install.hook_command(["handraise", "claude-hook"], args.server, args.label)
        slots = CLAUDE.slots[:1] if args.no_permissions else CLAUDE.slots
        changes = [
            f"{verb} {slot.event} [{slot.matcher}]: {command} (timeout {install.AGENT_TIMEOUT_SECONDS} s)"
            for verb, slot in install.install_into(path, CLAUDE, command, slots)
        ]
    else:
        removed, _ = install.uninstall_from(path, CLAUDE)
        changes = [f"removed {r.event} [{r.matcher or ''}]: {r.command}" for r in removed]
    if not changes:
        print(f"{path}: already {'set up' if args.action == 'install' else 'without handraise hooks'}; no change")
        return 0
    for change in changes:
        print(f"{path}: {change}")
    if args.action == "install":
        print("Restart Claude Code (or run /hooks) for the hooks to take effect.", file=sys.stderr)
    return 0
