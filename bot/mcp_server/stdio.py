"""`handraise mcp`: the MCP server on stdin/stdout, for clients that start their servers as commands.

It holds no questions itself: each one goes to the running `handraise serve` over the HTTP API (`--server`,
`$HANDRAISE_SERVER`; token from `$HANDRAISE_API_TOKEN`), so routing, channels and the store are the server's.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from bot.clients.ask import BadInput, parse_labels
from bot.clients.http import ApiClient
from bot.mcp_server.relay import HttpRelay
from bot.mcp_server.tools import MAX_WAIT_SECONDS, QuestionTools, Timing


def run_mcp(args: argparse.Namespace) -> int:
    labels = parse_labels(args.label)
    if not 0 <= args.wait <= MAX_WAIT_SECONDS or args.progress_every <= 0:
        raise BadInput(f"--wait must be 0 to {MAX_WAIT_SECONDS:g} seconds and --progress-every above 0")
    # A long-poll of `wait` seconds plus the usual 10 s for the server to answer at all.
    relay = HttpRelay(ApiClient(args.server, os.environ.get("HANDRAISE_API_TOKEN")))
    tools = QuestionTools(relay, labels=labels, timing=Timing(args.wait, args.progress_every))
    anyio.run(_serve, tools.server())
    return 0


async def _serve(server: Server[Any]) -> None:
    async with anyio.create_task_group() as group:
        if sys.platform != "win32":  # no signal receiver there; the SDK kills the process outright anyway
            group.start_soon(_cancel_on_terminate, group.cancel_scope)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        group.cancel_scope.cancel()


async def _cancel_on_terminate(scope: anyio.CancelScope) -> None:
    """SIGTERM (an MCP client that gave up waiting for the process to exit) cancels the waiting calls, so their
    questions are cancelled as for a closed session, instead of the process dying with them still open."""
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return
