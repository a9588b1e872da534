"""`handraise serve`, `routes`, `history` and `rules`: the commands that read the config (and so import the whole
bot)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from bot.clients.ask import agent_labels
from bot.config import Config, load_config
from bot.permissions.audit import rule_line_json, rule_line_text
from bot.settings.errors import ConfigError
from bot.store.chain import ChainCheck, ChainRow, ExportError, Verdict, export_line, read_export_line
from bot.store.errors import StoreError
from bot.store.records import AgentRef, AuditEvent

DEFAULT_CONFIG_NAME = "config.toml"


def config_path(given: str | None) -> Path | None:
    """--config, else $HANDRAISE_CONFIG, else ./config.toml when it exists, else None (the embedded default)."""
    if given:
        return Path(given)
    if os.environ.get("HANDRAISE_CONFIG"):
        return Path(os.environ["HANDRAISE_CONFIG"])
    local = Path(DEFAULT_CONFIG_NAME)
    return local if local.exists() else None


def load(given: str | None, *, secrets: bool = True) -> Config:
    """The config; `secrets=False` for commands that only read it, so they run without the channels' tokens."""
    return load_config(config_path(given), check_environment=secrets)


def cmd_serve(args: argparse.Namespace) -> int:
    from bot.program import CannotListen, Running, run_serve

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = load(args.config)
    path = config_path(args.config)

    def ready(where: Running) -> None:
        print(f"handraise is serving {where.base_url}  (config: {path or 'none; the embedded default'})", flush=True)
        print(f'  agents ask:   POST {where.base_url}/v1/questions   or   handraise ask "…?"', flush=True)
        print(f"  MCP clients:  {where.base_url}/mcp   or   handraise mcp", flush=True)
        for title, url in where.links.items():
            print(f"  {title + ':':<13} {url}", flush=True)
        if where.resumed:
            print(f"  resumed {where.resumed} pending question(s) from the store", flush=True)

    try:
        run_serve(config, on_ready=ready)
    except CannotListen as error:
        print(f"handraise: {error}", file=sys.stderr)
        return 1
    except BaseExceptionGroup as group:
        # A task group wraps a failure at start (a damaged store) in a group; one failure is reported as itself.
        raise sole_exception(group) from None
    return 0


