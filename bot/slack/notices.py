"""What a person is told privately about their reply (an ephemeral message only they see), when the update of the
question's message does not say it already."""

from __future__ import annotations

import logging

from bot.channels.replies import Accepted, Ended, NotAllowed, Outcome, Unmatched, Unreadable
from bot.slack.render import approval_progress, refusal_notice, resolved_notice
from bot.slack.transport import SlackCallError, SlackTransport

log = logging.getLogger(__name__)

CLOSED = "This question is no longer open in handraise."


def notice(outcome: Outcome) -> str | None:
    """What the person is told privately about their reply; None when the message update says it all."""
    if isinstance(outcome, Unmatched):
        return outcome.notice
    if isinstance(outcome, Ended):
        return resolved_notice(outcome.record) if outcome.record else CLOSED
    if isinstance(outcome, NotAllowed):
        return refusal_notice(outcome.responders)
    if isinstance(outcome, Unreadable):
        return outcome.reason
    if isinstance(outcome, Accepted) and not outcome.complete and outcome.needed > 1:
        lead = "You had already approved this" if outcome.repeated else "Your approval is recorded"
        return f"{lead}: {approval_progress(outcome.record, outcome.needed)}."
    return None


class Notices:
    """Sends private notices through `transport`; one that Slack refuses is logged, since the reply itself stands."""

    def __init__(self, transport: SlackTransport) -> None:
        self.transport = transport

    async def tell(self, channel: str, user: str, text: str, thread_ts: str | None) -> None:
        try:
            await self.transport.post_ephemeral(channel, user, text, thread_ts=thread_ts)
        except SlackCallError as failure:
            log.warning("slack: could not tell %s in %s: %s", user, channel, failure)

    async def show(self, outcome: Outcome, channel: str, user: str, thread_ts: str | None) -> None:
        """Tell `user` the outcome of their reply, when there is anything to tell (`notice`)."""
        if (text := notice(outcome)) is not None:
            await self.tell(channel, user, text, thread_ts)
