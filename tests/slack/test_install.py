"""The Slack answerer installed for real: in `handraise serve`'s program (its /slack/events on the same server),
and standalone on someone else's context with `ctx.plugin(SlackAnswerer, settings)`."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import anyio
import pytest
from aiohttp import web

from bot.program import running
from bot.slack import SlackAnswerer, SlackChannel
from bot.slack.settings import SlackSettings
from bot.slack.transport import make_client
from core import AgentRegistry, AskUserQuestionRequest, Context, UserQuestionError, UserQuestionService

from ..bot.program_rig import config_for
from .fake_slack import TOKEN, fake_slack
from .payloads import block_actions, button
from .records import item
from .rig import subscription
from .signing import SECRET, bolt_request, interactive_body, signed_headers

pytestmark = pytest.mark.anyio

TS = "1700000000.000001"
QUESTION = {"id": "deploy", "question": "Deploy v2?", "options": [{"label": "Yes"}, {"label": "No"}]}


async def test_the_program_asks_in_slack_and_takes_the_click_on_its_own_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    async with fake_slack() as fake:
        extra = (
            f'[bot]\nanswerers = ["slack"]\n[slack]\napi_url = "{fake.url}"\n'
            '[[slack.subscriptions]]\nchannel = "#deploys"\nresponders = ["U0ALICE"]\n'
        )
        config = config_for(tmp_path, extra, environ={"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET})
        async with running(config) as program, aiohttp.ClientSession(program.base_url) as http:
            assert isinstance(program.installation.channel("slack"), SlackChannel)
            async with http.post("/v1/questions", json={"questions": [QUESTION], "agent": {"id": "deploy-7"}}) as r:
                assert r.status == 202
                question_id = (await r.json())["id"]
            (post,) = await fake.wait_for("chat.postMessage")
            assert post["channel"] == "#deploys"
            body = interactive_body(block_actions(button("hr.pick.0.1", "1"), ts=TS))
            async with http.post("/slack/events", data=body, headers=signed_headers(body, secret="forged")) as r:
                assert r.status == 401
            async with http.post("/slack/events", data=body, headers=signed_headers(body)) as r:
                assert r.status == 200
            async with http.get(f"/v1/questions/{question_id}", params={"wait": "5"}) as r:
                answered = await r.json()
            assert answered["answer"] == {"answers": [{"id": "deploy", "selected": ["No"]}]}
            assert (answered["resolvedBy"], answered["resolvedVia"]) == ("U0ALICE", "slack")
            await fake.wait_for("chat.update")


async def test_a_harness_plugs_the_slack_answerer_into_its_own_context(tmp_path: Path) -> None:
    async with fake_slack() as fake:
        ctx = Context()
        ctx.plugin(AgentRegistry)
        ctx.plugin(UserQuestionService)
        settings = SlackSettings(api_url=fake.url, subscriptions=[subscription()])
        client = make_client(TOKEN, fake.url)
        handle = ctx.plugin(SlackAnswerer, settings, client=client, signing_secret=SECRET)
        answerer = handle.value
        assert isinstance(answerer, SlackAnswerer)
        app = web.Application()
        answerer.add_routes(app)
        assert [route.resource.canonical for route in app.router.routes()] == ["/slack/events"]  # type: ignore[union-attr]
        service = ctx.user_questions
        assert service is not None
        outcome: list[object] = []

        async def ask() -> None:
            outcome.append(await service.ask(AskUserQuestionRequest(questions=[item(options=["Yes", "No"])])))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            await fake.wait_for("chat.postMessage")
            click = interactive_body(block_actions(button("hr.pick.0.0", "0"), ts=TS))
            await answerer.channel.app.async_dispatch(bolt_request(click))
        assert [a.selected for a in outcome[0].answers] == [["Yes"]]  # type: ignore[attr-defined]
        handle.dispose()
        with pytest.raises(UserQuestionError, match="no user-questions answerer accepted the request"):
            await service.ask(AskUserQuestionRequest(questions=[item(options=["Yes", "No"])]))
