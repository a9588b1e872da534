"""The OpenAPI document tells the truth: Schemathesis, with every check it has, against a real `handraise serve` on
loopback (no token) and one listening beyond loopback (a bearer token asked of every client): no failure.

The hooks (`schemathesis_hooks.py`) keep generated requests within the rules the document states in words. One
check is left out: `use_after_free` expects a deleted resource to be gone, but DELETE cancels a question, which stays
readable as `cancelled` (the document says so).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.program_rig import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = 15
"""Generated cases per operation in the fuzzing and stateful phases (the coverage phase's boundary cases come on
top). Measured 2026-12-06 on the shared 2-core VM: at 25, 34 s on loopback and 23 s beyond it (load 3); at 10, 66 and
81 s under load 6-10 and 17 s on loopback at load 2. 15 keeps the pair near a minute on a quiet machine."""
TOKEN = "contract-test-token"


def start_serve(tmp_path: Path, listen: str, *, token: bool) -> Iterator[str]:
    port = free_port()
    config = tmp_path / "config.toml"
    server_table = f'[server]\nlisten = "{listen}:{port}"\n'
    if token:
        server_table += 'api_token_env = "CONTRACT_TOKEN"\n'
    # Questions expire within a second, so a generated long poll on one ends soon.
    config.write_text(server_table + '[[web.subscriptions]]\nexpire_after = "1s"\n')
    env = os.environ | {"PYTHONUNBUFFERED": "1", "HANDRAISE_CONFIG": str(config), "CONTRACT_TOKEN": TOKEN}
    server = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "serve"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        while "web inbox:" not in (line := server.stdout.readline()):
            assert line, "serve exited early"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.communicate(timeout=30)


def schemathesis(base_url: str, where: Path, *headers: str) -> subprocess.CompletedProcess[str]:
    """Schemathesis's command line, run in `where` (it keeps a cache in its working directory)."""
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", f"{base_url}/openapi.json",
        "--checks", "all", "--exclude-checks", "use_after_free",
        "--max-examples", str(EXAMPLES), "--request-timeout", "10", "--no-color",
    ]  # fmt: skip
    for header in headers:
        command += ["--header", header]
    env = os.environ | {"SCHEMATHESIS_HOOKS": "tests.contract.schemathesis_hooks", "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, cwd=where, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def loopback(tmp_path: Path) -> Iterator[str]:
    yield from start_serve(tmp_path, "127.0.0.1", token=False)


@pytest.fixture
def beyond_loopback(tmp_path: Path) -> Iterator[str]:
    yield from start_serve(tmp_path, "0.0.0.0", token=True)


def test_the_document_of_a_loopback_server_without_a_token_holds(loopback: str, tmp_path: Path) -> None:
    started = time.monotonic()
    result = schemathesis(loopback, tmp_path)
    assert result.returncode == 0, result.stdout[-20_000:] + result.stderr[-5_000:]
    print(f"schemathesis on loopback: {time.monotonic() - started:.0f} s")


def test_the_document_of_a_server_beyond_loopback_with_a_token_holds(beyond_loopback: str, tmp_path: Path) -> None:
    started = time.monotonic()
    result = schemathesis(beyond_loopback, tmp_path, f"Authorization: Bearer {TOKEN}")
    assert result.returncode == 0, result.stdout[-20_000:] + result.stderr[-5_000:]
    print(f"schemathesis beyond loopback: {time.monotonic() - started:.0f} s")


def test_the_document_says_which_server_asks_for_a_token(loopback: str, beyond_loopback: str) -> None:
    import json

    with urllib.request.urlopen(f"{loopback}/openapi.json", timeout=10) as reply:
        open_document = json.loads(reply.read())
    with urllib.request.urlopen(f"{beyond_loopback}/openapi.json", timeout=10) as reply:
        guarded = json.loads(reply.read())
    assert "security" not in open_document
    assert guarded["security"] == [{"bearer": []}]
    assert guarded["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    ask = guarded["paths"]["/v1/questions"]["post"]
    assert {"400", "401", "403", "413", "415", "421", "422", "503"} <= ask["responses"].keys()
    assert "401" not in open_document["paths"]["/v1/questions"]["post"]["responses"]
    assert guarded["components"]["schemas"]["AskBody"]["properties"]["questions"]["minItems"] == 1
    wait = guarded["paths"]["/v1/questions/{id}"]["get"]["parameters"][0]["schema"]
    assert (wait["minimum"], wait["maximum"]) == (0, 300)
    assert {"/v1/permissions", "/v1/notes", "/metrics", "/healthz"} <= guarded["paths"].keys()
