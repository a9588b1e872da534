"""The notify hook as the agents run it, against a real `serve` whose Slack is the fake Slack API: Claude Code's
Notification and Stop events on stdin, Codex's `notify` JSON as the last argument; each note lands in the agent's
thread. Whatever goes wrong (garbage, an event it does not post, no server, a server that never answers) it exits 0
with nothing on stdout and one line on stderr, within its 3 s cap."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
from aiohttp import web

from bot.hooks.notify import DETAIL_CHARS, NotANote, claude_note, codex_note, shorten
from bot.program import Running, running
from tests.bot.program_rig import config_for, free_port
from tests.slack.fake_slack import TOKEN, FakeSlack, fake_slack
from tests.slack.signing import SECRET

from . import notify_payloads as payloads

pytestmark = pytest.mark.anyio

ROUTES = (
    '[[slack.subscriptions]]\nchannel = "#deploys"\nlabels = { project = "billing-api" }\n'
    '[[slack.subscriptions]]\nchannel = "#ops"\nlabels = { team = "ops" }\n'
)


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    seconds: float


async def notify(agent: str, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> Run:
    """The hook in a fresh interpreter, as `handraise hook AGENT --notify ARGS…` runs it."""
    argv = [sys.executable, "-m", "bot.cli", "hook", agent, "--notify", *args]
    started = time.monotonic()
    result = await anyio.run_process(argv, input=stdin.encode(), check=False, env=os.environ | (env or {}))
    return Run(result.returncode, result.stdout.decode(), result.stderr.decode(), time.monotonic() - started)


@asynccontextmanager
async def serve_with_slack(tmp_path: Path) -> AsyncIterator[tuple[Running, FakeSlack]]:
    environ = {"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET}
    async with fake_slack() as fake:
        extra = f'[bot]\nanswerers = ["slack"]\n[slack]\napi_url = "{fake.url}"\n{ROUTES}'
        with pytest.MonkeyPatch.context() as env:
            for name, value in environ.items():
                env.setenv(name, value)
            async with running(config_for(tmp_path, extra, environ=environ)) as program:
                yield program, fake


async def ask_as(program: Running, agent: dict[str, Any]) -> None:
    """A question from `agent` over the API, as its question hook asks one: it opens the agent's thread."""
    question = {"id": "q1", "question": "Allow Bash?", "options": [{"label": "Allow"}, {"label": "Deny"}]}
    async with aiohttp.ClientSession() as session:
        body = {"questions": [question], "agent": agent}
        async with session.post(f"{program.base_url}/v1/questions", json=body) as response:
            assert response.status == 202


CLAUDE_AGENT = {
    "id": f"claude-{payloads.SESSION}",
    "name": "billing-api",
    "labels": {"tool": "claude", "project": "billing-api"},
}


async def test_a_permission_prompt_notification_lands_in_the_agents_thread(tmp_path: Path) -> None:
    async with serve_with_slack(tmp_path) as (program, fake):
        await ask_as(program, CLAUDE_AGENT)
        (question,) = await fake.wait_for("chat.postMessage")
        question_ts = fake.messages["C0DEPLOY"][0]["ts"]
        run = await notify("claude", "--server", program.base_url, stdin=payloads.text(payloads.permission_prompt()))
        note = (await fake.wait_for("chat.postMessage", 2))[1]
        questions = await program.installation.store.count_questions()
    assert (run.code, run.stdout, run.stderr) == (0, "", "")
    assert (question["channel"], note["channel"], note["thread_ts"]) == ("#deploys", "C0DEPLOY", question_ts)
    assert note["text"] == "billing-api: waiting for you\nClaude needs your permission to use Bash"
    assert questions == 1  # the note is no question


async def test_stop_says_finished_with_the_last_message(tmp_path: Path) -> None:
    async with serve_with_slack(tmp_path) as (program, fake):
        run = await notify("claude", "--server", program.base_url, stdin=payloads.text(payloads.stop()))
        (note,) = await fake.wait_for("chat.postMessage")
    assert (run.code, run.stdout, run.stderr) == (0, "", "")
    assert note["text"] == "billing-api: finished\nRenamed `foo` to `bar`; all 112 tests pass."


async def test_the_idle_prompt_repeated_within_ten_seconds_is_posted_once(tmp_path: Path) -> None:
    async with serve_with_slack(tmp_path) as (program, fake):
        for _ in range(2):
            run = await notify("claude", "--server", program.base_url, stdin=payloads.text(payloads.idle_prompt()))
            assert (run.code, run.stderr) == (0, "")
        await notify("claude", "--server", program.base_url, stdin=payloads.text(payloads.stop(None)))
        await fake.wait_for("chat.postMessage", 2)
        texts = [post["text"] for post in fake.calls_to("chat.postMessage")]
    assert texts == ["billing-api: waiting for you\nClaude is waiting for your input", "billing-api: finished"]


