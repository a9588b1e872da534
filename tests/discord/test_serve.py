"""Discord end to end through `serve`: agents ask over the HTTP API, people answer on the fake Discord, the agents read
the answers back; and `handraise serve` as a process stops on SIGTERM and picks up where it left off."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from bot.program import running
from tests.bot.program_rig import config_for, free_port

from .fake_discord import CHANNEL_ID, EPHEMERAL, TOKEN, FakeDiscord, fake_discord
from .rig import ALICE, BOB, MALLORY, REVIEWERS

pytestmark = pytest.mark.anyio

AGENT = {"id": "dc-deploy-7", "name": "deploy-bot"}


def discord_table(fake: FakeDiscord) -> str:
    return (
        f'[discord]\napi_url = "{fake.url}/api"\n[[discord.subscriptions]]\nagents = ["dc-*"]\n'
        f'channel = "{CHANNEL_ID}"\nresponders = ["{ALICE["id"]}", "role:{REVIEWERS}"]\n'
    )


@asynccontextmanager
async def serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[FakeDiscord, Api]]:
    monkeypatch.setenv("DISCORD_BOT_TOKEN", TOKEN)
    async with fake_discord() as fake:
        config = config_for(tmp_path, discord_table(fake), environ={"DISCORD_BOT_TOKEN": TOKEN})
        async with running(config) as started, aiohttp.ClientSession(started.base_url) as http:
            await fake.until(lambda: bool(fake.sessions))
            yield fake, Api(http, fake)


class Api:
    """An agent on the HTTP API, and what it sees of Discord."""

    def __init__(self, http: aiohttp.ClientSession, fake: FakeDiscord) -> None:
        self.http, self.fake = http, fake

    async def ask(self, *questions: dict[str, Any]) -> tuple[str, str]:
        """Ask; returns the question's id and the id of the Discord message that asks it."""
        before = set(self.fake.messages)
        async with self.http.post("/v1/questions", json={"questions": list(questions), "agent": AGENT}) as reply:
            assert reply.status == 202, await reply.text()
            question_id = (await reply.json())["id"]
        await self.fake.until(lambda: any(self._asks(m) for m in set(self.fake.messages) - before))
        (message,) = [m for m in set(self.fake.messages) - before if self._asks(m)]
        return question_id, message

    def _asks(self, message_id: str) -> bool:
        return self.fake.messages[message_id]["content"].startswith("❓")

    async def outcome(self, question_id: str) -> dict[str, Any]:
        async with self.http.get(f"/v1/questions/{question_id}?wait=10") as reply:
            return await reply.json()

    def control(self, message_id: str, label: str) -> str:
        return next(item["custom_id"] for item in self.fake.buttons(message_id) if label in (item.get("label") or ""))

    def select(self, message_id: str) -> str:
        return next(item["custom_id"] for item in self.fake.buttons(message_id) if item["type"] == 3)

    async def callback(self, interaction: str) -> dict[str, Any]:
        await self.fake.until(lambda: bool(self.fake.callbacks(interaction)))
        return self.fake.callbacks(interaction)[0]


def option_list(*labels: str) -> list[dict[str, str]]:
    return [{"label": label} for label in labels]


async def by_button(api: Api, message: str) -> None:
    await api.fake.click(message, api.control(message, "Production"), ALICE)


async def by_select(api: Api, message: str) -> None:
    await api.fake.choose(message, api.select(message), ["6"], ALICE)


async def by_multi_select(api: Api, message: str) -> None:
    await api.fake.choose(message, api.select(message), ["0", "2"], BOB, roles=[REVIEWERS])
    await api.fake.click(message, api.control(message, "Submit"), BOB, roles=[REVIEWERS])


async def by_modal(api: Api, message: str) -> None:
    opened = await api.fake.click(message, api.control(message, "…"), ALICE)
    modal = await api.callback(opened)
    assert modal["type"] == 9
    await api.fake.submit_modal(message, modal["data"]["custom_id"], {"words": "call it Aurora"}, ALICE)


async def by_thread_reply(api: Api, message: str) -> None:
    await api.fake.post(api.fake.messages[message]["channel_id"], ALICE, "2")


async def by_approve(api: Api, message: str) -> None:
    await api.fake.click(message, api.control(message, "Approve"), ALICE)


Answerer = Callable[[Api, str], Coroutine[Any, Any, None]]
PLAN = {"kind": "plan-review", "approve": "Approve"}
SHAPES: list[tuple[str, dict[str, Any], Answerer, dict[str, Any]]] = [
    ("button", {"options": option_list("Staging", "Production")}, by_button, {"selected": ["Production"]}),
    ("select", {"options": option_list(*(f"r{n}" for n in range(8)))}, by_select, {"selected": ["r6"]}),
    (
        "multi-select",
        {"options": option_list("Unit", "Lint", "Docs"), "multi_select": True},
        by_multi_select,
        {"selected": ["Unit", "Docs"]},
    ),
    ("other", {"options": option_list("A", "B")}, by_modal, {"selected": [], "custom": "call it Aurora"}),
    ("free text", {}, by_modal, {"selected": [], "custom": "call it Aurora"}),
    ("thread reply", {"options": option_list("Staging", "Production")}, by_thread_reply, {"selected": ["Production"]}),
    (
        "plan review",
        {"options": option_list("Approve", "Request changes"), "intent": PLAN, "detail": "step\n" * 900},
        by_approve,
        {"selected": ["Approve"]},
    ),
    (
        "request changes",
        {"options": option_list("Approve", "Request changes"), "intent": PLAN, "detail": "1. migrate"},
        by_modal,
        {"selected": [], "custom": "call it Aurora"},
    ),
]


