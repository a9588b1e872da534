"""`handraise rules`: the config's rules and the learned ones, listed for people or as one JSON list, and
`handraise rules remove ID`, which forgets a learned rule in the store (every running `serve` reads the store on each
permission request, so it stops using the rule at once)."""

from __future__ import annotations

import json
import os
import sys

import anyio

from bot.permissions.rules import Rule, config_rules
from bot.settings.tables import Config
from bot.store.open import open_store

SHOWN_MATCH = 60
"""Characters of a rule's match text shown in the listing for people before it is cut with an ellipsis."""


async def _learned(config: Config) -> list[Rule]:
    store = await open_store(config)
    try:
        return [Rule.learned(learned) for learned in await store.learned_rules()]
    finally:
        await store.close()


async def _forget(config: Config, rule_id: str) -> bool:
    store = await open_store(config)
    try:
        return await store.forget_rule(rule_id)
    finally:
        await store.close()


def list_rules(config: Config, *, as_json: bool) -> int:
    """Print every rule, the config's in file order then the learned ones oldest first; exit 0."""
    rules = [*config_rules(config.rules), *anyio.run(_learned, config)]
    if as_json:
        print(json.dumps([rule.to_listing() for rule in rules], ensure_ascii=False))
        return 0
    if not rules:
        print('no rules: add [[rules]] tables to the config, or choose "Always allow" on a permission prompt')
        return 0
    width = max(len(rule.id) for rule in rules)
    for rule in rules:
        match = json.dumps(rule.match, ensure_ascii=False)
        match = match if len(match) <= SHOWN_MATCH else match[: SHOWN_MATCH - 1] + "…"
        line = f"{rule.id:<{width}}  {rule.source:<7}  {rule.decision:<5}  {rule.tool}  {match}"
        if rule.source == "learned":
            learned_at = f"{rule.learned_at:%Y-%m-%d %H:%M:%S}" if rule.learned_at else "?"
            line += f"  for {rule.agent} in {rule.project}, learned {learned_at}"
        else:
            narrowed = [f"agents {', '.join(rule.agents)}"] if rule.agents is not None else []
            narrowed += [f"{key}={value}" for key, value in rule.labels.items()]
            line += f"  ({'; '.join(narrowed)})" if narrowed else ""
        print(line)
    return 0


def remove_rule(config: Config, rule_id: str, config_file: str | os.PathLike[str] | None) -> int:
    """Forget the learned rule `rule_id`; exit 1 with one line on stderr for a config rule's id or an unknown one."""
    if any(rule.id == rule_id for rule in config_rules(config.rules)):
        where = f" ({os.fspath(config_file)})" if config_file is not None else ""
        print(
            f"handraise: rule {rule_id} is in the config file{where}; remove its [[rules]] table there and restart "
            "serve (`handraise rules remove` removes learned rules)",
            file=sys.stderr,
        )
        return 1
    if not anyio.run(_forget, config, rule_id):
        print(f"handraise: no learned rule {rule_id}; `handraise rules` lists them", file=sys.stderr)
        return 1
    print(f"removed learned rule {rule_id}")
    return 0
