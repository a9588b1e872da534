"""MCP clients from the SDK itself against handraise: streamable HTTP to serve's /mcp, stdio to `handraise mcp`."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client, Implementation, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from bot.mcp_server.tools import Timing
from bot.program import Running, running
from tests.bot.program_rig import config_for

FAST = Timing(default_wait=5.0, progress_every=0.2)


@asynccontextmanager
async def serve(tmp_path: Path, extra: str = "", *, api_token: str | None = None) -> AsyncIterator[Running]:
    config = config_for(tmp_path, extra)
    with pytest.MonkeyPatch.context() as env:
        if api_token is not None:
            env.setenv("HANDRAISE_TEST_API_TOKEN", api_token)
            server = config.server.model_copy(update={"api_token_env": "HANDRAISE_TEST_API_TOKEN"})
            config = config.model_copy(update={"server": server})
        async with running(config, mcp_timing=FAST) as program:
            yield program


@asynccontextmanager
async def http_client(program: Running, *, name: str = "cursor", token: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(f"{program.base_url}/mcp", http_client=http)
        async with Client(transport, client_info=Implementation(name=name, version="1.0")) as client:
            yield client


@asynccontextmanager
async def stdio_client(
    program: Running, *args: str, name: str = "claude-desktop", token: str | None = None
) -> AsyncIterator[Client]:
    command = [
        "-m", "bot.cli", "mcp", "--server", program.base_url, "--wait", "5", "--progress-every", "0.2", *args
    ]  # fmt: skip
    env = {"HANDRAISE_API_TOKEN": token} if token else None
    parameters = StdioServerParameters(command=sys.executable, args=command, cwd=str(Path.cwd()), env=env)
    async with Client(parameters, client_info=Implementation(name=name, version="1.0")) as client:
        yield client
