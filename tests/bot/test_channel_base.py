"""The shared channel base: routing, first answer wins, escalation, expiry, cancellation, failed delivery, resume."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from bot.channels.base import install_channel
from bot.config import Subscription
from bot.questions.routing import Router
from core import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    UserQuestionError,
)
from tests.core.helpers import make_context
from tests.fake_clock import FakeClock

from .fakes import RecordingChannel, make_ledger, sync_store

pytestmark = pytest.mark.anyio

QUESTION = AskUserQuestionItem.model_validate(
    {"id": "deploy", "question": "Deploy v2?", "options": [{"label": "Yes (Recommended)"}, {"label": "No"}]}
)


class Rig:
    """A context with the seam, a ledger on a real SQLite file, a fake clock and recording channels."""

    def __init__(self, tmp_path: Path, subscriptions: dict[str, list[Subscription]]) -> None:
        self.ledger, self.clock = make_ledger(tmp_path)
        self.ctx = make_context()
        router = Router(list(subscriptions), subscriptions)
        self.channels = {name: RecordingChannel(name) for name in subscriptions}
        for channel in self.channels.values():
            install_channel(self.ctx, channel, router, self.ledger)
        self.outcome: list[Any] = []

    async def ask(self, signal: Any = None) -> None:
        service = self.ctx.user_questions
        assert service is not None
        try:
            self.outcome.append(await service.ask(AskUserQuestionRequest(questions=[QUESTION], signal=signal)))
        except UserQuestionError as error:
            self.outcome.append(error)

    def question_id(self) -> str:
        (record,) = sync_store(self.ledger.store).list_questions()
        return record.id

    async def answer(self, label: str, *, by: str, via: str) -> Any:
        item = AskUserQuestionAnswerItem(id="deploy", selected=[label])
        return await self.ledger.submit(self.question_id(), {"deploy": item}, by=by, via=via)


async def settle(clock: FakeClock, by: timedelta = timedelta(0)) -> None:
    await clock.advance(by)


async def test_the_routed_channel_delivers_and_the_first_answer_is_returned(tmp_path: Path) -> None:
    rig = Rig(tmp_path, {"slack": []})
    first: Any = None
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask)
        await rig.channels["slack"].delivery_seen.wait()
        first = await rig.answer("No", by="U1", via="slack")
    assert first.won
    answer = rig.outcome[0]
    assert isinstance(answer, AskUserQuestionAnswer) and answer.answers[0].selected == ["No"]
    assert [record.status for record in rig.channels["slack"].closed] == ["answered"]
    assert await rig.ledger.store.get_delivery(rig.question_id(), "slack") is not None


async def test_a_second_answer_is_told_who_answered_first(tmp_path: Path) -> None:
    rig = Rig(tmp_path, {"slack": []})
    late: Any = None
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask)
        await rig.channels["slack"].delivery_seen.wait()
        await rig.answer("No", by="U1", via="slack")
        late = await rig.answer("Yes (Recommended)", by="U2", via="slack")
    assert not late.won
    assert (late.record.answered_by, late.record.answer.answers[0].selected) == ("U1", ["No"])
    kinds = [event.kind for event in await rig.ledger.store.history()]
    assert kinds.count("answered") == 1 and kinds.count("duplicate") == 1


async def test_a_channel_not_routed_passes_to_the_next(tmp_path: Path) -> None:
    only_deploy = Subscription(agents=["deploy-*"])
    rig = Rig(tmp_path, {"slack": [only_deploy], "email": []})
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask)
        await rig.channels["email"].delivery_seen.wait()
        await rig.answer("No", by="a@example.org", via="email")
    assert rig.channels["slack"].delivered == []
    assert isinstance(rig.outcome[0], AskUserQuestionAnswer)


async def test_escalation_asks_the_next_channel_and_its_answer_updates_both(tmp_path: Path) -> None:
    rig = Rig(tmp_path, {"slack": [Subscription(escalate_after=timedelta(minutes=30))], "email": []})
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask)
        await rig.channels["slack"].delivery_seen.wait()
        await settle(rig.clock, timedelta(minutes=29))
        assert rig.channels["email"].delivered == []
        await settle(rig.clock, timedelta(minutes=1))
        await rig.channels["email"].delivery_seen.wait()
        await rig.answer("Yes (Recommended)", by="ops@example.org", via="email")
    assert isinstance(rig.outcome[0], AskUserQuestionAnswer)
    slack_final, email_final = rig.channels["slack"].closed[0], rig.channels["email"].closed[0]
    assert (slack_final.answered_via, slack_final.answered_by) == ("email", "ops@example.org")
    assert email_final.status == "answered"
    assert "escalated" in [event.kind for event in await rig.ledger.store.history()]


async def test_after_escalation_the_first_channel_can_still_win(tmp_path: Path) -> None:
    rig = Rig(tmp_path, {"slack": [Subscription(escalate_after=timedelta(minutes=30))], "email": []})
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask)
        await rig.channels["slack"].delivery_seen.wait()
        await settle(rig.clock, timedelta(minutes=31))
        await rig.channels["email"].delivery_seen.wait()
        await rig.answer("No", by="U1", via="slack")
    assert rig.channels["email"].closed[0].answered_via == "slack"


async def test_escalation_with_nowhere_to_go_keeps_waiting(tmp_path: Path) -> None:
    rig = Rig(tmp_path, {"slack": [Subscription(escalate_after=timedelta(minutes=5))]})
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask)
        await rig.channels["slack"].delivery_seen.wait()
        await settle(rig.clock, timedelta(minutes=10))
        assert rig.outcome == []
        await rig.answer("No", by="U1", via="slack")
    assert isinstance(rig.outcome[0], AskUserQuestionAnswer)


async def test_expiry_raises_ask_timeout_and_updates_every_channel(tmp_path: Path) -> None:
    slack = Subscription(escalate_after=timedelta(minutes=30), expire_after=timedelta(hours=2))
    rig = Rig(tmp_path, {"slack": [slack], "email": []})
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask)
        await rig.channels["slack"].delivery_seen.wait()
        await settle(rig.clock, timedelta(minutes=30))
        await rig.channels["email"].delivery_seen.wait()
        await settle(rig.clock, timedelta(minutes=90))
    error = rig.outcome[0]
    assert isinstance(error, UserQuestionError)
    assert (error.code, error.message) == ("ASK_TIMEOUT", "nobody answered within 2h")
    assert [r.status for r in rig.channels["slack"].closed + rig.channels["email"].closed] == ["expired", "expired"]
    late = await rig.answer("No", by="U1", via="slack")
    assert not late.won and late.record.status == "expired"


async def test_the_agent_cancelling_retracts_and_records_the_cancellation(tmp_path: Path) -> None:
    rig = Rig(tmp_path, {"slack": []})
    controller = AbortController()
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, controller.signal)
        await rig.channels["slack"].delivery_seen.wait()
        controller.abort()
    error = rig.outcome[0]
    assert isinstance(error, UserQuestionError) and error.code == "ASK_ABORTED"
    record = await rig.ledger.store.get_question(rig.question_id())
    assert record is not None and record.status == "cancelled"
    assert [r.status for r in rig.channels["slack"].closed] == ["cancelled"]


async def test_a_failed_delivery_fails_the_ask_with_the_channels_reason(tmp_path: Path) -> None:
    rig = Rig(tmp_path, {"slack": []})
    rig.channels["slack"].fail_with = "slack: channel_not_found (#nope)"
    await rig.ask()
    error = rig.outcome[0]
    assert isinstance(error, UserQuestionError)
    assert (error.code, error.message) == ("DELIVERY_FAILED", "slack: channel_not_found (#nope)")
    record = await rig.ledger.store.get_question(rig.question_id())
    assert record is not None and record.status == "failed"


async def test_an_answer_that_does_not_fit_is_refused_and_recorded_nowhere(tmp_path: Path) -> None:
    from bot.questions.answers import AnswerError

    rig = Rig(tmp_path, {"slack": []})
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask)
        await rig.channels["slack"].delivery_seen.wait()
        with pytest.raises(AnswerError, match="not one of its options"):
            await rig.answer("Maybe", by="U1", via="slack")
        await rig.answer("No", by="U1", via="slack")
    assert isinstance(rig.outcome[0], AskUserQuestionAnswer)


async def test_a_resumed_question_is_not_delivered_twice(tmp_path: Path) -> None:
    ledger, _ = make_ledger(tmp_path)
    router = Router(["slack"], {"slack": []})
    ctx = make_context()
    channel = RecordingChannel("slack")
    install_channel(ctx, channel, router, ledger)
    from bot.store.records import QuestionRecord

    record = QuestionRecord(questions=[QUESTION], origin="api")
    await ledger.store.create_question(record)
    await ledger.store.add_delivery(record.id, "slack", "C1:1.0", {"ts": "1.0"})
    request = AskUserQuestionRequest(questions=[QUESTION])
    ledger.bind(request, record)
    result: list[AskUserQuestionAnswer] = []

    async def ask() -> None:
        assert ctx.user_questions is not None
        result.append(await ctx.user_questions.ask(request))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        await ledger.submit(
            record.id, {"deploy": AskUserQuestionAnswerItem(id="deploy", selected=["No"])}, by="U", via="slack"
        )
    assert channel.delivered == []
    assert result[0].answers[0].selected == ["No"]


async def test_an_escalation_target_that_cannot_deliver_leaves_the_question_open(tmp_path: Path) -> None:
    rig = Rig(tmp_path, {"slack": [Subscription(escalate_after=timedelta(minutes=30))], "email": []})
    rig.channels["email"].fail_with = "email: smtp.example.org:587 refused the message"
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask)
        await rig.channels["slack"].delivery_seen.wait()
        await settle(rig.clock, timedelta(minutes=30))
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and record.status == "pending"
        assert (await rig.answer("No", by="U1", via="slack")).won
    assert isinstance(rig.outcome[0], AskUserQuestionAnswer)
    failures = [event for event in await rig.ledger.store.history() if event.kind == "failed"]
    assert [(event.channel, event.detail["code"]) for event in failures] == [("slack", "DELIVERY_FAILED")]


async def test_stopping_reads_nothing_from_the_store_for_a_question_still_waiting(tmp_path: Path) -> None:
    rig = Rig(tmp_path, {"slack": []})
    reads: list[str] = []
    store = rig.ledger.store
    get_delivery = store.get_delivery

    def counted(question_id: str, channel: str) -> Any:
        reads.append(question_id)
        return get_delivery(question_id, channel)

    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask)
        await rig.channels["slack"].delivery_seen.wait()
        store.get_delivery = counted  # type: ignore[method-assign]
        rig.ledger.close()  # the program is stopping: the waits are cancelled, the question stays pending
        group.cancel_scope.cancel()
    assert reads == []  # at 10^5 pending, one read each made SIGTERM take minutes
    assert rig.channels["slack"].closed == []
    (record,) = await store.list_questions()
    assert record.status == "pending"


async def test_a_question_just_asked_is_delivered_without_looking_for_an_earlier_delivery(tmp_path: Path) -> None:
    rig = Rig(tmp_path, {"slack": []})
    store = rig.ledger.store
    looked: list[str] = []
    get_delivery = store.get_delivery

    def counted(question_id: str, channel: str) -> Any:
        looked.append(question_id)
        return get_delivery(question_id, channel)

    store.get_delivery = counted  # type: ignore[method-assign]
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask)
        await rig.channels["slack"].delivery_seen.wait()
        assert looked == []  # only a resumed question can have been shown before
        await rig.answer("No", by="U1", via="slack")
    assert len(rig.channels["slack"].delivered) == 1
