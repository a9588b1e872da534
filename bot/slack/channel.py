"""The Slack channel: posts questions, turns clicks, modals and thread replies into answers, and shows the outcome.

Interactions arrive through a slack-bolt `AsyncApp`, over HTTP (`add_routes` mounts `/slack/events`; bolt verifies
the signature) or Socket Mode (`run`). Each handler acknowledges first, within Slack's 3 seconds, and then does its
work: it reads the event, hands the reply to the shared base (which checks who may answer, records it, and lets the
first answer win) and shows the person the outcome privately. The base updates the message once the question ends.

Slack delivers an event again when its acknowledgement was slow (same `event_id`, `X-Slack-Retry-Num`), possibly after
a restart and after the agent has asked its next question in the same thread. So an event is acted on once (its id is
kept in the store), and a thread reply only ever answers a question posted before it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from bot.channels.base import Channel, DeliveryError, Sent
from bot.channels.replies import Accepted, Answer, Ended, NotAllowed, Noted, Outcome, Unreadable
from bot.questions.routing import Route
from bot.settings.secrets import resolve_secret
from bot.slack import ids
from bot.slack.http import events_handler
from bot.slack.metadata import posted_question, question_metadata
from bot.slack.modal import render_answer_modal, render_notice_view
from bot.slack.parse import Answer as Chosen
from bot.slack.parse import (
    Interaction,
    OpenModal,
    ParseError,
    ReplyError,
    ViewErrors,
    decide,
    parse_thread_reply,
    posted_after,
    read_block_actions,
    read_modal_answer,
    read_view_ref,
)
from bot.slack.render import (
    RenderError,
    SlackMessage,
    approval_progress,
    refusal_notice,
    render_outcome,
    render_question,
    render_reminder,
    render_waiting,
    resolved_notice,
)
from bot.slack.settings import SlackSettings, SlackSubscription
from bot.slack.targets import message_link, targets
from bot.slack.threads import Place, Threads
from bot.slack.transport import SlackCallError, SlackTransport, make_client
from bot.store.records import Delivery, QuestionRecord

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
COMMAND = "/handraise"
"""The slash command that lists the questions waiting for the person who types it."""
WAITING_SCANNED = 200
LOOKUP_MARGIN_SECONDS = 300
"""How far before a question's creation its lost post is looked for (clocks differ between replicas and Slack)."""
AUTHORISE_SECONDS = 2
"""How long a user-group lookup may take before the click is refused (Slack wants an ack within 3 s)."""

CLOSED = "This question is no longer open in handraise."

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


