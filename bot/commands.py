"""`handraise serve`, `routes`, `history` and `rules`: the commands that read the config (and so import the whole
bot)."""

from __future__ import annotations

import argparse
import gc
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
    # No cyclic collections while start-up builds what lives as long as the process; serve turns the collector
    # back on, tuned, once it is serving (bot.program.serve).
    gc.disable()
    flag: str | None = getattr(args, "log_format", None)
    start_logging(flag or "text")  # the config may say json: known once it is read
    config = load(args.config)
    if flag is None and config.server.log_format == "json":
        start_logging("json")
    # Only now, so that whatever importing the server's libraries warns about is logged as the config says.
    from bot.program import CannotListen, Running, run_serve

    path = config_path(args.config)

    def ready(where: Running) -> None:
        say(f"handraise is serving {where.base_url}  (config: {path or 'none; the embedded default'})")
        say(f'  agents ask:   POST {where.base_url}/v1/questions   or   handraise ask "…?"')
        say(f"  MCP clients:  {where.base_url}/mcp   or   handraise mcp")
        for title, url in where.links.items():
            say(f"  {title + ':':<13} {url}")
        if where.resumed:
            say(f"  resumed {where.resumed} pending question(s) from the store")

    try:
        run_serve(config, on_ready=ready)
    except CannotListen as error:
        complain(f"handraise: {error}")
        return 1
    except BaseExceptionGroup as group:
        # A task group wraps a failure at start (a damaged store) in a group; one failure is reported as itself.
        raise sole_exception(group) from None
    return 0


def start_logging(log_format: str) -> None:
    """Readable lines on stderr, or (`json`) one JSON object a line for everything that reaches stderr."""
    if log_format == "json":
        from bot.logs.json_lines import log_json

        log_json()
    else:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def say(line: str) -> None:
    """A line of serve's start banner on stdout: as it is, or as a JSON object whose `message` is the line."""
    from bot.logs.json_lines import banner_line, logs_json

    print(banner_line(line.strip()) if logs_json() else line, flush=True)


def complain(line: str) -> None:
    """A one-line error on stderr: as it is, or as a JSON object when serve logs JSON."""
    from bot.logs.json_lines import SERVE_LOGGER, logs_json

    if logs_json():
        logging.getLogger(SERVE_LOGGER).error(line)
    else:
        print(line, file=sys.stderr)


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


def run_channel_command(argv: list[str]) -> int:
    """`handraise <channel> <command> [--config FILE] …`: a command a channel kind brings (`ChannelKind.commands`),
    given the channel's settings from the config (its secrets are not needed) and the rest of the line."""
    import importlib

    from bot.kinds import KINDS

    kind = KINDS.get(argv[0])
    if kind is None or not kind.commands:
        print(f"handraise: {argv[0]!r} is not a command; see handraise --help", file=sys.stderr)
        return 2
    known = ", ".join(sorted(kind.commands))
    if len(argv) < 2 or argv[1] not in kind.commands:
        lines = [f"  handraise {kind.name} {name}: {help_}" for name, (_, help_) in sorted(kind.commands.items())]
        print(f"usage: handraise {kind.name} {{{known}}} [--config FILE]\n" + "\n".join(lines), file=sys.stderr)
        return 0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2
    parser = argparse.ArgumentParser(prog=f"handraise {kind.name} {argv[1]}", description=kind.commands[argv[1]][1])
    parser.add_argument("--config", help="config file (default: $HANDRAISE_CONFIG, else ./config.toml)")
    args, rest = parser.parse_known_args(argv[2:])
    try:
        settings = load(args.config, secrets=False).channel(kind.name)
    except ConfigError as error:
        print(f"handraise: {error}", file=sys.stderr)
        return 2
    if settings is None:
        print(f"handraise: the config has no [{kind.name}] table; add one (config.example.toml)", file=sys.stderr)
        return 2
    module, _, function = kind.commands[argv[1]][0].partition(":")
    return int(getattr(importlib.import_module(module), function)(settings, rest))


def run(args: argparse.Namespace) -> int:
    """Run the chosen command; a bad config exits 2 and a store that cannot be opened exits 1, each in one line."""
    commands = {"serve": cmd_serve, "routes": cmd_routes, "history": cmd_history, "rules": cmd_rules}
    try:
        return commands[args.command](args)
    except ConfigError as error:
        complain(f"handraise: {error}")
        return 2
    except StoreError as error:
        complain(f"handraise: {error}")
        return 1
    except BadArguments as error:
        print(f"handraise: {error}", file=sys.stderr)
        return 2
