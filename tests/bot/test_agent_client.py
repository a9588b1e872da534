"""`HandraiseClient`: Python agents in other processes ask a running serve, sync and async, with the seam's codes."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from bot.clients.agent import HandraiseClient
from core import AskUserQuestionAnswer, UserQuestionError
from tests.claude.rig import answer_in_inbox, pending_question, serve_with_inbox, status_of

from .program_rig import free_port

pytestmark = pytest.mark.anyio

GO = [{"id": "go", "question": "Deploy v2?", "options": [{"label": "Yes"}, {"label": "No"}]}]
AGENT = {"id": "deploy-7", "name": "deployer", "labels": {"team": "infra"}}


async def test_ask_async_returns_the_answer_given_in_the_inbox(tmp_path: Path) -> None:
    answers: list[AskUserQuestionAnswer] = []
    async with serve_with_inbox(tmp_path) as program, anyio.create_task_group() as group:
        client = HandraiseClient(program.base_url, agent=AGENT, poll_seconds=1)

        async def ask() -> None:
            answers.append(await client.ask_async(GO))

        group.start_soon(ask)
        record = await pending_question(program)
        assert record.agent is not None and record.agent.labels == {"team": "infra"}
        await answer_in_inbox(program, record.id, [("q0", "1")])
    assert answers[0].answers[0].selected == ["No"]


async def test_ask_blocks_in_plain_code_until_the_answer(tmp_path: Path) -> None:
    answers: list[AskUserQuestionAnswer] = []
    async with serve_with_inbox(tmp_path) as program, anyio.create_task_group() as group:
        client = HandraiseClient(program.base_url, poll_seconds=1)

        async def ask() -> None:
            answers.append(await anyio.to_thread.run_sync(lambda: client.ask(GO)))

        group.start_soon(ask)
        record = await pending_question(program)
        await answer_in_inbox(program, record.id, [("q0", "0")])
    assert answers[0].answers[0].selected == ["Yes"]


async def test_a_sync_timeout_cancels_the_question_and_raises_ask_timeout(tmp_path: Path) -> None:
    async with serve_with_inbox(tmp_path) as program:
        client = HandraiseClient(program.base_url, poll_seconds=1)
        with pytest.raises(UserQuestionError) as raised:
            await anyio.to_thread.run_sync(lambda: client.ask(GO, timeout=0.5))
        (record,) = await program.installation.store.list_questions()
        assert status_of(program, record.id) == "cancelled"
    assert raised.value.code == "ASK_TIMEOUT"


async def test_cancelling_ask_async_cancels_the_question(tmp_path: Path) -> None:
    async with serve_with_inbox(tmp_path) as program:
        client = HandraiseClient(program.base_url, poll_seconds=1)
        with anyio.move_on_after(0.5):
            await client.ask_async(GO)
        (record,) = await program.installation.store.list_questions()
        assert status_of(program, record.id) == "cancelled"


async def test_a_question_cancelled_elsewhere_raises_ask_cancelled(tmp_path: Path) -> None:
    errors: list[UserQuestionError] = []
    async with serve_with_inbox(tmp_path) as program, anyio.create_task_group() as group:
        client = HandraiseClient(program.base_url, poll_seconds=1)

        async def ask() -> None:
            with pytest.raises(UserQuestionError) as raised:
                await client.ask_async(GO)
            errors.append(raised.value)

        group.start_soon(ask)
        await program.remote.cancel((await pending_question(program)).id)
    assert (errors[0].code, errors[0].message) == ("ASK_CANCELLED", "the question was cancelled")


@pytest.mark.parametrize(
    ("extra", "questions", "code"),
    [
        ('[[web.subscriptions]]\nagents = ["other-*"]\n', GO, "NO_PROVIDER"),
        ("", [], "EMPTY_QUESTIONS"),
    ],
    ids=["no route", "no questions"],
)
async def test_refusals_raise_the_seam_code(
    tmp_path: Path, extra: str, questions: list[dict[str, object]], code: str
) -> None:
    async with serve_with_inbox(tmp_path, extra) as program:
        with pytest.raises(UserQuestionError) as raised:
            await HandraiseClient(program.base_url, agent=AGENT).ask_async(questions)
    assert raised.value.code == code


async def test_no_server_raises_unreachable() -> None:
    with pytest.raises(UserQuestionError) as raised:
        await HandraiseClient(f"http://127.0.0.1:{free_port()}").ask_async(GO)
    assert raised.value.code == "UNREACHABLE"
    assert "is `handraise serve` running?" in raised.value.message


@pytest.mark.parametrize("question", [{"id": "a"}, "not a question"], ids=["no text", "not a mapping"])
async def test_a_malformed_question_raises_bad_request_before_asking(question: object) -> None:
    # Nothing listens there: a malformed question must be refused before any call is made.
    with pytest.raises(UserQuestionError) as raised:
        await HandraiseClient(f"http://127.0.0.1:{free_port()}").ask_async([question])  # type: ignore[list-item]
    assert raised.value.code == "BAD_REQUEST"