async def test_codexs_turn_complete_payload_as_the_last_argument(tmp_path: Path) -> None:
    codex_agent = {"id": f"codex-{payloads.THREAD}", "labels": {"tool": "codex", "project": "billing-api"}}
    async with serve_with_slack(tmp_path) as (program, fake):
        await ask_as(program, codex_agent | {"name": "billing-api"})
        await fake.wait_for("chat.postMessage")
        question_ts = fake.messages["C0DEPLOY"][0]["ts"]
        payload = payloads.text(payloads.codex_turn_complete())
        run = await notify("codex", "--server", program.base_url, payload)
        note = (await fake.wait_for("chat.postMessage", 2))[1]
    assert (run.code, run.stdout, run.stderr) == (0, "", "")
    assert note["thread_ts"] == question_ts
    assert note["text"] == "billing-api: finished\nRename complete and verified `cargo build` succeeds."


async def test_labels_route_the_note_as_they_route_questions(tmp_path: Path) -> None:
    elsewhere = payloads.codex_turn_complete(cwd="/home/dev/projects/infra")
    async with serve_with_slack(tmp_path) as (program, fake):
        run = await notify("codex", "--server", program.base_url, "--label", "team=ops", payloads.text(elsewhere))
        (note,) = await fake.wait_for("chat.postMessage")
    assert (run.code, run.stderr) == (0, "")
    assert (note["channel"], note["text"].splitlines()[0]) == ("#ops", "infra: finished")


GARBAGE_ON_STDIN = {
    "not JSON": "{not json",
    "a JSON array": "[1, 2]",
    "empty": "",
    "not UTF-8": b"\xff\xfe{}".decode("latin-1"),
    "another event": payloads.text(payloads.claude("SessionStart", source="startup")),
    "a notification not about waiting": payloads.text(
        payloads.claude("Notification", message="Logged in", notification_type="auth_success")
    ),
    "no session id": payloads.text({k: v for k, v in payloads.stop().items() if k != "session_id"}),
    "a session id with a newline": payloads.text(payloads.stop() | {"session_id": "a\nb"}),
    "oversize": payloads.text(payloads.stop("x" * (2 * 1024 * 1024))),
}


@pytest.mark.parametrize("stdin", GARBAGE_ON_STDIN.values(), ids=GARBAGE_ON_STDIN.keys())
async def test_garbage_from_claude_posts_nothing_and_says_so_once(tmp_path: Path, stdin: str) -> None:
    async with serve_with_slack(tmp_path) as (program, fake):
        run = await notify("claude", "--server", program.base_url, stdin=stdin)
        await anyio.sleep(0.1)
    assert (run.code, run.stdout) == (0, "")
    assert len(run.stderr.splitlines()) == 1 and "no note posted" in run.stderr
    assert fake.calls_to("chat.postMessage") == []


GARBAGE_FROM_CODEX = {
    "no payload": [],
    "not JSON": ["{not json"],
    "a JSON string": ['"agent-turn-complete"'],
    "another type": [payloads.text(payloads.codex_turn_complete(type="approval-requested"))],
    "no thread id": [payloads.text({k: v for k, v in payloads.codex_turn_complete().items() if k != "thread-id"})],
    "a thread id that is a number": [payloads.text(payloads.codex_turn_complete(**{"thread-id": 7}))],
}


@pytest.mark.parametrize("argv", GARBAGE_FROM_CODEX.values(), ids=GARBAGE_FROM_CODEX.keys())
async def test_garbage_from_codex_posts_nothing_and_says_so_once(tmp_path: Path, argv: list[str]) -> None:
    async with serve_with_slack(tmp_path) as (program, fake):
        run = await notify("codex", "--server", program.base_url, *argv)
        await anyio.sleep(0.1)
    assert (run.code, run.stdout) == (0, "")
    assert len(run.stderr.splitlines()) == 1 and "no note posted" in run.stderr
    assert fake.calls_to("chat.postMessage") == []


async def test_a_bad_label_posts_nothing() -> None:
    run = await notify("claude", "--label", "no-equals-sign", stdin=payloads.text(payloads.stop()))
    assert (run.code, run.stdout) == (0, "")
    assert run.stderr.startswith("handraise hook claude --notify: --label 'no-equals-sign'")


