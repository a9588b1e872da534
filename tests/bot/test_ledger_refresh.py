"""`Ledger.refresh`: other replicas' changes, as the change feed reads them, reach holders, long polls and watchers
once each; the feed's echo of this process's own writes is not news."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from bot.questions.ledger import Ledger
from bot.questions.ledger_feed import Stored
from bot.store.records import Approval, QuestionRecord
from core import AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionRequest

from .fakes import make_ledger

pytestmark = pytest.mark.anyio

ITEM = AskUserQuestionItem.model_validate(
    {"id": "go", "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}
)
YES = AskUserQuestionAnswerItem(id="go", selected=["Yes"])


def following(tmp_path: Path) -> tuple[Ledger, list[tuple[str, str]], list[tuple[str, str]]]:
    """A ledger as a replica's (a feed runs), with what its watchers and shown listeners heard."""
    ledger, _ = make_ledger(tmp_path)
    ledger.following = True
    heard: list[tuple[str, str]] = []
    shown: list[tuple[str, str]] = []

    async def hear(kind: str, record: QuestionRecord) -> None:
        heard.append((kind, record.id))

    async def see(channel: str, record: QuestionRecord) -> None:
        shown.append((channel, record.id))

    ledger.watch(hear)
    ledger.watch_shown(see)
    return ledger, heard, shown


async def elsewhere(ledger: Ledger) -> QuestionRecord:
    """A question another replica asked: in the store, not held here."""
    record = QuestionRecord(questions=[ITEM], origin="api")
    await ledger.store.create_question(record)
    return record


async def test_a_question_asked_elsewhere_is_announced_once_and_each_channel_showing_it_once(tmp_path: Path) -> None:
    ledger, heard, shown = following(tmp_path)
    record = await elsewhere(ledger)
    await ledger.refresh([Stored(record)])
    await ledger.refresh([Stored(record)])
    await ledger.refresh([Stored(record, ("web",))])
    await ledger.refresh([Stored(record, ("slack", "web"))])
    await ledger.refresh([Stored(record, ("slack", "web"))])
    assert heard == [("asked", record.id)]
    assert shown == [("web", record.id), ("slack", record.id)]


async def test_an_answer_given_elsewhere_is_announced_once(tmp_path: Path) -> None:
    ledger, heard, _ = following(tmp_path)
    record = await elsewhere(ledger)
    answered = record.model_copy(update={"status": "answered"})
    await ledger.refresh([Stored(answered)])
    await ledger.refresh([Stored(answered)])
    await ledger.refresh([Stored(record)])  # a read that raced the answer: older, and not news
    assert heard == [("resolved", record.id)]


async def test_the_echo_of_this_replicas_own_answer_is_not_announced_again(tmp_path: Path) -> None:
    ledger, heard, _ = following(tmp_path)
    record = await elsewhere(ledger)
    resolution = await ledger.submit(record.id, {"go": YES}, by="ann", via="web")
    await ledger.refresh([Stored(resolution.record, ("web",))])
    assert heard == [("resolved", record.id)]


async def test_the_echo_of_this_replicas_own_approval_is_not_announced_again(tmp_path: Path) -> None:
    ledger, heard, _ = following(tmp_path)
    record = await elsewhere(ledger)
    await ledger.refresh([Stored(record)])
    approved = await ledger.approve(record.id, YES, by="ann", via="web", identity="ann", needed=2)
    await ledger.refresh([Stored(approved.record)])
    await ledger.refresh([Stored(record)])  # older than what this replica did
    assert heard == [("asked", record.id), ("partial", record.id)]


async def test_an_approval_counted_elsewhere_touches_the_holder_once(tmp_path: Path) -> None:
    ledger, heard, _ = following(tmp_path)
    pending = await ledger.hold(AskUserQuestionRequest(questions=[ITEM]))
    record, _ = await ledger.store.add_approval(pending.id, Approval(by="bob", via="slack", identity="bob"))
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pending.wait_changed)
            await anyio.lowlevel.checkpoint()
            await ledger.refresh([Stored(record)])
            await ledger.refresh([Stored(record)])
    assert [approval.by for approval in pending.record.approvals] == ["bob"]
    assert heard == [("asked", pending.id), ("partial", pending.id)]


async def test_an_answer_given_elsewhere_wakes_the_holder_with_it(tmp_path: Path) -> None:
    ledger, heard, _ = following(tmp_path)
    pending = await ledger.hold(AskUserQuestionRequest(questions=[ITEM]))
    answered = pending.record.model_copy(update={"status": "answered", "answered_by": "bob"})
    await ledger.refresh([Stored(answered)])
    assert pending.resolved.is_set() and pending.record.answered_by == "bob"
    assert heard == [("asked", pending.id), ("resolved", pending.id)]


async def test_a_long_poll_on_a_question_held_elsewhere_returns_when_the_feed_sees_it_end(tmp_path: Path) -> None:
    ledger, _, _ = following(tmp_path)
    record = await elsewhere(ledger)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:

            async def poll() -> None:
                assert (await ledger.wait(record.id, 60)).status == "cancelled"

            tasks.start_soon(poll)
            while not ledger.watches:
                await anyio.sleep(0.01)
            # Another replica cancels it: the store changes, then the feed reads it.
            ended = await ledger.store.resolve(record.id, "cancelled", error_code="ASK_CANCELLED", error_message="no")
            await ledger.refresh([Stored(ended.record)])
    assert not ledger.watches


async def test_without_a_feed_a_long_poll_on_a_question_not_held_returns_at_once(tmp_path: Path) -> None:
    ledger, _ = make_ledger(tmp_path)
    record = await elsewhere(ledger)
    with anyio.fail_after(1):
        assert (await ledger.wait(record.id, 60)).status == "pending"
