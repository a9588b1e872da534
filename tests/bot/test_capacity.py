"""Floods of waiting agents: long-polls capped with 503 + Retry-After, the inbox and /healthz still answer, the
open-files limit raised at start, and "Too many open files" logged once every few seconds."""

from __future__ import annotations

import asyncio
import errno
import logging
import re
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
from aiohttp.http_exceptions import BadStatusLine, LineTooLong
from anyio.streams.buffered import BufferedByteReceiveStream

from bot.api import capacity
from bot.api.capacity import (
    LISTEN_BACKLOG,
    FloodLogThrottle,
    raise_open_files_limit,
    throttle_flood_logs,
    waiting_limit,
)
from core import AskUserQuestionAnswerItem
from tests.system_packages import require_debian_package

from .program_rig import config_for, free_port, program

pytestmark = pytest.mark.anyio

ASK = {"questions": [{"id": "go", "question": "Deploy v2?"}]}


async def ask(session: aiohttp.ClientSession, base_url: str) -> str:
    async with session.post(f"{base_url}/v1/questions", json=ASK) as reply:
        assert reply.status == 202
        return str((await reply.json())["id"])


async def long_poll(session: aiohttp.ClientSession, url: str) -> tuple[int, str | None, dict[str, Any]]:
    async with session.get(url) as reply:
        return reply.status, reply.headers.get("Retry-After"), await reply.json()


@pytest.mark.parametrize(
    ("max_waiting", "open_files", "limit"),
    [(10_000, None, 10_000), (10_000, 1_024, 768), (10_000, 1_048_576, 10_000), (5, 1_024, 5), (10_000, 128, 64)],
)
def test_the_waiting_limit_leaves_open_files_for_everything_else(
    max_waiting: int, open_files: int | None, limit: int
) -> None:
    assert waiting_limit(max_waiting, open_files) == limit


async def test_long_polls_beyond_max_waiting_get_503_with_retry_after_and_the_rest_still_answers(
    tmp_path: Path,
) -> None:
    config = config_for(tmp_path)
    config = config.model_copy(update={"server": config.server.model_copy(update={"max_waiting": 2})})
    async with program(config) as (running, _), aiohttp.ClientSession() as session:
        question_id = await ask(session, running.base_url)
        url = f"{running.base_url}/v1/questions/{question_id}?wait=30"
        results: list[tuple[int, str | None, dict[str, Any]]] = []

        async def wait() -> None:
            results.append(await long_poll(session, url))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                group.start_soon(wait)
                while running.waiting.waiting < 2:
                    await anyio.sleep(0.01)
                status, retry_after, body = await long_poll(session, url)
                assert (status, body["error"]["code"]) == (503, "TOO_MANY_WAITING")
                assert retry_after is not None and 5 <= int(retry_after) <= 10
                async with session.get(f"{running.base_url}/healthz") as health:
                    assert health.status == 200
                assert (await long_poll(session, f"{running.base_url}/v1/questions/{question_id}"))[0] == 200
                item = AskUserQuestionAnswerItem(id="go", selected=[], custom="yes")
                await running.installation.ledger.submit(question_id, {"go": item}, by="alice", via="web")
    assert [(status, body["status"]) for status, _, body in results] == [(200, "answered"), (200, "answered")]
    assert running.waiting.waiting == 0


async def test_handraise_ask_waits_out_a_503_and_gets_its_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    monkeypatch.setattr(capacity, "RETRY_AFTER_SECONDS", 1)
    config = config_for(tmp_path)
    config = config.model_copy(update={"server": config.server.model_copy(update={"max_waiting": 1})})
    async with program(config) as (running, _), aiohttp.ClientSession() as session:
        blocker = await ask(session, running.base_url)
        store = running.installation.store
        codes: list[int] = []

        async def occupy() -> None:
            await long_poll(session, f"{running.base_url}/v1/questions/{blocker}?wait=30")

        async def ask_in_the_shell() -> None:
            codes.append(await anyio.to_thread.run_sync(main, ["ask", "Second?", "--server", running.base_url]))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                group.start_soon(occupy)
                while running.waiting.waiting < 1:
                    await anyio.sleep(0.01)
                group.start_soon(ask_in_the_shell)
                while len(await store.list_questions(status="pending")) < 2:
                    await anyio.sleep(0.02)
                second = next(
                    record.id for record in await store.list_questions(status="pending") if record.id != blocker
                )
                await anyio.sleep(1.5)  # the shell's first long-poll is turned away meanwhile
                item = AskUserQuestionAnswerItem(id="go", selected=[], custom="done")
                await running.installation.ledger.submit(blocker, {"go": item}, by="alice", via="web")
                item = AskUserQuestionAnswerItem(id="q1", selected=[], custom="yes")
                await running.installation.ledger.submit(second, {"q1": item}, by="alice", via="web")
    assert codes == [0]
    assert capsys.readouterr().out == '{"answers":[{"id":"q1","selected":[],"custom":"yes"}]}\n'


