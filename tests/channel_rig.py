"""What the Discord, Slack, Teams and Telegram rigs share: the channel installed as the only answerer on a fresh seam (a
ledger on SQLite in the test's directory, a fake clock, one agent entered), the client's sleeps recorded instead of
waited, and asking or resuming a question in the background."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from bot.channels.base import Channel, install_channel
from bot.questions.ledger import Ledger
from bot.questions.routing import Router
from bot.settings.tables import Subscription
from bot.store.records import QuestionRecord
from core import (
    AbortSignal,
    Agent,
    AgentRegistry,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    Context,
    UserQuestionService,
)
from tests.background_ask import Asked, ask_in_background
from tests.bot.fakes import make_ledger, sync_store
from tests.fake_clock import FakeClock


@dataclass
class Waits:
    """The client's sleeps, recorded instead of waited (a retry_after of 30 s takes no time in a test)."""

    seconds: list[float] = field(default_factory=list[float])

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        await anyio.lowlevel.checkpoint()


def install_on_a_seam(
    channel: Channel, kind: str, subscriptions: Sequence[Subscription], tmp_path: Path, agent: Agent
) -> tuple[Ledger, FakeClock, Context]:
    """`channel` as the only answerer of a fresh seam whose ledger keeps `tmp_path/handraise.db` (the same path
    twice: a restart), with `agent` entered."""
    ledger, clock = make_ledger(tmp_path)
    ctx = Context()
    ctx.plugin(AgentRegistry)
    ctx.plugin(UserQuestionService)
    install_channel(ctx, channel, Router([kind], {kind: subscriptions}), ledger)
    assert ctx.agents is not None
    ctx.agents.enter(agent)
    return ledger, clock, ctx


@dataclass
class ChannelRig:
    """A channel on its seam, asked through the seam in `tasks` as an agent would."""

    ledger: Ledger
    clock: FakeClock
    ctx: Context
    agent: Agent
    tasks: TaskGroup

    def ask(
        self, *questions: AskUserQuestionItem, agent: Agent | bool | None = True, signal: AbortSignal | None = None
    ) -> Asked:
        """Ask as the rig's agent (`True`), as no agent (`False` or `None`), or as `agent`."""
        chosen = self.agent if agent is True else None if agent is False else agent
        request = AskUserQuestionRequest(questions=list(questions), agent=chosen, signal=signal)
        return ask_in_background(self.tasks, self.ctx, request)

    def resume(self, record: QuestionRecord) -> Asked:
        """Wait again for a pending question from the store, as `serve` does after a restart for API questions."""
        agent = self.agent if record.agent is not None and record.agent.id == self.agent.id else None
        request = AskUserQuestionRequest(questions=record.questions, agent=agent)
        self.ledger.bind(request, record)
        return ask_in_background(self.tasks, self.ctx, request)

    def question_id(self) -> str:
        """The newest question's id."""
        return sync_store(self.ledger.store).list_questions(limit=1)[0].id

    async def until(self, predicate: Any, seconds: float = 5) -> None:
        """Wait until `predicate()` holds: a channel finishes its work after the request that brought it was
        acknowledged, or first polls for it."""
        with anyio.fail_after(seconds):
            while not predicate():
                await anyio.sleep(0.005)