@pytest.mark.parametrize(("shape", "fields", "answer", "expected"), SHAPES, ids=[shape[0] for shape in SHAPES])
async def test_every_question_shape_is_answered_through_serve(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    shape: str,
    fields: dict[str, Any],
    answer: Answerer,
    expected: dict[str, Any],
) -> None:
    async with serving(tmp_path, monkeypatch) as (fake, api):
        question_id, message = await api.ask({"id": "q", "question": f"A {shape}?"} | fields)
        await answer(api, message)
        outcome = await api.outcome(question_id)
        assert outcome["status"] == "answered", outcome
        item = outcome["answer"]["answers"][0]
        assert {key: item.get(key) for key in expected} == expected
        await fake.until(lambda: fake.messages[message]["components"] == [])
        assert "Answered" in fake.messages[message]["content"]


async def test_a_batch_is_answered_one_question_after_another_in_one_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serving(tmp_path, monkeypatch) as (fake, api):
        question_id, message = await api.ask(
            {"id": "env", "question": "Where?", "options": option_list("Staging", "Production")},
            {"id": "why", "question": "Why?"},
        )
        await by_button(api, message)
        await fake.until(lambda: "Why?" in fake.messages[message]["content"])
        await by_modal(api, message)
        outcome = await api.outcome(question_id)
        assert [item.get("custom") or item["selected"] for item in outcome["answer"]["answers"]] == [
            ["Production"],
            "call it Aurora",
        ]


async def test_refusals_are_ephemeral_and_a_late_click_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serving(tmp_path, monkeypatch) as (fake, api):
        question_id, message = await api.ask({"id": "q", "question": "Go?", "options": option_list("Yes", "No")})
        refused = await fake.click(message, api.control(message, "Yes"), MALLORY)
        assert (await api.callback(refused))["data"]["flags"] == EPHEMERAL
        yes = api.control(message, "Yes")
        await fake.click(message, yes, ALICE)
        assert (await api.outcome(question_id))["answer"]["answers"][0]["selected"] == ["Yes"]
        await fake.until(lambda: fake.messages[message]["components"] == [])
        edits = len(fake.calls_to("PATCH"))
        late = await fake.click(message, api.control(message, "Yes") if fake.buttons(message) else yes, ALICE)
        notice = await api.callback(late)
        assert notice["data"]["flags"] == EPHEMERAL and "already answered" in notice["data"]["content"]
        assert len(fake.calls_to("PATCH")) == edits


async def test_a_click_replayed_on_resume_is_acknowledged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with serving(tmp_path, monkeypatch) as (fake, api):
        question_id, message = await api.ask({"id": "q", "question": "Go?", "options": option_list("Yes", "No")})
        await fake.reconnect()
        pressed = await fake.click(message, api.control(message, "No"), ALICE)
        assert (await api.callback(pressed))["type"] == 6
        assert (await api.outcome(question_id))["answer"]["answers"][0]["selected"] == ["No"]
        assert len(fake.resumed) == 1 and len(fake.identified) == 1


@asynccontextmanager
async def serve_process(tmp_path: Path, config: Path) -> AsyncIterator[tuple[anyio.abc.Process, str]]:
    """`handraise serve` as a process; yields it and its banner."""
    env = os.environ | {"PYTHONUNBUFFERED": "1", "HANDRAISE_CONFIG": "", "DISCORD_BOT_TOKEN": TOKEN}
    command = [sys.executable, "-m", "bot.cli", "serve", "--config", str(config)]
    async with await anyio.open_process(command, cwd=tmp_path, env=env) as process:
        assert process.stdout is not None
        banner = ""
        with anyio.fail_after(30):
            async for text in TextReceiveStream(process.stdout):
                banner += text
                if "web inbox:" in banner:
                    break
        try:
            yield process, banner
        finally:
            if process.returncode is None:
                process.kill()


async def test_serve_stops_on_sigterm_and_after_a_restart_old_buttons_answer_and_nothing_is_posted_again(
    tmp_path: Path,
) -> None:
    async with fake_discord() as fake:
        port = free_port()
        config = tmp_path / "config.toml"
        config.write_text(
            f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\npath = "{tmp_path / "handraise.db"}"\n'
            + discord_table(fake)
        )
        async with serve_process(tmp_path, config) as (process, banner):
            assert TOKEN not in banner
            async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http:
                api = Api(http, fake)
                question_id, message = await api.ask({"id": "q", "question": "Ship?", "options": option_list("Yes")})
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(15):
                assert await process.wait() == 0
        posts = len(fake.calls_to("POST /channels/"))
        async with serve_process(tmp_path, config) as (process, _):
            await fake.until(lambda: len(fake.identified) == 2, seconds=20)
            pressed = await fake.click(message, api.control(message, "Yes"), ALICE)
            async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http:
                outcome = await Api(http, fake).outcome(question_id)
            assert outcome["answer"]["answers"][0]["selected"] == ["Yes"]
            assert (await api.callback(pressed))["type"] == 6
            await fake.until(lambda: fake.messages[message]["components"] == [])
            assert len(fake.calls_to("POST /channels/")) == posts  # nothing posted again
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(15):
                assert await process.wait() == 0
