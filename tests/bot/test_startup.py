"""The per-question commands start without the server's libraries (what keeps the hooks within 100 ms of bare Python).

Each case runs the real CLI in a fresh interpreter and reports which modules it imported; timing lives in
bench/startup.py, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .program_rig import free_port

HEAVY = ("aiohttp", "slack_bolt", "slack_sdk", "pydantic", "pydantic_core", "mcp", "core", "anyio")

PROBE = """
import json, sys
from bot.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.__stdout__)
"""


def modules_after(*argv: str, stdin: str = "") -> set[str]:
    """Every module the command imported, by its full name."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], input=stdin, capture_output=True, text=True, timeout=60
    )
    last = result.stdout.strip().splitlines()[-1]
    return set(json.loads(last))


def imported_by(*argv: str, stdin: str = "") -> set[str]:
    """The top-level packages the command imported."""
    return {name.partition(".")[0] for name in modules_after(*argv, stdin=stdin)}


@pytest.mark.parametrize(
    "argv",
    [
        ("ask", "--help"),
        ("ask", "Deploy?", "-o", "Yes", "--timeout", "1s", "--server", "http://127.0.0.1:{port}"),
    ],
    ids=["ask --help", "ask against an unreachable server"],
)
def test_ask_imports_none_of_the_servers_libraries(argv: tuple[str, ...]) -> None:
    port = str(free_port())
    assert imported_by(*(part.replace("{port}", port) for part in argv)) & set(HEAVY) == set()


HOOK_EVENTS = {
    "claude": {"hook_event_name": "PermissionRequest", "session_id": "s", "cwd": "/tmp/p", "tool_name": "Bash"},
    "codex": {"hook_event_name": "PermissionRequest", "session_id": "s", "cwd": "/tmp/p", "tool_name": "Bash"},
    "gemini": {"hook_event_name": "BeforeTool", "session_id": "s", "cwd": "/tmp/p", "tool_name": "run_shell_command"},
    "cursor": {"hook_event_name": "beforeShellExecution", "conversation_id": "c", "cwd": "/tmp/p", "command": "make"},
}


@pytest.mark.parametrize(
    "argv", [("hook", "claude"), ("hook", "codex"), ("hook", "gemini"), ("hook", "cursor"), ("claude-hook",)]
)
def test_every_hook_imports_none_of_the_servers_libraries(argv: tuple[str, ...]) -> None:
    event = {"tool_input": {"command": "make"}, **HOOK_EVENTS[argv[-1] if argv[0] == "hook" else "claude"]}
    modules = modules_after(*argv, "--server", f"http://127.0.0.1:{free_port()}", stdin=json.dumps(event))
    assert {"bot.hooks.runner", "http.client"} <= modules  # it got as far as asking
    assert {name.partition(".")[0] for name in modules} & set(HEAVY) == set()
    # Nor what only `handraise ask` needs: its flags, its body checks and the server's question package.
    assert {"bot.clients.ask", "bot.questions"} & modules == set()


def test_serve_help_also_stays_light_until_serve_runs() -> None:
    assert imported_by("serve", "--help") & set(HEAVY) == set()
