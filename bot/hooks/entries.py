"""handraise's entries in an agent's `hooks` table: which are ours, putting them in, taking them out.

Two layouts exist. Claude Code, Codex and Gemini CLI group handlers under a matcher: `hooks` → event → a list of
`{"matcher": …, "hooks": [handler, …]}`. Cursor lists the handlers straight under the event: `hooks` → event →
`[handler, …]`. A handler is ours when its command runs `handraise hook …` or `handraise claude-hook …` (by any path
to `handraise`), so an entry written by an older handraise, or with other flags, is recognised and replaced.

Installing twice changes nothing; installing with other flags replaces our entry; uninstalling takes out every entry
of ours and only the lists and tables that it left empty, so a file install created comes back as it was.
Pure functions on the parsed JSON, standard library only.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import Any

from bot.clients.ask import BadInput

HOOK_AGENTS = ("claude", "codex", "gemini", "cursor")


@dataclass(frozen=True)
class Slot:
    """Where one handler of ours goes: an event, and the matcher of its group (None where handlers are not grouped)."""

    event: str
    matcher: str | None

    @property
    def label(self) -> str:
        # A plain tool name says something; a match-all or a long regex only clutters the line.
        shown = self.matcher is not None and self.matcher.isidentifier()
        return f"{self.event} [{self.matcher}]" if shown else self.event


@dataclass(frozen=True)
class Removed:
    """One handler of ours taken out: the event and matcher it was under, and its command."""

    event: str
    matcher: str | None
    command: str


def is_handraise_command(command: object) -> bool:
    """`handraise hook AGENT …` or `handraise claude-hook …`, with `handraise` by any path."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) < 2 or os.path.basename(words[0]) != "handraise":
        return False
    return words[1] == "claude-hook" or (words[1] == "hook" and len(words) > 2 and words[2] in HOOK_AGENTS)


def is_ours(handler: object) -> bool:
    return isinstance(handler, dict) and is_handraise_command(handler.get("command"))


def hooks_table(settings: dict[str, Any], shown: str, *, create: bool) -> dict[str, Any] | None:
    """The `hooks` object of `settings` (made when `create`). Raises BadInput when it is something else."""
    if "hooks" not in settings:
        if not create:
            return None
        settings["hooks"] = {}
    hooks = settings["hooks"]
    if not isinstance(hooks, dict):
        raise BadInput(f"{shown}: `hooks` is not an object; fix it by hand first, nothing was changed")
    return hooks


def check_slots(hooks: dict[str, Any], slots: tuple[Slot, ...], shown: str) -> None:
    """Refuse, before anything changes, an event of ours that is not a list."""
    for slot in slots:
        if slot.event in hooks and not isinstance(hooks[slot.event], list):
            raise BadInput(f"{shown}: `hooks.{slot.event}` is not a list; fix it by hand first, nothing was changed")


def is_installed(hooks: dict[str, Any], slot: Slot, wanted: dict[str, Any]) -> bool:
    """Exactly one handler of ours under the event, equal to `wanted` and where `slot` puts it."""
    entries = hooks.get(slot.event)
    if not isinstance(entries, list):
        return False
    found: list[tuple[str | None, Any]] = list(_ours_in(entries))
    return len(found) == 1 and found[0] == (slot.matcher, wanted)


def install(hooks: dict[str, Any], slot: Slot, wanted: dict[str, Any]) -> str | None:
    """Put `wanted` in its slot, replacing any handler of ours under that event: "added", "updated", or None when
    it was there already."""
    if is_installed(hooks, slot, wanted):
        return None
    entries: list[Any] = hooks.setdefault(slot.event, [])
    replaced = _strip(slot.event, entries)
    if slot.matcher is None:
        entries.append(wanted)
    else:
        group = next((g for g in entries if _is_group(g) and g.get("matcher") == slot.matcher), None)
        if group is None:
            entries.append({"matcher": slot.matcher, "hooks": [wanted]})
        else:
            group["hooks"].append(wanted)
    return "updated" if replaced else "added"


def uninstall(settings: dict[str, Any]) -> list[Removed]:
    """Take every handler of ours out of `settings`, and the groups, events and `hooks` table left empty by that."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed: list[Removed] = []
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list):
            continue  # Gemini keeps `hooks.disabled` and the like beside the events
        taken = _strip(str(event), entries)
        removed += taken
        if taken and not entries:
            del hooks[event]
    if removed and not hooks:
        del settings["hooks"]
    return removed


def _is_group(entry: object) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("hooks"), list)


def _matcher(group: dict[str, Any]) -> str | None:
    matcher = group.get("matcher")
    return matcher if isinstance(matcher, str) else None


def _ours_in(entries: list[Any]) -> list[tuple[str | None, Any]]:
    """Each handler of ours under an event, with the matcher of its group (None for an ungrouped handler)."""
    found: list[tuple[str | None, Any]] = []
    for entry in entries:
        if _is_group(entry):
            found += [(_matcher(entry), handler) for handler in entry["hooks"] if is_ours(handler)]
        elif is_ours(entry):
            found.append((None, entry))
    return found


def _strip(event: str, entries: list[Any]) -> list[Removed]:
    """Remove our handlers from an event's list in place, and the groups that held nothing else."""
    removed: list[Removed] = []
    kept: list[Any] = []
    for entry in entries:
        if _is_group(entry):
            handlers = entry["hooks"]
            ours = [handler for handler in handlers if is_ours(handler)]
            removed += [Removed(event, _matcher(entry), handler["command"]) for handler in ours]
            if ours:
                entry["hooks"] = [handler for handler in handlers if not is_ours(handler)]
                if not entry["hooks"]:
                    continue
        elif is_ours(entry):
            removed.append(Removed(event, None, entry["command"]))
            continue
        kept.append(entry)
    entries[:] = kept
    return removed
