"""`bot.install`: the configured answerers on an existing Context, removed again by disposal."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import bot
from bot.program import running
from bot.settings.errors import ConfigError
from bot.store.sqlite.async_store import SqliteStore
from core import (
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    UserQuestionError,
)
from tests.core.helpers import make_context

from .fakes import RecordingChannel
from .program_rig import config_for

pytestmark = pytest.mark.anyio

QUESTION = AskUserQuestionItem(id="q1", question="Go?")


async def test_installed_answerers_take_questions_and_disposal_removes_them(tmp_path: Path) -> None:
    ctx = make_context()
    channel = RecordingChannel("web")
    handle = bot.install(ctx, config_for(tmp_path), channels=[channel])
    installation = handle.value
    assert isinstance(installation, bot.Installation)
    service = ctx.user_questions
    assert service is not None
    answers = []

    async def ask() -> None:
        answers.append(await service.ask(AskUserQuestionRequest(questions=[QUESTION])))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await channel.delivery_seen.wait()
        (record,) = await installation.store.list_questions()
        assert record.origin == "local"
        await installation.ledger.submit(
            record.id, {"q1": AskUserQuestionAnswerItem(id="q1", custom="yes")}, by="me", via="web"
        )
    assert answers[0].answers[0].custom == "yes"
    handle.dispose()
    with pytest.raises(UserQuestionError) as refused:
        await service.ask(AskUserQuestionRequest(questions=[QUESTION]))
    assert refused.value.code == "NO_PROVIDER"


def test_a_channel_this_version_cannot_run_is_a_config_error(tmp_path: Path) -> None:
    config = config_for(tmp_path).model_copy(
        update={"bot": config_for(tmp_path).bot.model_copy(update={"answerers": ["fax"]})}
    )
    with pytest.raises(ConfigError, match="fax channel is not available"):
        bot.install(make_context(), config)


async def test_the_program_runs_on_a_store_opened_before_it_and_leaves_it_open(tmp_path: Path) -> None:
    given = SqliteStore.open(tmp_path / "given.db")  # as a PostgreSQL store is opened, before anything installs
    try:
        async with running(config_for(tmp_path), channels=[RecordingChannel("web")], store=given) as program:
            assert program.installation.store is given
            record = await program.remote.ask([QUESTION], None)
        assert (await given.get_question(record.id)) is not None  # still open: the caller closes what it opened
        assert not (tmp_path / "handraise.db").exists()  # the configured file was never opened
    finally:
        await given.close()
