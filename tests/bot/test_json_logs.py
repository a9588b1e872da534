"""`log_format = "json"`: every line `serve` writes on stderr (and its start banner on stdout) is one JSON object, with
time, level, message, logger, and what the line is about: question, channel, agent."""

from __future__ import annotations

import contextvars
import io
import json
import logging
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from bot.logs.context import log_about
from bot.logs.json_lines import JsonLines
from bot.program import running
from bot.store.records import Delivery, QuestionRecord

from .fakes import RecordingChannel
from .program_rig import config_for, free_port

ENV = os.environ | {"PYTHONUNBUFFERED": "1", "HANDRAISE_CONFIG": ""}
ASK = {"questions": [{"id": "go", "question": "Ship it?"}], "agent": {"id": "deployer-7"}}


def parsed(lines: str) -> list[dict[str, Any]]:
    """Every line as a JSON object with the four fields every line has; fails on the first line that is not."""
    objects = []
    for line in lines.splitlines():
        obj = json.loads(line)
        assert isinstance(obj, dict), line
        assert {"time", "level", "message", "logger"} <= obj.keys(), line
        assert datetime.fromisoformat(obj["time"]).utcoffset() is not None, line
        objects.append(obj)
    return objects


def call(url: str, method: str = "GET", body: bytes | None = None) -> int:
    request = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_every_line_serve_writes_is_json_from_start_to_shutdown(tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "config.toml").write_text(f'[server]\nlisten = "127.0.0.1:{port}"\nlog_format = "json"\n')
    server = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "serve"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=ENV,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        banner = [json.loads(server.stdout.readline())]
        while "web inbox:" not in banner[-1]["message"]:
            banner.append(json.loads(server.stdout.readline()))
        base = f"http://127.0.0.1:{port}"
        assert call(f"{base}/v1/questions", "POST", json.dumps(ASK).encode()) == 202
        assert call(f"{base}/v1/questions", "POST", b"{not json") == 400
        assert call(f"{base}/metrics") == 200
        # /mcp loads the MCP SDK on first use: from then on its loggers write lines too, up to shutdown.
        assert call(f"{base}/mcp", "POST", b"{}") >= 400
        server.send_signal(signal.SIGTERM)
        rest, stderr = server.communicate(timeout=20)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate(timeout=15)
    assert server.returncode == 0
    logged = parsed(stderr)
    # The inbox link stays readable: its line's message holds the URL as it is.
    assert banner[-1]["message"].startswith(f"web inbox:    {base}/?token=")
    assert parsed(rest) == []  # nothing else on stdout
    messages = [line["message"] for line in logged]
    assert any(message.startswith("replica ") for message in messages)
    assert any(message.startswith("serving on ") for message in messages)
    assert messages[-2:] == [
        "received SIGTERM; stopping (pending questions stay in the store)",
        "StreamableHTTP session manager shutting down",
    ]
    assert {line["logger"] for line in logged} >= {"bot.program", "mcp.server.streamable_http_manager"}


def test_the_flag_makes_a_bad_config_one_json_line(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[server]\nlog_format = "xml"\n')
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "serve", "--log-format", "json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, env=ENV,
    )  # fmt: skip
    assert result.returncode == 2 and result.stdout == ""
    (line,) = parsed(result.stderr)
    assert line["level"] == "ERROR"
    assert line["message"].startswith("handraise: config.toml:2: server.log_format: ")


def test_tracebacks_warnings_and_thread_failures_are_json_lines_too(tmp_path: Path) -> None:
    script = (
        "import threading, warnings\n"
        "from bot.logs.json_lines import log_json\n"
        "log_json()\n"
        "warnings.warn('an old call', DeprecationWarning, stacklevel=1)\n"
        "worker = threading.Thread(target=lambda: 1 / 0, name='worker')\n"
        "worker.start(); worker.join()\n"
        "raise RuntimeError('the last straw\\nwith a second line')\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "always", "-c", script], capture_output=True, text=True, timeout=60, env=ENV
    )
    assert result.returncode == 1
    warned, thread, uncaught = parsed(result.stderr)
    assert (warned["logger"], warned["level"]) == ("py.warnings", "WARNING") and "an old call" in warned["message"]
    assert thread["message"] == "uncaught in worker: division by zero"
    assert "ZeroDivisionError" in thread["exception"]
    assert uncaught["level"] == "CRITICAL"
    assert uncaught["message"] == "uncaught RuntimeError: the last straw\nwith a second line"
    assert uncaught["exception"].startswith("Traceback (most recent call last):")


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """The root logger's lines, as JSON lines, while the test runs."""
    captured = io.StringIO()
    handler = logging.StreamHandler(captured)
    handler.setFormatter(JsonLines())
    logging.getLogger().addHandler(handler)
    try:
        yield captured
    finally:
        logging.getLogger().removeHandler(handler)


class BrokenCloseOut(RecordingChannel):
    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        raise ConnectionError("the chat service hung up")


@pytest.mark.anyio
async def test_a_line_about_a_question_names_it_its_channel_and_its_agent(
    tmp_path: Path, json_lines: io.StringIO
) -> None:
    async with running(config_for(tmp_path), channels=[BrokenCloseOut("web")]) as started:
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{started.base_url}/v1/questions", json=ASK) as response:
                question_id = (await response.json())["id"]
            async with session.delete(f"{started.base_url}/v1/questions/{question_id}") as response:
                assert response.status == 200
        with anyio.fail_after(10):
            while "could not show the outcome" not in json_lines.getvalue():
                await anyio.sleep(0.01)
    lines = [line for line in parsed(json_lines.getvalue()) if "could not show the outcome" in line["message"]]
    assert len(lines) == 1
    (line,) = lines
    assert (line["question_id"], line["channel"], line["agent"]) == (question_id, "web", "deployer-7")
    assert "ConnectionError: the chat service hung up" in line["exception"]


def test_extra_fields_name_what_a_line_is_about_and_override_the_task_s() -> None:
    def logged() -> str:
        log_about(question_id="q_task", channel="slack")
        record = logging.LogRecord("bot.x", logging.WARNING, __file__, 1, "about %s", ("it",), None)
        record.question_id = "q_given"
        return JsonLines().format(record)

    line = json.loads(contextvars.copy_context().run(logged))
    assert line | {"time": "t"} == {
        "time": "t", "level": "WARNING", "message": "about it", "logger": "bot.x", "question_id": "q_given",
        "channel": "slack",
    }  # fmt: skip
