"""A web-only `handraise serve` is ready without the libraries its config does not use (serve ready within twice a bare
aiohttp app). The figure lives in bench/serve_ready.py; this keeps a later import at some module's top from undoing
it, and checks /mcp still loads on its first request.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .program_rig import free_port

UNUSED_BY_A_WEB_ONLY_SERVE = (
    "mcp",
    "mcp_types",
    "starlette",
    "uvicorn",
    "sse_starlette",
    "httpx",
    "httpx2",
    "telegram",
    "psycopg",
    "psycopg_pool",
    "slack_bolt",
    "slack_sdk",
    "aiosmtplib",
    "aioimaplib",
    "mailparser_reply",
    "markdown_it",
    "claude_agent_sdk",
    "discord",
    "py_vapid",
    "http_ece",
)
"""Top-level modules: the MCP SDK and what it pulls in, the channels a web-only config does not configure, the
PostgreSQL driver, the Claude Agent SDK, Discord's library (for the channel that is coming), and Web Push's
cryptography (only with `[web.push]`)."""

PROBE = """
import json, os, signal, sys, threading, time, urllib.request
from bot.cli import main

base = sys.argv[1]
report = sys.argv[2]

def probe():
    while True:
        try:
            urllib.request.urlopen(base + "/healthz", timeout=1).read()
            break
        except OSError:
            time.sleep(0.02)
    ready = sorted({name.partition(".")[0] for name in sys.modules})
    try:
        urllib.request.urlopen(urllib.request.Request(base + "/mcp", method="POST", data=json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}),
            timeout=30).read()
        mcp_status = 200
    except urllib.error.HTTPError as error:
        mcp_status = error.code
    after = sorted({name.partition(".")[0] for name in sys.modules})
    with open(report, "w") as out:
        json.dump({"ready": ready, "after_mcp": after, "mcp_status": mcp_status}, out)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=probe, daemon=True).start()
main(["serve", "--config", sys.argv[3]])
"""


def test_a_web_only_serve_is_ready_without_the_libraries_it_does_not_use(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{tmp_path / "store.db"}"\n')
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, f"http://127.0.0.1:{port}", str(report), str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(report.read_text())
    assert set(seen["ready"]) & set(UNUSED_BY_A_WEB_ONLY_SERVE) == set()
    # /mcp is there all the same: its first request loads the SDK and answers the MCP handshake.
    assert seen["mcp_status"] == 200
    assert "mcp" in seen["after_mcp"]