def sole_exception(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception inside (nested) groups, or the group itself when it holds several."""
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return group if isinstance(inner, BaseExceptionGroup) else inner


def cmd_routes(args: argparse.Namespace) -> int:
    from bot.questions.routing import Router

    labels = agent_labels(args.agent, args.label, args.name, name_flag="--name")
    config = load(args.config, secrets=False)
    agent = None if args.agent is None else AgentRef(id=args.agent, name=args.name, labels=labels)
    router = Router.from_config(config)
    who = f"agent {args.agent}" if agent else "an agentless request"
    taken = router.routes(agent)
    print(f"{who}: " + (" → ".join(route.channel for route in taken) if taken else "no answerer (NO_PROVIDER)"))
    for line in router.explain(agent):
        print("  " + line)
    return 0 if taken else 4


def cmd_history(args: argparse.Namespace) -> int:
    if args.source is not None or args.verify or args.export is not None:
        return history_proof(args)
    config = load(args.config, secrets=False)
    events = anyio.run(read_history, config, args)
    for event in events:
        if event.kind == "rule":  # a decision a rule made: a line of its own, with no question
            if args.json:
                line = rule_line_json(event) | {"prev": event.prev, "hash": event.hash}
                print(json.dumps(line, ensure_ascii=False))
            else:
                print(rule_line_text(event))
            continue
        if args.json:
            print(event.model_dump_json())
            continue
        who = f" by {event.actor}" if event.actor else ""
        via = f" via {event.channel}" if event.channel else ""
        detail = json.dumps(event.detail, ensure_ascii=False, separators=(",", ":")) if event.detail else ""
        print(f"{event.at:%Y-%m-%d %H:%M:%S}  {event.question_id}  {event.kind}{via}{who}  {detail}".rstrip())
    return 0


async def read_history(config: Config, args: argparse.Namespace) -> list[AuditEvent]:
    from bot.store.open import open_store

    store = await open_store(config)
    try:
        return await store.history(agent_id=args.agent, question_id=args.question, limit=args.limit)
    finally:
        await store.close()


PAGE = 5000
"""Audit rows read per query when verifying or exporting: the log can be far longer than memory should hold."""


def history_proof(args: argparse.Namespace) -> int:
    """`history --verify [--from FILE]` and `history --export FILE`: the whole log, so no filter applies."""
    narrowed = [flag for flag, value in (("--agent", args.agent), ("--question", args.question)) if value]
    if narrowed:
        raise BadArguments(f"{narrowed[0]} cannot narrow --verify or --export: the chain covers the whole log")
    if args.source is not None:
        if not args.verify:
            raise BadArguments("--from FILE reads an export to verify; add --verify")
        return print_verdict(verify_export(args.source))
    config = load(args.config, secrets=False)
    if args.verify:
        return print_verdict(anyio.run(verify_store, config))
    count = anyio.run(export_store, config, args.export)
    if args.export != "-":
        print(f"{count} rows exported to {args.export}")
    return 0


class BadArguments(ValueError):
    """Flags that do not go together; the message says which."""


def print_verdict(verdict: Verdict) -> int:
    for line in verdict.lines():
        print(line)
    return 0 if verdict.broken is None else 1


async def _pages(config: Config) -> AsyncIterator[list[ChainRow]]:
    from bot.store.open import open_store

    store = await open_store(config)
    try:
        after = 0
        while rows := await store.audit_rows(after_seq=after, limit=PAGE):
            yield rows
            after = rows[-1].seq
    finally:
        await store.close()


async def verify_store(config: Config) -> Verdict:
    check = ChainCheck()
    async for rows in _pages(config):
        if not all(check.add(row) for row in rows):
            break
    return check.verdict()


async def export_store(config: Config, target: str) -> int:
    """Write every row to `target` ("-": stdout), through a temporary file renamed at the end: a half-written export
    never stands in its place. Returns how many rows."""
    count = 0
    if target == "-":
        async for rows in _pages(config):
            sys.stdout.write("".join(export_line(row) + "\n" for row in rows))
            count += len(rows)
        return count
    path = Path(target)
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as file:
            async for rows in _pages(config):
                file.write("".join(export_line(row) + "\n" for row in rows))
                count += len(rows)
        partial.replace(path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise BadArguments(f"cannot write {target}: {error.strerror or error}") from None
    return count


def verify_export(source: str) -> Verdict:
    """Verify an export file on its own. Raises BadArguments when it cannot be read or a line is not a row."""
    check = ChainCheck()
    try:
        with open(source, encoding="utf-8") as file:
            for number, text in enumerate(file, start=1):
                if not text.strip():
                    continue
                if not check.add(read_export_line(text, number)):
                    break
    except OSError as error:
        raise BadArguments(f"cannot read {source}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise BadArguments(f"{source} is not UTF-8 text, so not an export of handraise history") from None
    except ExportError as error:
        raise BadArguments(f"{source}: {error}") from None
    return check.verdict()


def cmd_rules(args: argparse.Namespace) -> int:
    """List the config's rules and the learned ones, or remove a learned one (`handraise rules remove ID`)."""
    from bot.permissions.listing import list_rules, remove_rule

    config = load(args.config, secrets=False)
    if getattr(args, "action", None) == "remove":
        return remove_rule(config, args.id, config_path(args.config))
    return list_rules(config, as_json=args.json)


def run(args: argparse.Namespace) -> int:
    """Run the chosen command; a bad config exits 2 and a store that cannot be opened exits 1, each in one line."""
    commands = {"serve": cmd_serve, "routes": cmd_routes, "history": cmd_history, "rules": cmd_rules}
    try:
        return commands[args.command](args)
    except ConfigError as error:
        print(f"handraise: {error}", file=sys.stderr)
        return 2
    except StoreError as error:
        print(f"handraise: {error}", file=sys.stderr)
        return 1
    except BadArguments as error:
        print(f"handraise: {error}", file=sys.stderr)
        return 2
