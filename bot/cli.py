"""`handraise`: serve, ask, routes, history. Made for people and for shell scripts (stable exit codes)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from bot.asking import BadInput, parse_labels
from bot.config import Config, ConfigError, load_config
from bot.records import AgentRef
from bot.store import Store, StoreError

DEFAULT_SERVER = "http://127.0.0.1:8765"
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
    from bot.program import Running, serve

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = load(args.config)
    path = config_path(args.config)

    def ready(where: Running) -> None:
        print(f"handraise is serving {where.base_url}  (config: {path or 'none; the embedded default'})", flush=True)
        print(f'  agents ask:   POST {where.base_url}/v1/questions   or   handraise ask "…?"', flush=True)
        if where.inbox_url:
            print(f"  web inbox:    {where.inbox_url}", flush=True)
        if where.resumed:
            print(f"  resumed {where.resumed} pending question(s) from the store", flush=True)

    anyio.run(lambda: serve(config, on_ready=ready))
    return 0


def cmd_routes(args: argparse.Namespace) -> int:
    from bot.routing import Router

    config = load(args.config, secrets=False)
    labels = parse_labels(args.label)
    agent = None if args.agent is None else AgentRef(id=args.agent, name=args.name, labels=labels)
    router = Router.from_config(config)
    who = f"agent {args.agent}" if agent else "an agentless request"
    taken = router.routes(agent)
    print(f"{who}: " + (" → ".join(route.channel for route in taken) if taken else "no answerer (NO_PROVIDER)"))
    for line in router.explain(agent):
        print("  " + line)
    return 0 if taken else 4


def cmd_history(args: argparse.Namespace) -> int:
    config = load(args.config, secrets=False)
    with Store.open(config.store.path) as store:
        events = store.history(agent_id=args.agent, question_id=args.question, limit=args.limit)
    for event in events:
        if args.json:
            print(event.model_dump_json())
            continue
        who = f" by {event.actor}" if event.actor else ""
        via = f" via {event.channel}" if event.channel else ""
        detail = json.dumps(event.detail, ensure_ascii=False, separators=(",", ":")) if event.detail else ""
        print(f"{event.at:%Y-%m-%d %H:%M:%S}  {event.question_id}  {event.kind}{via}{who}  {detail}".rstrip())
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    from bot.asking import run_ask

    return run_ask(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="handraise", description="Route an agent's questions to the right human.")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the channels, the web inbox and the HTTP API")
    serve.add_argument("--config", help=f"config file (default: $HANDRAISE_CONFIG, else ./{DEFAULT_CONFIG_NAME})")
    serve.set_defaults(run=cmd_serve)

    ask = commands.add_parser("ask", help="ask from a shell and print the answer JSON")
    ask.add_argument("question", nargs="?", help="the question (omit with --json)")
    ask.add_argument("-o", "--option", action="append", default=[], help="an option label (repeat)")
    ask.add_argument("--multi", action="store_true", help="allow several options")
    ask.add_argument("--header", help="a short title")
    ask.add_argument("--detail", help="supporting text, or @FILE to read it from a file")
    ask.add_argument("--plan-review", metavar="APPROVE_LABEL", help="a plan review; the option that approves")
    ask.add_argument("--agent", help="the asking agent's id")
    ask.add_argument("--agent-name", help="the asking agent's display name")
    ask.add_argument("--label", action="append", default=[], help="an agent label key=value (repeat)")
    ask.add_argument("--json", metavar="FILE", help="the whole request body as JSON ('-' for stdin)")
    ask.add_argument("--server", default=os.environ.get("HANDRAISE_SERVER", DEFAULT_SERVER), help="server URL")
    ask.add_argument("--timeout", help="give up (and cancel the question) after this long, e.g. 30m")
    ask.set_defaults(run=cmd_ask)

    routes = commands.add_parser("routes", help="show which answerers would take an agent's questions, and why")
    routes.add_argument("--config")
    routes.add_argument("--agent", help="agent id (omit for an agentless request)")
    routes.add_argument("--name", help="agent display name")
    routes.add_argument("--label", action="append", default=[], help="key=value (repeat)")
    routes.set_defaults(run=cmd_routes)

    history = commands.add_parser("history", help="show the audit log of answers, cancellations and expiries")
    history.add_argument("--config")
    history.add_argument("--agent", help="only this agent's questions")
    history.add_argument("--question", help="only this question")
    history.add_argument("--limit", type=int, default=200)
    history.add_argument("--json", action="store_true", help="one JSON object per line")
    history.set_defaults(run=cmd_history)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (ConfigError, BadInput) as error:
        print(f"handraise: {error}", file=sys.stderr)
        return 2
    except StoreError as error:
        print(f"handraise: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
