"""Delivery and its end: threads, DMs, failures that name Slack's error, 429s, cancellation, expiry, render limits."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.slack.channel import SlackChannel
from bot.slack.settings import SlackSettings
from bot.slack.transport import make_client
from core import AbortController, Agent, UserQuestionError

from .fake_slack import TOKEN
from .payloads import block_actions, button
from .records import item, labels
from .rig import slack_rig, subscription
from .signing import SECRET

pytestmark = pytest.mark.anyio

TS = "1700000000.000001"
YES_NO = item(options=["Yes (Recommended)", "No"])


async def failure(asked: object) -> UserQuestionError:
    outcome = await asked.result()  # type: ignore[attr-defined]
    assert isinstance(outcome, UserQuestionError), outcome
    return outcome


# --- where questions go ---------------------------------------------------------------------------------------------


async def test_one_agents_questions_stay_in_one_thread(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        first = rig.ask(YES_NO)
        await rig.posted()
        second = rig.ask(item("And the docs?", options=["Yes", "No"]))
        post = await rig.posted(2)
        assert (post["channel"], post["thread_ts"]) == ("C0DEPLOY", TS)
        other_agent = Agent("build-1")
        assert rig.ctx.agents is not None
        rig.ctx.agents.enter(other_agent)
        rig.ask(YES_NO, agent=other_agent)
        assert "thread_ts" not in await rig.posted(3)
        rig.ask(YES_NO, agent=False)
        assert "thread_ts" not in await rig.posted(4)
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts="1700000000.000002", thread_ts=TS))
        assert (await second.answer()).answers[0].selected == ["Yes"]
        assert not first.done.is_set()


async def test_the_agents_thread_is_found_again_after_a_restart(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(YES_NO)
        await rig.posted()
        await rig.restart_memory()  # a new process has no map yet
        rig.ask(YES_NO)
        assert (await rig.posted(2))["thread_ts"] == TS


async def test_a_thread_per_request_when_configured(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(thread="request")) as rig:
        rig.ask(YES_NO)
        rig.ask(YES_NO)
        posts = await rig.fake.wait_for("chat.postMessage", 2)
        assert all("thread_ts" not in post for post in posts)


async def test_a_user_route_asks_in_a_direct_message(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(channel=None, user="U0CAROL")) as rig:
        asked = rig.ask(YES_NO)
        post = await rig.posted()
        assert rig.fake.calls_to("conversations.open") == [{"users": "U0CAROL"}]
        assert post["channel"] == "D0CAROL"
        await rig.click(block_actions(button("hr.pick.0.1", "1"), channel="D0CAROL", ts=TS, user="U0CAROL"))
        assert (await asked.answer()).answers[0].selected == ["No"]


async def test_mentions_name_the_routed_people(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(mention=["U0BOB"])) as rig:
        rig.ask(YES_NO)
        post = await rig.posted()
        assert post["text"].startswith("<@U0BOB> deploy-bot asks:")


# --- failures ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "advice"),
    [
        ("channel_not_found", "check the channel id or name"),
        ("not_in_channel", "invite the app to the channel (/invite @handraise)"),
        ("invalid_auth", "check the bot token (xoxb-…) in SLACK_BOT_TOKEN"),
    ],
)
async def test_a_failed_post_fails_the_ask_naming_the_channel_and_slacks_error(
    tmp_path: Path, error: str, advice: str
) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.fake.fail("chat.postMessage", error)
        problem = await failure(rig.ask(YES_NO))
        assert problem.code == "DELIVERY_FAILED"
        assert problem.message.startswith(f"slack: cannot post to #deploys: {error} — {advice}")
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and record.status == "failed"


async def test_an_unknown_channel_name_is_a_delivery_error(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(channel="#nowhere")) as rig:
        problem = await failure(rig.ask(YES_NO))
        assert problem.message.startswith("slack: cannot post to #nowhere: channel_not_found")


async def test_an_unreachable_slack_is_an_error_not_a_hang(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.channel.transport.client = make_client(TOKEN, "http://127.0.0.1:9/api/", backoff=0.01)
        problem = await failure(rig.ask(YES_NO))
        assert problem.message.startswith("slack: cannot post to #deploys: connection_failed — cannot reach Slack")


async def test_a_429_is_retried_after_retry_after(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.fake.rate_limit("chat.postMessage", times=1, retry_after=0)
        asked = rig.ask(YES_NO)
        await rig.posted()
        attempts = [call.status for call in rig.fake.calls if call.method == "chat.postMessage"]
        assert attempts == [429, 200]
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS))
        assert (await asked.answer()).answers[0].selected == ["Yes (Recommended)"]


async def test_a_failed_update_does_not_lose_the_answer(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.fake.fail("chat.update", "message_not_found")
        asked = rig.ask(YES_NO)
        await rig.posted()
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS))
        assert (await asked.answer()).answers[0].selected == ["Yes (Recommended)"]


# --- cancellation and expiry ----------------------------------------------------------------------------------------


async def test_an_agent_cancelling_updates_the_message_and_removes_the_buttons(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        controller = AbortController()
        asked = rig.ask(YES_NO, signal=controller.signal)
        await rig.posted()
        controller.abort()
        assert (await failure(asked)).code == "ASK_ABORTED"
        (update,) = await rig.fake.wait_for("chat.update")
        assert update["ts"] == TS and all(block["type"] != "actions" for block in update["blocks"])
        assert ":no_entry_sign: *Cancelled*" in update["blocks"][-2]["text"]["text"]
        await rig.click(block_actions(button("hr.pick.0.0", "0"), ts=TS))
        (told,) = await rig.fake.wait_for("chat.postEphemeral")
        assert told["text"].startswith("This question is closed — it was cancelled")


async def test_a_question_nobody_answers_expires_and_says_so(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(expire_after="2h")) as rig:
        asked = rig.ask(YES_NO)
        await rig.posted()
        await rig.until(lambda: rig.clock.sleepers > 0)
        await rig.clock.advance(timedelta(hours=2))
        problem = await failure(asked)
        assert (problem.code, problem.message) == ("ASK_TIMEOUT", "nobody answered within 2h")
        (update,) = await rig.fake.wait_for("chat.update")
        assert ":hourglass: *Expired*" in update["blocks"][-2]["text"]["text"]
        assert all(block["type"] != "actions" for block in update["blocks"])


# --- rendering limits on the wire -----------------------------------------------------------------------------------


async def test_eleven_options_become_a_menu(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(item(options=labels(11)))
        post = await rig.posted()
        menus = [e for b in post["blocks"] if b["type"] == "actions" for e in b["elements"] if "options" in e]
        assert [(m["type"], len(m["options"])) for m in menus] == [("static_select", 11)]


async def test_101_options_fail_the_ask_before_anything_is_posted(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        problem = await failure(rig.ask(item(options=labels(101))))
        assert problem.code == "DELIVERY_FAILED"
        assert "question q1 has 101 options; a Slack menu holds at most 100" in problem.message
        assert rig.fake.methods() == []


async def test_a_4000_character_detail_is_posted_in_two_sections(tmp_path: Path) -> None:
    detail = "\n".join("y" * 99 for _ in range(40))
    async with slack_rig(tmp_path) as rig:
        rig.ask(item(detail=detail, options=["Yes", "No"]))
        post = await rig.posted()
        sections = [b["text"]["text"] for b in post["blocks"] if b["type"] == "section"]
        assert len(sections) == 3 and "\n".join(sections[1:]) == detail


async def test_agent_text_cannot_mention_anyone_in_the_posted_message(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.ask(item("<!channel> approve? <@U0BOSS>", options=["<!here>", "no"]))
        post = await rig.posted()
        assert (
            "<!channel>" not in str(post["blocks"]).replace("'text': '<!here>'", "") and "<@U0BOSS>" not in post["text"]
        )
        assert post["blocks"][0]["text"]["text"] == "&lt;!channel&gt; approve? &lt;@U0BOSS&gt;"


# --- construction ---------------------------------------------------------------------------------------------------


def test_socket_mode_needs_only_the_app_token_and_skips_signatures() -> None:
    settings = SlackSettings(mode="socket", app_token_env="APP", signing_secret_env=None)
    channel = SlackChannel(settings, environ={"SLACK_BOT_TOKEN": "xoxb-1", "APP": "xapp-1"})
    assert channel.app_token == "xapp-1"
    assert channel.transport.client.token == "xoxb-1"


def test_missing_secrets_are_a_config_error() -> None:
    from bot.settings.errors import ConfigError

    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET is not set"):
        SlackChannel(SlackSettings(), environ={"SLACK_BOT_TOKEN": "xoxb-1"})
    assert (
        SlackChannel(SlackSettings(), environ={"SLACK_BOT_TOKEN": "x", "SLACK_SIGNING_SECRET": SECRET}).app_token
        is None
    )
