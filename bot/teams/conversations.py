"""The conversations the bot has been added to, as Teams told it (installation and conversation updates, and any
activity from a conversation not seen before), kept in a small JSON file so that `handraise teams conversations`
can list them with the ids to paste into `[[teams.subscriptions]]`."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from bot.teams.parse import thread_root
from bot.teams.settings import TeamsSettings

log = logging.getLogger(__name__)

MAX_KEPT = 1_000


class Conversation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    conversation: str
    service_url: str
    kind: str = ""
    team: str = ""
    channel: str = ""
    tenant: str = ""


def seen_in(activity: Mapping[str, Any]) -> Conversation | None:
    """The conversation an activity comes from (the channel, not a thread in it), or None when it names none."""
    conversation = activity.get("conversation")
    service_url = activity.get("serviceUrl")
    if not isinstance(conversation, dict) or not isinstance(service_url, str):
        return None
    raw_id = conversation.get("id")
    if not isinstance(raw_id, str) or not raw_id or len(raw_id) > 400:
        return None
    data = activity.get("channelData")
    data = data if isinstance(data, dict) else {}
    team, channel, tenant = data.get("team"), data.get("channel"), data.get("tenant")
    return Conversation(
        conversation=thread_root(raw_id)[0],
        service_url=service_url[:400],
        kind=str(conversation.get("conversationType") or "")[:40],
        team=str(team.get("name") or "")[:200] if isinstance(team, dict) else "",
        channel=str(channel.get("name") or "")[:200] if isinstance(channel, dict) else "",
        tenant=str(tenant.get("id") or "")[:100] if isinstance(tenant, dict) else "",
    )


class ConversationBook:
    """The conversations seen, by id, read from and written to `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._known: dict[str, Conversation] | None = None

    def knows(self, conversation: Conversation) -> bool:
        """Whether `conversation` is kept as it is (False before the file is read: then `note` reads it)."""
        return self._known is not None and self._known.get(conversation.conversation) == conversation

    def all(self) -> list[Conversation]:
        return list(self._load().values())

    def note(self, conversation: Conversation) -> bool:
        """Keep `conversation`; True when it is new or changed (then the file is rewritten)."""
        known = self._load()
        if known.get(conversation.conversation) == conversation or len(known) >= MAX_KEPT:
            return False
        known[conversation.conversation] = conversation
        temporary = self.path.with_name(self.path.name + ".tmp")
        try:
            temporary.write_text(json.dumps([c.model_dump() for c in known.values()], indent=1))
            os.replace(temporary, self.path)
        except OSError as failure:
            log.warning("teams: cannot keep the conversations seen in %s: %s", self.path, failure)
        return True

    def _load(self) -> dict[str, Conversation]:
        if self._known is None:
            self._known = {}
            try:
                entries = json.loads(self.path.read_text())
            except (OSError, ValueError):
                entries = []
            for entry in entries if isinstance(entries, list) else []:
                try:
                    conversation = Conversation.model_validate(entry)
                except ValidationError:
                    continue
                self._known[conversation.conversation] = conversation
        return self._known


def print_conversations(settings: TeamsSettings, argv: list[str]) -> int:
    """`handraise teams conversations`: what serve has seen, as subscriptions to paste."""
    if argv:
        print(f"handraise teams conversations: unexpected {' '.join(argv)!r}", file=sys.stderr)
        return 2
    print(listing(ConversationBook(Path(settings.conversations_file)).all()))
    return 0


def listing(conversations: list[Conversation]) -> str:
    """What `handraise teams conversations` prints: each conversation as a subscription to paste."""
    if not conversations:
        return (
            "No Teams conversation seen yet. Add the app to a team (docs/teams-setup.md), with `handraise serve` "
            "running so that Teams' install message reaches it, then run this again."
        )
    lines: list[str] = []
    for seen in conversations:
        where = " / ".join(part for part in (seen.team, seen.channel) if part) or seen.kind or "a conversation"
        lines += [
            f"# {where}",
            "[[teams.subscriptions]]",
            f"conversation = {json.dumps(seen.conversation)}",
            f"service_url = {json.dumps(seen.service_url)}",
            "",
        ]
    return "\n".join(lines).rstrip()
