"""serve's /mcp loads the MCP SDK on its first request: clients whose first requests arrive together share the one
endpoint that loads, and each is served."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from .rig import http_client, serve

pytestmark = pytest.mark.anyio


async def test_clients_arriving_together_on_a_fresh_serve_are_all_served(tmp_path: Path) -> None:
    listed: list[set[str]] = []

    async with serve(tmp_path) as program:

        async def list_tools(name: str) -> None:
            async with http_client(program, name=name) as client:
                listed.append({tool.name for tool in (await client.list_tools()).tools})

        async with anyio.create_task_group() as group:
            for name in ("cursor", "zed", "cline"):
                group.start_soon(list_tools, name)
    assert listed == [{"ask_user_question", "get_answer", "cancel_question"}] * 3
