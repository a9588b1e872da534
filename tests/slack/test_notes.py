"""Status notes in Slack: posted in the agent's thread (found in memory, or in the store after a restart), starting
that thread when the agent has asked nothing yet, escaped so that the agent's words ping nobody, never with buttons;
a Slack failure loses the note and nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.api.notes import StatusNotes
from bot.questions.status_note import NoteEvent, StatusNote
from bot.store.records import AgentRef

from .records import item
from .rig import SlackRig, slack_rig, subscription

pytestmark = pytest.mark.anyio


def note(event: NoteEvent = "finished", text: str | None = None, **agent: Any) -> StatusNote:
    """A note from the rig's agent (`deploy-7`, named deploy-bot), working on billing-api."""
    ref = {"id": "deploy-7", "name": "deploy-bot", "labels": {"project": "billing-api"}} | agent
    return StatusNote(agent=AgentRef.model_validate(ref), event=event, text=text)


def blocks_of(post: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = post.get("blocks", [])
    return json.loads(blocks) if isinstance(blocks, str) else blocks


async def ask_first(rig: SlackRig, posts_before: int = 0) -> dict[str, Any]:
    """Ask a question (so that the agent has a thread); its post, which comes after `posts_before` others."""
    rig.ask(item(options=["Yes", "No"]))
    return await rig.posted(posts_before + 1)


async def test_a_note_lands_in_the_thread_a_question_made(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        question = await ask_first(rig)
        (question_ts,) = [m["ts"] for m in rig.fake.messages["C0DEPLOY"]]
        shown = await StatusNotes(rig.ledger).post(note("finished", "All 112 tests pass."))
        posted = await rig.posted(2)
    assert shown == ["slack"]
    assert question.get("thread_ts") is None
    assert (posted["channel"], posted["thread_ts"]) == ("C0DEPLOY", question_ts)
    assert posted["text"] == "deploy-bot · billing-api: finished\nAll 112 tests pass."
    assert [block["type"] for block in blocks_of(posted)] == ["section"]


async def test_waiting_says_waiting_for_you(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        await ask_first(rig)
        await StatusNotes(rig.ledger).post(note("waiting", "Claude needs your permission to use Bash"))
        posted = await rig.posted(2)
    assert posted["text"].splitlines() == [
        "deploy-bot · billing-api: waiting for you",
        "Claude needs your permission to use Bash",
    ]


async def test_after_a_restart_the_thread_is_found_in_the_store(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        await ask_first(rig)
        (question_ts,) = [m["ts"] for m in rig.fake.messages["C0DEPLOY"]]
        await rig.restart_memory()
        await StatusNotes(rig.ledger).post(note())
        posted = await rig.posted(2)
    assert posted["thread_ts"] == question_ts


async def test_a_note_before_any_question_starts_the_thread_the_questions_join(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        assert await StatusNotes(rig.ledger).post(note("waiting")) == ["slack"]
        first = await rig.posted()
        (note_ts,) = [m["ts"] for m in rig.fake.messages["C0DEPLOY"]]
        question = await ask_first(rig, posts_before=1)
    assert (first["channel"], first.get("thread_ts")) == ("#deploys", None)
    assert question["thread_ts"] == note_ts


async def test_with_a_thread_per_request_the_note_goes_beside_the_questions(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(thread="request")) as rig:
        await ask_first(rig)
        await StatusNotes(rig.ledger).post(note())
        posted = await rig.posted(2)
    assert (posted["channel"], posted.get("thread_ts")) == ("#deploys", None)


async def test_a_direct_message_route_gets_the_note_in_the_dm(tmp_path: Path) -> None:
    async with slack_rig(tmp_path, subscription(channel=None, user="U0ALICE")) as rig:
        await StatusNotes(rig.ledger).post(note())
        posted = await rig.posted()
    assert posted["channel"] == "D0ALICE"


async def test_the_agents_words_cannot_ping_anyone(tmp_path: Path) -> None:
    hostile = "<!channel> <@U0BOSS> <https://evil.example|click> & done"
    async with slack_rig(tmp_path) as rig:
        await StatusNotes(rig.ledger).post(note("finished", hostile, name="<!here>"))
        posted = await rig.posted()
    shown = posted["text"] + json.dumps(blocks_of(posted))
    assert "<!" not in shown and "<@" not in shown and "<http" not in shown
    assert posted["text"] == (
        "&lt;!here&gt; · billing-api: finished\n"
        "&lt;!channel&gt; &lt;@U0BOSS&gt; &lt;https://evil.example|click&gt; &amp; done"
    )


async def test_a_long_detail_is_cut(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        await StatusNotes(rig.ledger).post(note("finished", "word " * 1_000))
        posted = await rig.posted()
    assert len(posted["text"]) < 1_400 and posted["text"].endswith("…")


async def test_a_note_from_an_agent_routed_elsewhere_is_not_posted(tmp_path: Path) -> None:
    only_ops = subscription(labels={"team": "ops"})
    async with slack_rig(tmp_path, only_ops) as rig:
        assert await StatusNotes(rig.ledger).post(note()) == []
    assert rig.fake.calls_to("chat.postMessage") == []


async def test_a_slack_failure_loses_the_note_and_nothing_else(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        rig.fake.fail("chat.postMessage", "not_in_channel")
        assert await StatusNotes(rig.ledger).post(note()) == []
        await ask_first(rig, posts_before=1)  # the refused post is the first
    (question,) = rig.fake.messages["C0DEPLOY"]
    assert question.get("thread_ts") is None  # a thread of its own: the lost note made none


async def test_a_note_leaves_nothing_in_the_store(tmp_path: Path) -> None:
    async with slack_rig(tmp_path) as rig:
        await StatusNotes(rig.ledger).post(note())
        await rig.posted()
        assert await rig.ledger.store.list_questions() == []
        assert await rig.ledger.store.history() == []
