"""`handraise serve` as a process: starts on the embedded default, stops cleanly on SIGTERM, keeps pending questions."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from bot.store.sqlite.store import Store

from .program_rig import free_port


def start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "serve", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1", "HANDRAISE_CONFIG": ""},
    )
    assert server.stdout is not None
    first = server.stdout.readline()
    lines = [first]
    while "web inbox:" not in lines[-1]:
        line = server.stdout.readline()
        assert line, "serve exited early: " + (server.stderr.read() if server.stderr else "")
        lines.append(line)
    return server, "".join(lines)


def test_serve_finds_config_toml_runs_the_web_inbox_and_stops_on_sigterm_keeping_questions(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n')
    server, banner = start(tmp_path)
    try:
        assert "config: " in banner and "config.toml" in banner
        assert re.search(rf"web inbox:\s+http://127\.0\.0\.1:{port}/\?token=\S+", banner)
        body = json.dumps({"questions": [{"id": "q", "question": "Still pending after a stop?"}]}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/questions", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            question_id = json.loads(reply.read())["id"]
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=15) == 0
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate(timeout=15)  # also closes the pipes
    with Store.open(tmp_path / "handraise.db") as store:
        record = store.get_question(question_id)
    assert record is not None and record.status == "pending"


def test_a_bad_config_stops_serve_with_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[slack]\nbot_token = "xoxb-123"\n')
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "serve"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "handraise: config.toml:2: slack.bot_token: secrets never go in the config file; "
        'set bot_token_env = "NAME" and export NAME'
    ]


def test_a_taken_port_stops_serve_with_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        (tmp_path / "config.toml").write_text(f'[server]\nlisten = "127.0.0.1:{port}"\n')
        result = subprocess.run(
            [sys.executable, "-m", "bot.cli", "serve"], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"handraise: cannot listen on 127.0.0.1:{port}: ")
    assert line.endswith("stop what is using it, or set another [server] listen")


def test_serve_runs_on_uvloop_where_it_is_installed(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(f'[server]\nlisten = "127.0.0.1:{free_port()}"\n')
    server, _ = start(tmp_path)
    server.send_signal(signal.SIGTERM)
    _, logged = server.communicate(timeout=15)
    assert server.returncode == 0
    assert "serving on uvloop's event loop" in logged
