"""What becomes of a posted question's message: the outcome in its place once the question ends, approval progress
under its buttons, reminders in its thread."""

from __future__ import annotations

from bot.channels.base import Channel
from bot.questions.routing import Route
from bot.slack import ids
from bot.slack.render import approval_progress, render_outcome, render_question, render_reminder
from bot.slack.settings import SlackSubscription
from bot.slack.transport import SlackTransport
from bot.store.records import Delivery, QuestionRecord


class FollowUps:
    """Updates and answers `channel`'s posted questions as the base asks."""

    def __init__(self, channel: Channel, transport: SlackTransport) -> None:
        self.channel = channel
        self.transport = transport

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        """Replace the question's message with its outcome (answered by whom, cancelled, expired)."""
        ref = ids.SlackRef.model_validate(delivery.ref)
        await self.transport.update_message(ref.channel, ref.ts, render_outcome(question))

    async def remind(self, question: QuestionRecord, delivery: Delivery, route: Route) -> None:
        """Post a reminder in the question's thread, mentioning the responders (else the route's mentions)."""
        ref = ids.SlackRef.model_validate(delivery.ref)
        subscription = route.subscription
        mentions = list(route.responders) or (
            subscription.mention if isinstance(subscription, SlackSubscription) else []
        )
        await self.transport.post_message(
            ref.channel, render_reminder(question, mentions, question.reminders), thread_ts=ref.thread[1]
        )

    async def show_progress(self, question: QuestionRecord, delivery: Delivery, needed: int) -> None:
        """Keep the buttons and add how many have approved, so the next approver sees who already did."""
        ref = ids.SlackRef.model_validate(delivery.ref)
        route = self.channel.replies.router.route(self.channel.name, question.agent)
        mentions = route.subscription.mention if route and isinstance(route.subscription, SlackSubscription) else []
        note = f":ballot_box_with_check: {approval_progress(question, needed)}"
        await self.transport.update_message(
            ref.channel, ref.ts, render_question(question, mentions=mentions, note=note)
        )
