"""Teams through `handraise serve` itself: the channel built from the config's `[teams]` table by the registry,
`/teams/messages` on serve's own server, an agent asking over the HTTP API and reading the answer there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.program import Running, running
from bot.teams.incoming import MESSAGES_PATH
from tests.bot.program_rig import config_for

from .fake_teams import ALICE, APP_ID, APP_PASSWORD, CONVERSATION, MALLORY, TENANT, FakeTeams, fake_teams
from .questions import action, texts

pytestmark = pytest.mark.anyio

ENVIRON = {"TEAMS_APP_ID": APP_ID, "TEAMS_APP_PASSWORD": APP_PASSWORD}
QUESTION = {"id": "env", "question": "Deploy where?", "options": [{"label": "Staging"}, {"label": "Production"}]}


def teams_table(fake: FakeTeams, tmp_path: Path, responders: list[str]) -> str:
    return (
        '[bot]\nanswerers = ["teams"]\n'
        f'[teams]\ntenant_id = "{TENANT}"\nopenid_metadata_url = "{fake.identity.metadata_url}"\n'
        f'token_url = "{fake.token_url}"\nconversations_file = "{tmp_path / "conversations.json"}"\n'
        f'[[teams.subscriptions]]\nagents = ["deploy-*"]\nconversation = "{CONVERSATION}"\n'
        f'service_url = "{fake.service_url}"\nresponders = {responders!r}\n'.replace("'", '"')
    )


@asynccontextmanager
async def serve_with_teams(tmp_path: Path, responders: list[str]) -> AsyncIterator[tuple[Running, FakeTeams]]:
    async with fake_teams() as fake:
        with pytest.MonkeyPatch.context() as env:
            for name, value in ENVIRON.items():
                env.setenv(name, value)
            config = config_for(tmp_path, teams_table(fake, tmp_path, responders), environ=ENVIRON)
            async with running(config) as program:
                fake.bot_url = program.base_url + MESSAGES_PATH
                yield program, fake


async def call(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.request(method, url, json=body) as response:
        return response.status, await response.json()


async def test_an_agents_question_is_answered_in_teams_through_serve(tmp_path: Path) -> None:
    async with serve_with_teams(tmp_path, [ALICE.email]) as (program, fake):
        ask = {"questions": [QUESTION], "agent": {"id": "deploy-7", "name": "deploy-bot"}}
        status, body = await call("POST", f"{program.base_url}/v1/questions", ask)
        assert status == 202
        question_id = body["id"]
        await fake.wait_for("POST")
        card_id = next(iter(fake.activities))
        assert "Deploy where?" in texts(fake.card(card_id))
        data = action(fake.card(card_id), "Production")["data"]
        refused = await fake.send(fake.execute(card_id, MALLORY, dict(data)))
        assert refused[1]["type"] == "application/vnd.microsoft.activity.message"
        status, _ = await fake.send(fake.execute(card_id, ALICE, dict(data)))
        assert status == 200
        status, body = await call("GET", f"{program.base_url}/v1/questions/{question_id}?wait=10")
        assert body["status"] == "answered"
        assert body["answer"] == {"answers": [{"id": "env", "selected": ["Production"]}]}
        assert (body["resolvedBy"], body["resolvedVia"]) == (ALICE.email, "teams")
        await fake.wait_for("PUT")
        assert "Answered** by Alice Archer" in texts(fake.card(card_id))


async def test_serve_refuses_an_activity_without_a_genuine_token(tmp_path: Path) -> None:
    async with serve_with_teams(tmp_path, []) as (_, fake):
        forged = "Bearer " + fake.identity.token(fake.service_url, key="mallory")
        status, _ = await fake.send(fake.activity("message", ALICE, text="2"), token=forged)
        assert status == 401
        assert fake.calls == []
