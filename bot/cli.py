"""`handraise`: serve, ask, routes, history, mcp, hook. For people and for shell scripts (stable exit codes).

Each command's module is imported only when that command runs: `handraise hook <agent>` runs on every tool call a
coding agent asks about and `handraise ask` in shell loops, so they must not pay for importing aiohttp, slack-bolt
and pydantic, which only `serve` needs. Keep this module's own imports to the standard library.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

DEFAULT_SERVER = "http://127.0.0.1:8765"
CONFIG_HELP = "config file (default: $HANDRAISE_CONFIG, else ./config.toml)"
HOOK_AGENTS = {
    "claude": "answer Claude Code's questions and permission prompts",
    "codex": "answer Codex's PermissionRequest",
    "gemini": "answer Gemini CLI's BeforeTool",
    "cursor": "answer Cursor's beforeShellExecution and beforeMCPExecution",
}
NOTE_AGENTS = ("claude", "codex")
"""The agents whose hooks can also post status notes (`--notify`)."""
HOOK_WAIT_DEFAULT = "59m40s"
"""bot.hooks.runner.DEFAULT_WAIT_SECONDS as written in `--help` (tests/hooks/test_cli.py keeps them equal)."""


def _runs(parser: argparse.ArgumentParser, target: str) -> None:
    """`target` is "module:function", imported when the command runs."""
    parser.set_defaults(run=target)


def _server_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server",
        default=os.environ.get("HANDRAISE_SERVER", DEFAULT_SERVER),
        help=f"the running `handraise serve` (default: $HANDRAISE_SERVER, else {DEFAULT_SERVER})",
    )


def _hook_flags(parser: argparse.ArgumentParser) -> None:
    _server_flag(parser)
    parser.add_argument("--label", action="append", default=[], help="an agent label key=value for routing (repeat)")
    parser.add_argument(
        "--timeout", help=f"give up (and cancel the question) after this long (default: {HOOK_WAIT_DEFAULT})"
    )
    parser.add_argument(
        "--on-timeout",
        choices=("fallback", "deny"),
        default="fallback",
        help="when no answer comes in time: leave it to the agent's own prompt, or deny (default: fallback)",
    )


def _notify_flag(parser: argparse.ArgumentParser, *, payload: bool) -> None:
    """`--notify` runs the status-note hook instead of the permission hook (docs/agents.md#status-notes)."""
    parser.add_argument(
        "--notify",
        dest="run",
        action="store_const",
        const="bot.hooks.notify:run_notify",
        help="post a status note (finished, waiting for you) where the agent's questions go, instead of asking",
    )
    if payload:
        parser.add_argument("payload", nargs="*", help="with --notify: Codex's notification JSON, its last argument")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="handraise",
        description="Route an agent's questions to the right human.",
        epilog="A channel may bring commands of its own: handraise <channel> <command> (e.g. listing where its bot "
        "was added; docs/ says which).",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the channels, the web inbox and the HTTP API")
    serve.add_argument("--config", help=CONFIG_HELP)
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        help="what serve writes: readable lines, or one JSON object a line (default: [server] log_format, else text)",
    )
    _runs(serve, "bot.commands:run")

    ask = commands.add_parser("ask", help="ask from a shell and print the answer JSON")
    ask.add_argument("question", nargs="?", help="the question (omit with --json)")
    ask.add_argument("-o", "--option", action="append", default=[], help="an option label (repeat)")
    ask.add_argument("--multi", action="store_true", help="allow several options")
    ask.add_argument("--header", help="a short title")
    ask.add_argument("--detail", help="supporting text, or @FILE to read it from a file")
    ask.add_argument("--plan-review", metavar="APPROVE_LABEL", help="a plan review; the option that approves")
    ask.add_argument(
        "--reject", metavar="REJECT_LABEL", help="with --plan-review: the option that asks for the person's words"
    )
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
    history.add_argument("--json", action="store_true", help="one JSON object per line (with seq, hash and prev)")
    proof = history.add_mutually_exclusive_group()
    proof.add_argument(
        "--verify", action="store_true", help="walk the audit log's hash chain: exit 0 if it holds, 1 naming the row"
    )
    proof.add_argument("--export", metavar="FILE", help="write the whole audit log as JSON lines that verify alone")
    history.add_argument("--from", dest="source", metavar="FILE", help="with --verify: check an export, not the store")
    _runs(history, "bot.commands:run")

    rules = commands.add_parser(
        "rules",
        help="list the rules that decide coding agents' permission prompts, or remove a learned one",
        description='List the [[rules]] of the config and the rules learned from "Always allow" (id, tool, match, '
        "decision, where each came from, when it was learned).",
    )
    rules.add_argument("--config", help=CONFIG_HELP)
    rules.add_argument("--json", action="store_true", help="one JSON list of every rule")
    _runs(rules, "bot.commands:run")
    rule_actions = rules.add_subparsers(dest="action", metavar="{remove}")
    remove = rule_actions.add_parser("remove", help="remove a learned rule; every running serve stops using it at once")
    remove.add_argument("id", help="the rule's id, as `handraise rules` lists it (learned-…)")
    # SUPPRESS: without it, the action's unset --config would hide one given before the action.
    remove.add_argument("--config", default=argparse.SUPPRESS, help=CONFIG_HELP)
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

    hooks = commands.add_parser(
        "hook",
        help="answer a coding agent's permission prompts through handraise (reads the agent's hook event on stdin)",
        description="Run by Claude Code, Codex, Gemini CLI or Cursor as a hook: read the event on stdin, ask through "
        "the running `handraise serve`, print the agent's answer. Anything going wrong leaves the decision to the "
        "agent's own prompt. Always exits 0.",
    )
    agents = hooks.add_subparsers(dest="hook", required=True, metavar="{claude,codex,gemini,cursor,install,uninstall}")
    for agent, text in HOOK_AGENTS.items():
        sub = agents.add_parser(agent, help=f"{text} (reads its hook event on stdin)")
        _hook_flags(sub)
        sub.set_defaults(agent=agent)
        _runs(sub, f"bot.hooks.{agent}:run")
        if agent in NOTE_AGENTS:
            _notify_flag(sub, payload=agent == "codex")
    for action, text in (("install", "add handraise's hook to an agent's settings"), ("uninstall", "remove it")):
        sub = agents.add_parser(action, help=text)
        sub.add_argument("--for", dest="agent", required=True, choices=list(HOOK_AGENTS), help="the coding agent")
        sub.add_argument("--project", action="store_true", help="the project's settings (default: the user's)")
        if action == "install":
            sub.add_argument("--server", default=None, help="write --server URL into the hook command")
            sub.add_argument("--label", action="append", default=[], help="write --label key=value into it (repeat)")
        _runs(sub, f"bot.hooks.install:run_{action}")

    hook = commands.add_parser(
        "claude-hook",
        help="the same as `handraise hook claude` (kept for existing Claude Code settings)",
        description="Run by Claude Code as a hook. Without an action: read the hook event on stdin, ask through the "
        "running `handraise serve`, print the decision. Anything going wrong leaves the decision to Claude Code.",
    )
    _hook_flags(hook)
    hook.set_defaults(agent="claude")
    _runs(hook, "bot.hooks.claude:run")
    _notify_flag(hook, payload=False)
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
        _runs(sub, "bot.hooks.claude_settings:run_settings")
    return parser


BUILT_IN = ("serve", "ask", "routes", "history", "rules", "mcp", "hook", "claude-hook")
"""The commands above; any other first word may be a channel's own (`handraise <channel> <command>`)."""


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words and not words[0].startswith("-") and words[0] not in BUILT_IN:
        run_channel_command = importlib.import_module("bot.commands").run_channel_command
        return int(run_channel_command(words))
    args = build_parser().parse_args(words)
    module_name, _, function_name = str(args.run).partition(":")
    command = getattr(importlib.import_module(module_name), function_name)
    from bot.errors import BadInput  # not bot.clients.ask's imports: the hooks do not need them

    try:
        return int(command(args))
    except BadInput as error:
        print(f"handraise: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