async def test_an_unreachable_server_is_one_line_on_stderr() -> None:
    run = await notify("claude", "--server", f"http://127.0.0.1:{free_port()}", stdin=payloads.text(payloads.stop()))
    assert (run.code, run.stdout) == (0, "")
    assert len(run.stderr.splitlines()) == 1 and "cannot reach handraise" in run.stderr


async def test_the_server_comes_from_handraise_server_when_no_flag_names_it(tmp_path: Path) -> None:
    async with serve_with_slack(tmp_path) as (program, fake):
        run = await notify("claude", stdin=payloads.text(payloads.stop()), env={"HANDRAISE_SERVER": program.base_url})
        await fake.wait_for("chat.postMessage")
    assert (run.code, run.stderr) == (0, "")


async def test_a_server_that_never_answers_is_given_up_on_within_three_seconds() -> None:
    with socket.socket() as silent:  # accepts connections (the backlog) and never reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        run = await notify("claude", "--server", url, stdin=payloads.text(payloads.stop()))
    assert (run.code, run.stdout) == (0, "")
    assert "did not take the note within 3 s" in run.stderr
    assert run.seconds < 6  # 3 s, and an interpreter's start on a busy machine


async def test_an_older_serve_without_notes_is_one_line_on_stderr() -> None:
    async def not_found(request: web.Request) -> web.Response:  # what a serve from before notes answers
        body = {"error": {"code": "NOT_FOUND", "message": "there is no API endpoint /v1/notes; see /openapi.json"}}
        return web.json_response(body, status=404)

    app = web.Application()
    app.router.add_post("/v1/notes", not_found)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        run = await notify("claude", "--server", url, stdin=payloads.text(payloads.stop()))
    finally:
        await runner.cleanup()
    assert (run.code, run.stdout) == (0, "")
    assert run.stderr == (
        "handraise hook claude --notify: NOT_FOUND: there is no API endpoint /v1/notes; see /openapi.json; "
        "no note posted\n"
    )


def test_the_hook_imports_none_of_the_servers_libraries() -> None:
    probe = (
        "import io, json, sys\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b'{}'))\n"
        "from bot.cli import main\n"
        f"main(['hook', 'claude', '--notify', '--server', 'http://127.0.0.1:{free_port()}'])\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    imported = {name.partition(".")[0] for name in json.loads(result.stdout.splitlines()[-1])}
    heavy = {"aiohttp", "slack_bolt", "slack_sdk", "pydantic", "pydantic_core", "mcp", "core", "anyio", "telegram"}
    assert imported & heavy == set()


# --- the pure part -------------------------------------------------------------------------------------------------


def test_claudes_event_becomes_the_agent_its_questions_name() -> None:
    body = claude_note(payloads.text(payloads.permission_prompt()), {"team": "billing"})
    assert body == {
        "agent": {
            "id": f"claude-{payloads.SESSION}",
            "name": "billing-api",
            "labels": {"tool": "claude", "project": "billing-api", "team": "billing"},
        },
        "event": "waiting",
        "text": "Claude needs your permission to use Bash",
    }


def test_every_waiting_notification_type_says_waiting() -> None:
    for kind in ("permission_prompt", "idle_prompt", "elicitation_dialog"):
        event = payloads.claude("Notification", message="…", notification_type=kind)
        assert claude_note(payloads.text(event), {})["event"] == "waiting"


def test_codexs_payload_becomes_a_finished_note() -> None:
    body = codex_note(payloads.text(payloads.codex_turn_complete()), {})
    assert (body["agent"]["id"], body["event"]) == (f"codex-{payloads.THREAD}", "finished")
    assert body["agent"]["labels"] == {"tool": "codex", "project": "billing-api"}


def test_an_event_without_a_cwd_is_named_for_its_agent() -> None:
    event = {k: v for k, v in payloads.stop().items() if k != "cwd"}
    assert claude_note(payloads.text(event), {})["agent"]["name"] == "claude"


def test_a_deeply_nested_event_is_garbage_not_a_crash() -> None:
    with pytest.raises(NotANote):
        codex_note("[" * 100_000 + "]" * 100_000, {})


def test_the_detail_is_cut_and_cleaned() -> None:
    assert shorten("a\x1b[31mred\x07\r\n\n\n\tnext  ") == "a [31mred \n\tnext"
    long = shorten("word " * 1_000)
    assert long is not None and len(long) == DETAIL_CHARS and long.endswith("…")
    assert shorten("   \n  ") is None and shorten(42) is None
