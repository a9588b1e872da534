"""A question resumed after a restart is bound from the record this replica read when it claimed it; a person who
answered in between (while `serve` was starting, before the question was held again) must not be lost: the bind
reads the question back, and the agent's long poll gets the answer instead of waiting out its deadline."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from bot.api.remote import RemoteQuestions
from bot.channels.base import install_channel
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.questions.tasks import TaskBag
from bot.store.records import AgentRef, QuestionRecord
from core import AskUserQuestionAnswerItem, AskUserQuestionItem
from tests.core.helpers import make_context

from .fakes import RecordingChannel, make_ledger

pytestmark = pytest.mark.anyio

QUESTION = AskUserQuestionItem.model_validate({"id": "go", "question": "Deploy?", "options": [{"label": "Yes"}]})
YES = {"go": AskUserQuestionAnswerItem(id="go", selected=["Yes"])}


class Restarted:
    """A second `serve`'s view of one API question left pending by the first: ledger, channel and RemoteQuestions."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.inbox = RecordingChannel("inbox")
        ctx = make_context()
        router = Router(["inbox"], {"inbox": []})
        install_channel(ctx, self.inbox, router, ledger)
        self.tasks = TaskBag()
        self.remote = RemoteQuestions(ctx, ledger, router, self.tasks)


@pytest.fixture
async def restarted(tmp_path: Path) -> AsyncIterator[Restarted]:
    ledger, _ = make_ledger(tmp_path)
    rig = Restarted(ledger)
    yield rig
    ledger.close()
    await rig.tasks.close()
    await ledger.store.close()


async def left_pending(ledger: Ledger) -> QuestionRecord:
    """A question the first process stored and never saw ended, as the claim reads it."""
    record = QuestionRecord(agent=AgentRef(id="deploy-1"), questions=[QUESTION], origin="api")
    await ledger.store.create_question(record)
    return record


async def test_an_answer_stored_before_the_resume_holds_it_is_not_lost(restarted: Restarted) -> None:
    ledger = restarted.ledger
    claimed = await left_pending(ledger)
    await ledger.submit(claimed.id, YES, by="alice", via="web")  # not held yet: only the store knows
    assert restarted.remote.resume([claimed]) == 1  # with the record read before the answer
    await anyio.wait_all_tasks_blocked()
    current = await ledger.current(claimed.id)
    assert current is not None and (current.status, current.answered_by) == ("answered", "alice")
    assert restarted.inbox.delivered == []  # nothing left to ask: no channel shows an answered question
    with anyio.fail_after(10):  # a guard against hanging, not a measurement
        record = await ledger.wait(claimed.id, 300)
    assert record.status == "answered"


async def test_a_long_poll_already_waiting_wakes_when_the_answer_is_read_back(
    restarted: Restarted, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = restarted.ledger
    claimed = await left_pending(ledger)
    await ledger.submit(claimed.id, YES, by="alice", via="web")
    reading, release = anyio.Event(), anyio.Event()
    read = ledger.store.get_question

    async def slow_read(question_id: str) -> QuestionRecord | None:
        reading.set()
        await release.wait()
        return await read(question_id)

    monkeypatch.setattr(ledger.store, "get_question", slow_read)
    outcome: list[QuestionRecord] = []

    async def long_poll() -> None:
        outcome.append(await ledger.wait(claimed.id, 300))

    with anyio.fail_after(10):  # a guard against hanging, not a measurement
        async with anyio.create_task_group() as group:
            restarted.remote.resume([claimed])
            await reading.wait()  # held again, from the stale record; its read back is under way
            group.start_soon(long_poll)
            await anyio.wait_all_tasks_blocked()
            assert outcome == []  # the poll waits on the held (stale) copy
            release.set()
    assert [record.status for record in outcome] == ["answered"]
    assert restarted.inbox.delivered == []
