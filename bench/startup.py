"""Start-up of the per-question commands beside a bare interpreter, measured in the same run.

Run: `uv run python bench/startup.py [ROUNDS]`. Each case is a fresh process, run ROUNDS times interleaved with the
others (so machine load falls on all alike); prints the median and the median minus bare `python -c pass`.
Targets: every `handraise hook <agent>` within 100 ms of the bare interpreter (it runs on every tool call the agent
asks about), `handraise ask` within 150 ms. No server runs: the commands fail fast on a refused connection, which is
the start-up cost plus one connect.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import time

MAKE = {"command": "make test"}
HOOK_EVENTS = {
    "claude": {"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": MAKE},
    "codex": {"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": MAKE},
    "gemini": {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command", "tool_input": MAKE},
    "cursor": {"hook_event_name": "beforeShellExecution", "command": "make test", "cwd": "/tmp/project"},
}
"""The shell command's event of each agent (bare: the fields the hook reads)."""


def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    handraise = shutil.which("handraise", path=os.path.dirname(sys.executable)) or "handraise"
    server = closed_port()
    cases: dict[str, tuple[list[str], str]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], ""),
        "handraise ask --help": ([handraise, "ask", "--help"], ""),
        "handraise ask (server refused)": ([handraise, "ask", "Q?", "--server", server], ""),
        **{
            f"handraise hook {agent} (server refused)": (
                [handraise, "hook", agent, "--server", server],
                json.dumps({"session_id": "bench", "cwd": "/tmp/project", **event}),
            )
            for agent, event in HOOK_EVENTS.items()
        },
        "python -c 'import bot.program' (the server side)": ([sys.executable, "-c", "import bot.program"], ""),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    # Bytecode cached, as in an installed handraise: without it every run compiles the project's modules again.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    for argv, stdin in cases.values():  # one round unmeasured, to write the caches
        subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False, env=env)
    for _ in range(rounds):
        for name, (argv, stdin) in cases.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False, env=env)
            times[name].append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    bare, bare_cpu = statistics.median(times["python -c pass"]), statistics.median(cpu["python -c pass"])
    print(f"{rounds} rounds, Python {sys.version.split()[0]}; wall and CPU (user+sys) medians, and over bare")
    for name in cases:
        wall, used = statistics.median(times[name]), statistics.median(cpu[name])
        print(
            f"{name:50s} wall {wall * 1000:7.1f} ms (+{(wall - bare) * 1000:6.1f})   "
            f"CPU {used * 1000:7.1f} ms (+{(used - bare_cpu) * 1000:6.1f})"
        )


if __name__ == "__main__":
    main()
