"""`handraise`: serve, ask, routes, history, mcp, claude-hook. For people and for shell scripts (stable exit codes).

Each command's module is imported only when that command runs: `handraise claude-hook` runs on every question and
permission prompt of a Claude Code session and `handraise ask` in shell loops, so they must not pay for importing
aiohttp, slack-bolt and pydantic, which only `serve` needs. Keep this module's own imports to the standard library.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

DEFAULT_SERVER = "http://127.0.0.1:8765"
HOOK_AGENTS = ("claude", "codex", "gemini", "cursor")
CONFIG_HELP = "config file (default: $HANDRAISE_CONFIG, else ./config.toml)"


def _runs(parser: argparse.ArgumentParser, target: str) -> None:
    """`target` is "module:function", imported when the command runs."""
    parser.set_defaults(run=target)


def _server_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server",
        default=os.environ.get("HANDRAISE_SERVER", DEFAULT_SERVER),
        help=f"the running `handraise serve` (default: $HANDRAISE_SERVER, else {DEFAULT_SERVER})",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="handraise", description="Route an agent's questions to the right human.")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the channels, the web inbox and the HTTP API")
    serve.add_argument("--config", help=CONFIG_HELP)
    _runs(serve, "bot.commands:run")

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
    _server_flag(ask)
    ask.add_argument("--timeout", help="give up (and cancel the question) after this long, e.g. 30m")
    _runs(ask, "bot.clients.ask:run_ask")

    routes = commands.add_parser("routes", help="show which answerers would take an agent's questions, and why")
    routes.add_argument("--config")
    routes.add_argument("--agent", help="agent id (omit for an agentless request)")
    routes.add_argument("--name", help="agent display name")
    routes.add_argument("--label", action="append", default=[], help="key=value (repeat)")
    _runs(routes, "bot.commands:run")

    history = commands.add_parser("history", help="show the audit log of answers, cancellations and expiries")
    history.add_argument("--config")
    history.add_argument("--agent", help="only this agent's questions")
    history.add_argument("--question", help="only this question")
    history.add_argument("--limit", type=int, default=200)
    history.add_argument("--json", action="store_true", help="one JSON object per line")
    _runs(history, "bot.commands:run")
    mcp = commands.add_parser(
        "mcp",
        help="an MCP server on stdin/stdout for Claude Desktop, Cursor and other MCP clients",
        description="Serve ask_user_question, get_answer and cancel_question over MCP's stdio transport, asking "
        "through the running `handraise serve` (its /mcp path serves the same tools over HTTP).",
    )
    _server_flag(mcp)
    mcp.add_argument("--label", action="append", default=[], help="an agent label key=value for routing (repeat)")
    mcp.add_argument("--wait", type=float, default=50.0, help="default wait_seconds of a call (default: 50)")
    mcp.add_argument("--progress-every", type=float, default=15.0, help="seconds between progress notifications")
    _runs(mcp, "bot.mcp_server.stdio:run_mcp")

    hook = commands.add_parser(
        "claude-hook",
        help="answer Claude Code's questions and permission prompts through handraise (reads a hook event on stdin)",
        description="Run by Claude Code as a hook. Without an action: read the hook event on stdin, ask through the "
        "running `handraise serve`, print the decision. Anything going wrong leaves the decision to Claude Code.",
    )
    _server_flag(hook)
    hook.add_argument("--label", action="append", default=[], help="an agent label key=value for routing (repeat)")
    hook.add_argument("--timeout", help="give up (and cancel the question) after this long (default: 59m40s)")
    _runs(hook, "bot.claude.hook:run_hook")
    actions = hook.add_subparsers(dest="action", metavar="{install,uninstall}")
    for action, text in (("install", "add handraise's hooks to Claude Code's settings"), ("uninstall", "remove them")):
        sub = actions.add_parser(action, help=text)
        where = sub.add_mutually_exclusive_group()
        where.add_argument("--user", action="store_true", help="~/.claude/settings.json")
        where.add_argument("--project", action="store_true", help="./.claude/settings.json (the default)")
        where.add_argument("--settings", metavar="FILE", help="another settings file")
        if action == "install":
            sub.add_argument("--server", default=None, help="write --server URL into the hook command")
            sub.add_argument("--label", action="append", default=[], help="write --label key=value into it (repeat)")
            sub.add_argument("--no-permissions", action="store_true", help="only AskUserQuestion, not tool prompts")
        _runs(sub, "bot.claude.settings:run_settings")

    agent_hook = commands.add_parser("hook", help="a coding agent's hook: answer its permission prompts")
    hook_actions = agent_hook.add_subparsers(dest="action", required=True)
    for action, text in (("install", "add handraise to a coding agent's hooks"), ("uninstall", "take it out again")):
        sub = hook_actions.add_parser(action, help=text)
        sub.add_argument("--for", dest="agent", required=True, choices=HOOK_AGENTS, help="the coding agent")
        sub.add_argument("--project", action="store_true", help="the project's file in this folder, not the user's")
        if action == "install":
            sub.add_argument("--server", default=None, help="write --server URL into the hook command")
            sub.add_argument("--label", action="append", default=[], help="write --label key=value into it (repeat)")
        _runs(sub, f"bot.hooks.install:run_{action}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    module_name, _, function_name = str(args.run).partition(":")
    command = getattr(importlib.import_module(module_name), function_name)
    from bot.clients.ask import BadInput

    try:
        return int(command(args))
    except BadInput as error:
        print(f"handraise: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
