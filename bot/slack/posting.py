"""Posting a question in Slack: in its agent's thread, a channel or a DM, finished even when the agent cancels, and a
refusal from Slack turned into advice on what to fix."""

from __future__ import annotations

import anyio

from bot.channels.base import Channel, DeliveryError, Sent
from bot.questions.routing import Route
from bot.slack import ids
from bot.slack.metadata import question_metadata
from bot.slack.render import RenderError, SlackMessage, render_question
from bot.slack.settings import SlackSettings, SlackSubscription
from bot.slack.threads import Place, Threads
from bot.slack.transport import SlackCallError, SlackTransport
from bot.store.records import QuestionRecord

ADVICE = {
    "channel_not_found": "check the channel id or name; for a private channel, invite the app first",
    "not_in_channel": "invite the app to the channel (/invite @handraise)",
    "is_archived": "the channel is archived; route the questions elsewhere",
    "invalid_auth": "check the bot token (xoxb-…) in {token_env}",
    "not_authed": "check the bot token (xoxb-…) in {token_env}",
    "token_revoked": "the bot token was revoked; reinstall the app and update {token_env}",
    "account_inactive": "the bot token was revoked; reinstall the app and update {token_env}",
    "missing_scope": "add the chat:write and im:write scopes and reinstall the app",
    "user_not_found": "check the user id in [[slack.subscriptions]]",
    "ratelimited": "Slack kept rate-limiting the bot; try again shortly",
    "connection_failed": "cannot reach Slack at {api_url}",
    "timeout": "Slack at {api_url} did not answer in time",
}


async def conversation(
    transport: SlackTransport, subscription: SlackSubscription, place: Place
) -> tuple[str, str | None]:
    """The conversation and thread to post in: the agent's thread once it has one, else the destination (for a
    `user`, the direct messages opened with them)."""
    channel = await transport.open_dm(place.destination) if subscription.user else place.destination
    return place.root if place.root is not None else (channel, None)


class QuestionPoster:
    """Posts `channel`'s questions, one at a time per agent (`Threads.place`), so an agent's questions share one
    thread."""

    def __init__(self, channel: Channel, settings: SlackSettings, transport: SlackTransport, threads: Threads) -> None:
        self.channel = channel
        self.settings = settings
        self.transport = transport
        self.threads = threads

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        """Post `question` where the route's subscription says. Raises DeliveryError, with advice, when Slack
        refuses or the question cannot be shown."""
        subscription = route.subscription
        if not isinstance(subscription, SlackSubscription):
            raise DeliveryError(
                "slack: no [[slack.subscriptions]] entry names where to ask; "
                'add one with channel = "#channel" or user = "U…"'
            )
        try:
            message = render_question(question, mentions=subscription.mention)
        except RenderError as problem:
            raise DeliveryError(f"slack: cannot show question {question.id}: {problem}") from problem
        async with self.threads.place(self.channel.ledger, question, subscription) as place:
            try:
                target, thread_ts = await conversation(self.transport, subscription, place)
                posted, ts = await self._post_to_the_end(target, message, thread_ts, question.id)
            except SlackCallError as failure:
                advice = ADVICE.get(failure.slack_error, "see Slack's documentation of this error").format(
                    token_env=self.settings.bot_token_env, api_url=self.settings.api_url
                )
                problem = f"{failure.slack_error} — {advice}"
                raise DeliveryError(f"slack: cannot post to {place.destination}: {problem}") from failure
            ref = ids.SlackRef(channel=posted, ts=ts, thread_ts=thread_ts, destination=place.destination)
            self.threads.posted(question.id, place.agent, ref)
        return Sent(key=ref.key, ref=ref)

    async def _post_to_the_end(
        self, channel: str, message: SlackMessage, thread_ts: str | None, question_id: str
    ) -> tuple[str, str]:
        # A post cut short by the agent cancelling would leave a message nobody can retract: finish it (the
        # transport bounds it), so that the base records the delivery and then shows it cancelled.
        result: tuple[str, str] | None = None
        with anyio.CancelScope(shield=True):
            metadata = question_metadata(question_id)
            result = await self.transport.post_message(channel, message, thread_ts=thread_ts, metadata=metadata)
        assert result is not None
        return result
