"""A status note: an agent saying it has finished, or that it waits for someone, with nothing to answer.

Coding agents say so from their own hooks (`handraise hook claude --notify`, Codex's `notify`), so that the people who
answer an agent's questions also see where it stands, in the same place. A note is routed as the agent's questions are
and shown by the channels that can (`bot.channels.base.Channel.post_note`); it is never stored, audited or answered.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from bot.store.records import AgentRef

NoteEvent = Literal["finished", "waiting"]

WORDS: dict[NoteEvent, str] = {"finished": "finished", "waiting": "waiting for you"}
"""What each event says, after the agent's name."""


class StatusNote(BaseModel):
    """`POST /v1/notes`: who says it (the same `agent` its questions carry, so that it is routed alike), what
    happened, and an optional short `text` (Claude Code's notification, Codex's last message) shown under it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: AgentRef
    event: NoteEvent
    text: str | None = None

    @property
    def who(self) -> str:
        """The agent's name and its project (its `project` label) when that says something more: "deploy-bot ·
        billing-api"."""
        name = self.agent.name or self.agent.id
        project = self.agent.labels.get("project", "")
        return f"{name} · {project}" if project and project != name else name

    @property
    def headline(self) -> str:
        """The note's first line, as agent-written text (each channel escapes it): "deploy-bot · billing-api:
        finished"."""
        return f"{self.who}: {WORDS[self.event]}"

    @property
    def detail(self) -> str | None:
        """The agent's own words under the headline, None when it sent none worth showing."""
        text = (self.text or "").strip()
        return text or None