@pytest.fixture
def lowered_open_files() -> Iterator[int]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard <= 256:
        pytest.skip("the hard open-files limit is already 256 or lower")
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    try:
        yield hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_soft_open_files_limit_is_raised_to_the_hard_one(lowered_open_files: int) -> None:
    assert raise_open_files_limit() == lowered_open_files
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == lowered_open_files


def out_of_files_record(logger: logging.Logger) -> None:
    error = OSError(errno.EMFILE, "Too many open files")
    logger.error("socket.accept() out of system resource", exc_info=(OSError, error, None))


def test_too_many_open_files_is_logged_once_every_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    throttle = FloodLogThrottle(5.0, clock=lambda: now[0])
    logger = logging.getLogger("asyncio")
    logger.addFilter(throttle)
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            for _ in range(100):
                out_of_files_record(logger)
            logger.error("something else")
            now[0] = 5.0
            out_of_files_record(logger)
    finally:
        logger.removeFilter(throttle)
    assert [record.getMessage() for record in caplog.records] == [
        "socket.accept() out of system resource",
        "something else",
        "socket.accept() out of system resource (99 more like it not logged in the last 5 s)",
    ]


def test_asyncios_own_accept_error_report_goes_through_the_throttle(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("asyncio")
    throttle_flood_logs()
    throttle_flood_logs()  # twice: still one filter
    installed = [existing for existing in logger.filters if isinstance(existing, FloodLogThrottle)]
    loop = asyncio.new_event_loop()  # with asyncio's default exception handler, which logs
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            for _ in range(50):
                error = OSError(errno.EMFILE, "Too many open files")
                loop.call_exception_handler({"message": "socket.accept() out of system resource", "exception": error})
    finally:
        loop.close()
        for existing in installed:
            logger.removeFilter(existing)
    assert len(installed) == 1
    assert [record.getMessage() for record in caplog.records] == ["socket.accept() out of system resource"]


def test_a_record_naming_its_flood_kind_is_throttled_like_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    throttle = FloodLogThrottle(5.0, clock=lambda: 0.0)
    logger = logging.getLogger("bot.api.accepting")
    logger.addFilter(throttle)
    try:
        with caplog.at_level(logging.ERROR, logger="bot.api.accepting"):
            for _ in range(20):
                logger.error("accept(): Too many open files", extra={"flood": "accept paused"})
            logger.error("something else")
    finally:
        logger.removeFilter(throttle)
    assert [record.getMessage() for record in caplog.records] == ["accept(): Too many open files", "something else"]


async def test_serve_with_few_open_files_keeps_the_inbox_and_healthz_up_through_a_flood(tmp_path: Path) -> None:
    """The issue's flood, scaled to a 256-file limit: more agents long-poll than the process has files for."""
    port = free_port()
    (tmp_path / "config.toml").write_text(
        f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{tmp_path / "handraise.db"}"\n'
    )
    serve = [sys.executable, "-m", "bot.cli", "serve", "--config", str(tmp_path / "config.toml")]
    # The limit is lowered (soft and hard) in the child just before it becomes `handraise serve`.
    lowered = "import os, resource; resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)); "
    lowered += f"os.execv({serve[0]!r}, {serve!r})"
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with log.open("wb") as errors:
        async with await anyio.open_process([sys.executable, "-c", lowered], stderr=errors) as server:
            assert server.stdout is not None
            banner = BufferedByteReceiveStream(server.stdout)
            with anyio.fail_after(30):
                while b"web inbox:" not in await banner.receive_until(b"\n", 65536):
                    pass
            try:
                statuses = await flood(base, agents=400)
            finally:
                server.terminate()
    assert sorted(set(statuses)) == [200, 503]
    assert statuses.count(200) == waiting_limit(10_000, 256) == 128
    assert len(re.findall("Too many open files", log.read_text())) <= 2


async def flood(base: str, *, agents: int) -> list[int]:
    """`agents` long-polls on one question at once; while they wait, the inbox and /healthz must answer."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        question_id = await ask(session, base)
        url = f"{base}/v1/questions/{question_id}?wait=20"
        statuses: list[int] = []

        async def agent() -> None:
            try:
                statuses.append((await long_poll(session, url))[0])
            except aiohttp.ClientError:
                statuses.append(0)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for _ in range(agents):
                    group.start_soon(agent)
                while statuses.count(503) < agents - 128:
                    await anyio.sleep(0.05)
                async with session.get(f"{base}/healthz") as health:
                    assert (health.status, (await health.json())["pending"]) == (200, 1)
                async with session.get(f"{base}/") as inbox:
                    assert inbox.status == 401  # the inbox's own page, asking for its link
                async with session.delete(f"{base}/v1/questions/{question_id}") as cancelled:
                    assert cancelled.status == 200  # which ends the 128 long-polls
    return statuses


def listen_queue_length(port: int) -> int:
    """The kernel's accept-queue limit of the socket listening on `port`: the Send-Q that `ss -ltn` shows."""
    require_debian_package("iproute2", Path("/usr/bin/ss"), why="ss shows a listening socket's queue limit")
    listing = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    return int(listing.split()[2])


async def test_the_kernel_queues_thousands_of_connections_for_a_burst_of_agents(tmp_path: Path) -> None:
    somaxconn = int(await anyio.Path("/proc/sys/net/core/somaxconn").read_text())
    async with program(config_for(tmp_path)) as (running, _):
        queued = listen_queue_length(int(running.base_url.rsplit(":", 1)[1]))
    assert queued == min(LISTEN_BACKLOG, somaxconn) > 128


async def test_serve_refuses_malformed_requests_with_one_warning_line_not_a_traceback_each(tmp_path: Path) -> None:
    """A URL over 8 KiB: aiohttp answers 400, and `serve` once logged an ERROR traceback for each such request."""
    port = free_port()
    (tmp_path / "config.toml").write_text(
        f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{tmp_path / "handraise.db"}"\n'
    )
    serve = [sys.executable, "-m", "bot.cli", "serve", "--config", str(tmp_path / "config.toml")]
    log = tmp_path / "serve.log"
    with log.open("wb") as errors:
        async with await anyio.open_process(serve, stderr=errors) as server:
            assert server.stdout is not None
            banner = BufferedByteReceiveStream(server.stdout)
            with anyio.fail_after(30):
                while b"web inbox:" not in await banner.receive_until(b"\n", 65536):
                    pass
            try:
                for _ in range(20):
                    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                        await stream.send(b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
                        status_line = await BufferedByteReceiveStream(stream).receive_until(b"\r\n", 1024)
                    assert b" 400 " in status_line
            finally:
                server.terminate()
    logged = log.read_text()
    assert "Traceback" not in logged and "ERROR" not in logged
    assert 1 <= len(re.findall("refused a malformed HTTP request", logged)) <= 2  # one per 5 s, at any load


def test_a_malformed_request_becomes_one_throttled_warning_line(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    throttle = FloodLogThrottle(5.0, clock=lambda: now[0])
    logger = logging.getLogger("aiohttp.server")
    installed = list(logger.filters)  # a running program's throttle has its own clock: set it aside
    for existing in installed:
        logger.removeFilter(existing)
    logger.addFilter(throttle)
    try:
        with caplog.at_level(logging.WARNING, logger="aiohttp.server"):
            for _ in range(30):
                try:
                    raise LineTooLong(b"/" + b"a" * 100 + b"\nsecond line", "8190")
                except LineTooLong:
                    logger.exception("Error handling request from %s", "127.0.0.1")
            now[0] = 6.0
            try:
                raise BadStatusLine("GARBAGE")
            except BadStatusLine:
                logger.exception("Error handling request from %s", "127.0.0.1")
    finally:
        logger.removeFilter(throttle)
        for existing in installed:
            logger.addFilter(existing)
    assert [(record.levelname, record.exc_info) for record in caplog.records] == [("WARNING", None)] * 2
    first, second = (record.getMessage() for record in caplog.records)
    assert first.startswith("refused a malformed HTTP request (400): Got more than 8190 bytes")
    assert "\n" not in first and len(first) < 300
    assert second.startswith("refused a malformed HTTP request (400): ")
    assert second.endswith("(29 more like it not logged in the last 5 s)")
