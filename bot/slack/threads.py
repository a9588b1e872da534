"""Which questions live in which Slack thread: an agent's thread to post the next question in, and the questions
still open in a thread that a reply may be answering. Read from the store after a restart, kept in memory after."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from bot.channels.agent_places import AgentPlaces
from bot.questions.ledger import Ledger
from bot.slack.ids import SlackRef
from bot.slack.settings import SlackSubscription
from bot.store.records import Delivery, QuestionRecord

OPEN_QUESTIONS_SCANNED = 1_000_000

Found = tuple[QuestionRecord, Delivery, SlackRef]


@dataclass(frozen=True)
class Place:
    """Where a question goes: `destination` as configured (`#deploys`, `C…`, or a user `U…`), the agent whose thread
    it joins (`thread = "agent"`; None: a thread of its own), and that thread's (conversation, ts) once it has one."""

    destination: str
    agent: str | None
    root: tuple[str, str] | None


class Threads:
    """The Slack channel's memory of threads; `channel` is its name in the store."""

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self.agents = AgentPlaces(channel, _thread_at)
        self._open: dict[tuple[str, str], set[str]] | None = None

    async def agent_thread(
        self, ledger: Ledger, question_id: str, agent: str, destination: str
    ) -> tuple[str, str] | None:
        """The (conversation, thread ts) of `agent`'s earlier question at `destination`, if there is one."""
        return await self.agents.find(ledger, agent, destination, besides=question_id)

    @asynccontextmanager
    async def place(
        self, ledger: Ledger, question: QuestionRecord, subscription: SlackSubscription
    ) -> AsyncIterator[Place]:
        """Where `question` goes, held under its agent's lock until it is posted (or found posted): two questions of
        one agent never start two threads."""
        destination = subscription.channel or subscription.user or ""
        agent = question.agent.id if question.agent is not None and subscription.thread == "agent" else None
        async with self.agents.lock(agent, destination):
            root = await self.agent_thread(ledger, question.id, agent, destination) if agent else None
            yield Place(destination, agent, root)

    def posted(self, question_id: str, agent: str | None, ref: SlackRef) -> None:
        """Remember a question just posted: the agent's thread, and one more question open in it."""
        if agent is not None:
            self.agents.remember(agent, ref.destination, ref.thread)
        if self._open is not None:
            self._open.setdefault(ref.thread, set()).add(question_id)

    async def open_in(self, ledger: Ledger, channel: str, thread_ts: str) -> list[Found]:
        """The pending questions in one thread, oldest first; a reply in some unrelated thread costs a lookup."""
        store = ledger.store
        index = await self._index(ledger)
        found: list[Found] = []
        where = (channel, thread_ts)
        for question_id in sorted(index.get(where, ())):
            record = await store.get_question(question_id)
            delivery = await store.get_delivery(question_id, self.channel)
            if record is None or delivery is None or record.status != "pending":
                index.get(where, set()).discard(question_id)  # another reply may have emptied it meanwhile
            else:
                found.append((record, delivery, SlackRef.model_validate(delivery.ref)))
        if not index.get(where):
            index.pop(where, None)
        found.sort(key=lambda entry: (entry[0].created_at, entry[2].ts))
        return found

    async def open_in_conversation(self, ledger: Ledger, channel: str) -> list[Found]:
        """The pending questions anywhere in one conversation (a DM, where people reply without opening the thread)."""
        threads = [thread for (conversation, thread) in list(await self._index(ledger)) if conversation == channel]
        found = [entry for thread in threads for entry in await self.open_in(ledger, channel, thread)]
        return sorted(found, key=lambda entry: (entry[0].created_at, entry[2].ts))

    async def _index(self, ledger: Ledger) -> dict[tuple[str, str], set[str]]:
        if self._open is None:
            store = ledger.store
            index: dict[tuple[str, str], set[str]] = {}
            pending = await store.list_questions(status="pending", channel=self.channel, limit=OPEN_QUESTIONS_SCANNED)
            for record in pending:
                delivery = await store.get_delivery(record.id, self.channel)
                if delivery is not None:
                    index.setdefault(SlackRef.model_validate(delivery.ref).thread, set()).add(record.id)
            if self._open is None:  # else a concurrent reply built it first, and posts since went there
                self._open = index
        return self._open


def _thread_at(ref: dict[str, Any], destination: str) -> tuple[str, str] | None:
    slack = SlackRef.model_validate(ref)
    return slack.thread if slack.destination == destination else None