class SlackChannel(Channel):
    """Asks in Slack. Give `client` (and `signing_secret` / `app_token`) to run against a test double; otherwise
    the tokens come from the environment variables the settings name (ConfigError when one is unset)."""

    name = "slack"

    def __init__(
        self,
        settings: SlackSettings,
        *,
        client: AsyncWebClient | None = None,
        signing_secret: str | None = None,
        app_token: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        http = settings.mode == "http"
        if client is None:
            client = make_client(resolve_secret(settings.bot_token_env, environ), settings.api_url)
        if http and signing_secret is None and settings.signing_secret_env is not None:
            signing_secret = resolve_secret(settings.signing_secret_env, environ)
        if not http and app_token is None and settings.app_token_env is not None:
            app_token = resolve_secret(settings.app_token_env, environ)
        self.app_token = app_token
        self.transport = SlackTransport(client)
        # Signatures are checked on every HTTP request; Socket Mode connections are authenticated by the app token.
        self.app = AsyncApp(
            name="handraise",
            client=client,
            signing_secret=signing_secret or "",
            request_verification_enabled=http,
            ssl_check_enabled=http,
        )
        self.app.action(ids.ACTION_PATTERN)(self._on_action)
        self.app.view(ids.MODAL_CALLBACK)(self._on_view)
        self.app.event("message")(self._on_message)
        self.app.command(COMMAND)(self._on_command)
        self.threads = Threads(self.name)

    # --- the shared base's side ----------------------------------------------------------------------------------

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
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
        async with self.threads.place(self.ledger, question, subscription) as place:
            try:
                target, thread_ts = await self._conversation(subscription, place)
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

    async def find_sent(self, question: QuestionRecord, route: Route) -> Sent | None:
        """The question's message when an earlier `deliver` posted it, found by its metadata in the conversation's
        history since shortly before the question was asked. None (so it is posted again, with one warning) when
        the app may not read the history (channels:history, groups:history, im:history) or Slack fails."""
        subscription = route.subscription
        if not isinstance(subscription, SlackSubscription):
            return None
        async with self.threads.place(self.ledger, question, subscription) as place:
            try:
                target, thread_ts = await self._conversation(subscription, place)
                if target.startswith("#"):
                    raise SlackCallError("conversations.history", "channel_named", "give the channel's id (C…)")
                oldest = question.created_at.timestamp() - LOOKUP_MARGIN_SECONDS
                messages = await self.transport.history(target, oldest=oldest, thread_ts=thread_ts)
                ts = posted_question(messages, question.id, await self.transport.bot_id())
            except SlackCallError as failure:
                log.warning(
                    "slack: cannot look for question %s's earlier post at %s: %s",
                    question.id,
                    place.destination,
                    failure,
                )
                return None
            if ts is None:
                return None
            ref = ids.SlackRef(channel=target, ts=ts, thread_ts=thread_ts, destination=place.destination)
            self.threads.posted(question.id, place.agent, ref)
        return Sent(key=ref.key, ref=ref)

    async def _conversation(self, subscription: SlackSubscription, place: Place) -> tuple[str, str | None]:
        """The conversation and thread to post in: the agent's thread once it has one, else the destination (for a
        `user`, the direct messages opened with them)."""
        channel = await self.transport.open_dm(place.destination) if subscription.user else place.destination
        return place.root if place.root is not None else (channel, None)

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

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
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
        route = self.replies.router.route(self.name, question.agent)
        mentions = route.subscription.mention if route and isinstance(route.subscription, SlackSubscription) else []
        note = f":ballot_box_with_check: {approval_progress(question, needed)}"
        await self.transport.update_message(
            ref.channel, ref.ts, render_question(question, mentions=mentions, note=note)
        )

    async def identity(self, person: str) -> str:
        """The user's email address when the app may read it (users:read.email), so that approving in Slack and
        by email counts once; else the user id."""
        return await self.transport.user_email(person) or person

    async def members(self, entry: str) -> frozenset[str] | None:
        """A user group's members (`S…` responders); an unreadable group holds nobody, so the reply is refused."""
        if not entry.startswith("S"):
            return None
        try:
            with anyio.fail_after(AUTHORISE_SECONDS):
                return await self.transport.group_members(entry)
        except (SlackCallError, TimeoutError) as failure:
            log.warning("slack: cannot read user group %s (%s); refusing its members for now", entry, failure)
            return frozenset()

    async def run(self) -> None:
        """In Socket Mode, hold the websocket open for as long as the channel runs; in HTTP mode, nothing."""
        if self.settings.mode != "socket":
            return
        from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

        handler = AsyncSocketModeHandler(self.app, self.app_token, web_client=self.transport.client)
        await handler.connect_async()
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await handler.close_async()

    def add_routes(self, app: web.Application) -> None:
        """Serve Slack's events and interactivity requests at `/slack/events` (HTTP mode)."""
        app.router.add_post(EVENTS_PATH, events_handler(self.app))

    # --- showing the outcome ---------------------------------------------------------------------------------------

    async def _tell(self, channel: str, user: str, text: str, thread_ts: str | None) -> None:
        try:
            await self.transport.post_ephemeral(channel, user, text, thread_ts=thread_ts)
        except SlackCallError as failure:
            log.warning("slack: could not tell %s in %s: %s", user, channel, failure)

    @staticmethod
    def notice(outcome: Outcome) -> str | None:
        """What the person is told privately about their reply; None when the message update says it all."""
        if isinstance(outcome, Ended):
            return (
                resolved_notice(outcome.record) if outcome.record else "This question is no longer open in handraise."
            )
        if isinstance(outcome, NotAllowed):
            return refusal_notice(outcome.responders)
        if isinstance(outcome, Unreadable):
            return outcome.reason
        if isinstance(outcome, Accepted) and not outcome.complete and outcome.needed > 1:
            lead = "You had already approved this" if outcome.repeated else "Your approval is recorded"
            return f"{lead}: {approval_progress(outcome.record, outcome.needed)}."
        return None

    async def _show(self, outcome: Outcome, channel: str, user: str, thread_ts: str | None) -> None:
        if (text := self.notice(outcome)) is not None:
            await self._tell(channel, user, text, thread_ts)

    async def _first_sight(self, key: str) -> bool:
        """Whether Slack sends this event for the first time (kept in the store, so also true across restarts)."""
        if not key or len(key) > 300:
            return True  # not an id Slack would send: nothing to recognise it by
        return await self.ledger.store.first_sight(self.name, key)

    # --- events ------------------------------------------------------------------------------------------------------

    async def _on_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        try:
            click = read_block_actions(body)
        except ParseError as problem:
            log.warning("slack: ignored a click: %s", problem)
            return
        # Clicks carry no event id; the action's own timestamp, per user, tells one click from a re-delivery.
        action_ts = click.element.get("action_ts")
        if isinstance(action_ts, str) and not await self._first_sight(f"action:{click.user}:{action_ts}"):
            return
        form: list[tuple[ids.ModalRef, OpenModal]] = []

        def read(record: QuestionRecord, delivery: Delivery) -> Answer | None:
            try:
                intent = decide(click, record.questions)
            except ParseError as problem:
                log.warning("slack: ignored a click on question %s: %s", record.id, problem)
                return None
            if isinstance(intent, OpenModal):
                form.append((ids.ModalRef(record.id, click.channel, click.ts, click.thread_ts), intent))
            return Answer(intent.items) if isinstance(intent, Chosen) else None

        outcome = await self.replies.answer(click.key, by=click.user, how="click", read=read)
        if isinstance(outcome, Noted) and form:
            await self._open_form(outcome.record, *form[0], click)
        else:
            await self._show(outcome, click.channel, click.user, click.thread_ts)

    async def _open_form(
        self, record: QuestionRecord, ref: ids.ModalRef, intent: OpenModal, click: Interaction
    ) -> None:
        if record.status != "pending":
            await self._tell(click.channel, click.user, resolved_notice(record), click.thread_ts)
            return
        if click.trigger_id is None:
            return
        try:
            await self.transport.open_view(
                click.trigger_id, render_answer_modal(record, intent.question, ref, chosen=intent.chosen)
            )
        except (SlackCallError, RenderError) as failure:
            log.warning("slack: could not open the answer form for question %s: %s", record.id, failure)
            notice = "Slack did not open the form; reply in the thread instead."
            await self._tell(click.channel, click.user, notice, click.thread_ts)

    async def _on_view(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        try:
            user, ref, values = read_view_ref(body)
        except ParseError as problem:
            log.warning("slack: ignored a form: %s", problem)
            await ack()
            return

        def read(record: QuestionRecord, delivery: Delivery) -> Answer | None:
            try:
                return Answer(read_modal_answer(values, record.questions))
            except ParseError as problem:
                log.warning("slack: ignored a form for question %s: %s", record.id, problem)
                return None

        key = f"{ref.channel}:{ref.ts}"
        outcome = await self.replies.answer(key, by=user, how="form", read=read, question_id=ref.question_id)
        if isinstance(outcome, Unreadable):
            errors = outcome.error.errors if isinstance(outcome.error, ViewErrors) else None
            await ack(response_action="errors", errors=errors or {ids.modal_text_block(0): outcome.reason})
        elif isinstance(outcome, NotAllowed):
            view = render_notice_view("Not yours to answer", refusal_notice(outcome.responders))
            await ack(response_action="update", view=view)
        elif isinstance(outcome, Ended):
            title = "Already answered" if outcome.answered else "Closed"
            notice = self.notice(outcome) if outcome.record is not None else "This question is no longer open."
            await ack(response_action="update", view=render_notice_view(title, notice or ""))
        else:
            await ack()

    async def _on_command(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        user = body.get("user_id")
        if not isinstance(user, str) or not user:
            await ack()
            return
        await ack(text=render_waiting(await self.waiting_for(user)), response_type="ephemeral")

    async def waiting_for(self, user: str) -> list[tuple[QuestionRecord, str]]:
        """The pending questions shown in Slack that `user` may answer, oldest first, with links to their messages."""
        store, waiting = self.ledger.store, []
        pending = await store.list_questions(
            status="pending", channel=self.name, limit=WAITING_SCANNED, newest_first=False
        )
        groups: dict[str, frozenset[str] | None] = {}  # Slack wants its answer within 3 s: each group read once
        for record in pending:
            delivery = await store.get_delivery(record.id, self.name)
            if delivery is None:
                continue
            if await self.replies.may_answer(user, await self.replies.responders(record, delivery), groups):
                waiting.append((record, message_link(ids.SlackRef.model_validate(delivery.ref))))
        return waiting

    async def _on_message(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        if event.get("subtype") not in (None, "thread_broadcast") or event.get("bot_id"):
            return
        channel, user, text = event.get("channel"), event.get("user"), event.get("text")
        thread_ts, ts = event.get("thread_ts"), event.get("ts")
        if not all(isinstance(value, str) for value in (channel, user, text, ts)):
            return
        assert isinstance(channel, str) and isinstance(user, str) and isinstance(text, str)
        if isinstance(thread_ts, str) and thread_ts != ts:
            open_here = await self.threads.open_in(self.ledger, channel, thread_ts)
        elif event.get("channel_type") == "im":
            # In a DM people just reply, without opening the question's thread.
            open_here = await self.threads.open_in_conversation(self.ledger, channel)
        else:
            return  # a message in a channel, not in one of our threads
        # A reply posted before a question was meant for an earlier one, however late Slack delivers it.
        open_here = [found for found in open_here if posted_after(ts, found[2].ts)]
        if not open_here:
            return  # people talking in a thread with nothing to answer
        event_id = body.get("event_id")
        if isinstance(event_id, str) and not await self._first_sight(f"event:{event_id}"):
            return  # acted on already: Slack delivers again when the acknowledgement was slow
        reply_thread = thread_ts if isinstance(thread_ts, str) else None
        try:
            chosen = targets(
                text,
                [(ref, record.questions[0].header or record.questions[0].question) for record, _, ref in open_here],
            )
        except ReplyError as problem:
            await self._tell(channel, user, str(problem), reply_thread)
            return
        for target in chosen:
            _, delivery, _ = open_here[target.index]

            def read(record: QuestionRecord, delivery: Delivery, part: str = target.text) -> Answer:
                return Answer(parse_thread_reply(part, record.questions))

            outcome = await self.replies.answer(delivery.key, by=user, how="thread reply", read=read)
            await self._show(outcome, channel, user, reply_thread)
