"""`Ledger.current` and `Ledger.delivered`: a question held here is not read back while this process alone writes the
store; with a change feed (other replicas write it too), or once the ledger is closing, it is read from the store,
a reply's delivery and its question in one read."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.questions.ledger import Ledger
from bot.store.records import QuestionRecord
from core import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionRequest

from .fakes import make_ledger

pytestmark = pytest.mark.anyio

ITEM = AskUserQuestionItem.model_validate(
    {"id": "go", "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}
)
YES = AskUserQuestionAnswerItem(id="go", selected=["Yes"])


async def held(tmp_path: Path) -> tuple[Ledger, QuestionRecord]:
    ledger, _ = make_ledger(tmp_path)
    pending = await ledger.hold(AskUserQuestionRequest(questions=[ITEM]))
    return ledger, pending.record


async def answered_elsewhere(ledger: Ledger, record: QuestionRecord) -> None:
    """What another replica's answer does: the store changes, this ledger is not told."""
    answer = AskUserQuestionAnswer(answers=[YES])
    await ledger.store.resolve(record.id, "answered", answer=answer, by="someone-else", via="slack")


async def test_alone_a_held_question_is_not_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, record = await held(tmp_path)

    async def no_read(id: str) -> QuestionRecord | None:
        raise AssertionError("the store was read")

    monkeypatch.setattr(ledger.store, "get_question", no_read)
    assert await ledger.current(record.id) == record


async def test_alone_a_held_question_reads_as_this_ledgers_last_change(tmp_path: Path) -> None:
    ledger, record = await held(tmp_path)
    await ledger.submit(record.id, {"go": YES}, by="alice", via="web")
    current = await ledger.current(record.id)
    assert current is not None and (current.status, current.answered_by) == ("answered", "alice")
    assert current == await ledger.store.get_question(record.id)


async def test_with_a_change_feed_a_held_question_is_read_from_the_store(tmp_path: Path) -> None:
    ledger, record = await held(tmp_path)
    ledger.following = True
    await answered_elsewhere(ledger, record)
    current = await ledger.current(record.id)
    assert current is not None and current.answered_by == "someone-else"


async def test_once_closing_a_held_question_is_read_from_the_store(tmp_path: Path) -> None:
    ledger, record = await held(tmp_path)
    await answered_elsewhere(ledger, record)
    ledger.close()
    current = await ledger.current(record.id)
    assert current is not None and current.answered_by == "someone-else"


async def test_a_question_not_held_is_read_from_the_store_and_an_unknown_one_is_none(tmp_path: Path) -> None:
    ledger, _ = make_ledger(tmp_path)
    record = QuestionRecord(questions=[ITEM], origin="api")
    await ledger.store.create_question(record)
    assert await ledger.current(record.id) == record
    assert await ledger.current("q_nothing") is None


async def no_read(*args: object) -> None:
    raise AssertionError("the store was read")


async def test_alone_a_reply_to_a_held_question_reads_only_its_delivery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, record = await held(tmp_path)
    delivery = await ledger.store.add_delivery(record.id, "web", record.id, {})
    monkeypatch.setattr(ledger.store, "get_question", no_read)
    monkeypatch.setattr(ledger.store, "find_delivery_with_question", no_read)
    assert await ledger.delivered("web", record.id) == (record, delivery)


async def test_with_a_change_feed_a_reply_reads_its_delivery_and_question_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, record = await held(tmp_path)
    delivery = await ledger.store.add_delivery(record.id, "web", record.id, {})
    ledger.following = True
    await answered_elsewhere(ledger, record)
    monkeypatch.setattr(ledger.store, "get_question", no_read)
    monkeypatch.setattr(ledger.store, "find_delivery", no_read)
    found = await ledger.delivered("web", record.id)
    assert found is not None and (found[0].answered_by, found[1]) == ("someone-else", delivery)


async def test_once_closing_a_reply_reads_the_question_from_the_store(tmp_path: Path) -> None:
    ledger, record = await held(tmp_path)
    await ledger.store.add_delivery(record.id, "web", record.id, {})
    await answered_elsewhere(ledger, record)
    ledger.close()
    found = await ledger.delivered("web", record.id)
    assert found is not None and found[0].answered_by == "someone-else"


@pytest.mark.parametrize("following", [False, True], ids=["alone", "with a feed"])
async def test_a_reply_to_no_delivery_finds_nothing(tmp_path: Path, following: bool) -> None:
    ledger, record = await held(tmp_path)
    await ledger.store.add_delivery(record.id, "web", record.id, {})
    ledger.following = following
    assert await ledger.delivered("web", "q_nothing") is None
    assert await ledger.delivered("slack", record.id) is None


async def test_alone_a_reply_to_a_question_not_held_reads_it_from_the_store(tmp_path: Path) -> None:
    ledger, _ = make_ledger(tmp_path)
    record = QuestionRecord(questions=[ITEM], origin="api")
    await ledger.store.create_question(record)
    delivery = await ledger.store.add_delivery(record.id, "email", "token", {})
    assert await ledger.delivered("email", "token") == (record, delivery)
