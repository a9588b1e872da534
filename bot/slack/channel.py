"""The Slack channel: posts questions, turns clicks, modals and thread replies into answers, and shows the outcome.

Interactions arrive through a slack-bolt `AsyncApp`, over HTTP (`add_routes` mounts `/slack/events`; bolt verifies
the signature) or Socket Mode (`run`). Each handler acknowledges first, within Slack's 3 seconds, and then does its
work; the answer goes to the ledger, where the first one wins, and the shared base updates the message.

Who may answer is read from the current config when someone answers (so removing a responder takes effect at once),
falling back to the responders stored with the delivery when the agent is no longer routed here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

import anyio
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from bot.answers import AnswerError
from bot.channel import Channel, DeliveryError, Sent
from bot.config import resolve_secret
from bot.ledger import UnknownQuestion
from bot.records import Delivery, QuestionRecord
from bot.routing import Route, Router
from bot.slack import ids
from bot.slack.http import events_handler
from bot.slack.modal import render_answer_modal, render_notice_view
from bot.slack.parse import (
    Answer,
    Held,
    Interaction,
    ParseError,
    ReplyError,
    ViewErrors,
    decide,
    parse_thread_reply,
    read_block_actions,
    read_modal_answer,
    read_view_ref,
)
from bot.slack.render import RenderError, SlackMessage, refusal_notice, render_outcome, render_question, resolved_notice
from bot.slack.settings import SlackSettings, SlackSubscription
from bot.slack.transport import SlackCallError, SlackTransport, make_client
from core import AskUserQuestionAnswerItem

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
AUTHORISE_SECONDS = 2
"""How long a user-group lookup may take before the click is refused (Slack wants an ack within 3 s)."""
OPEN_QUESTIONS_SCANNED = 1_000_000

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
        self._router = Router([self.name], {self.name: settings.subscriptions})
        self._threads: dict[tuple[str, str], tuple[str, str]] = {}
        self._thread_locks: dict[tuple[str, str], anyio.Lock] = {}
        self._threads_open: dict[tuple[str, str], set[str]] | None = None

    # --- the shared base's side ----------------------------------------------------------------------------------

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        subscription = route.subscription
        if not isinstance(subscription, SlackSubscription):
            raise DeliveryError(
                "slack: no [[slack.subscriptions]] entry names where to ask; "
                'add one with channel = "#channel" or user = "U…"'
            )
        destination = subscription.channel or subscription.user or ""
        try:
            message = render_question(question, mentions=subscription.mention)
        except RenderError as problem:
            raise DeliveryError(f"slack: cannot show question {question.id}: {problem}") from problem
        agent = question.agent.id if question.agent is not None and subscription.thread == "agent" else None
        # Concurrent questions from one agent wait for the first post, so that they all land in its thread.
        lock: AbstractAsyncContextManager[object] = nullcontext()
        if agent is not None:
            lock = self._thread_locks.setdefault((agent, destination), anyio.Lock())
        async with lock:
            root = self._agent_thread(question, agent, destination) if agent is not None else None
            try:
                channel = await self.transport.open_dm(destination) if subscription.user else destination
                target, thread_ts = root if root is not None else (channel, None)
                posted, ts = await self._post_to_the_end(target, message, thread_ts)
            except SlackCallError as failure:
                advice = ADVICE.get(failure.slack_error, "see Slack's documentation of this error").format(
                    token_env=self.settings.bot_token_env, api_url=self.settings.api_url
                )
                raise DeliveryError(
                    f"slack: cannot post to {destination}: {failure.slack_error} — {advice}"
                ) from failure
            if agent is not None:
                self._threads[(agent, destination)] = root or (posted, ts)
        ref = {
            "channel": posted,
            "ts": ts,
            "thread_ts": root[1] if root else None,
            "destination": destination,
            "responders": list(subscription.responders),
        }
        if self._threads_open is not None:
            self._threads_open.setdefault(_thread_of(ref), set()).add(question.id)
        return Sent(key=f"{posted}:{ts}", ref=ref)

    async def _post_to_the_end(self, channel: str, message: SlackMessage, thread_ts: str | None) -> tuple[str, str]:
        # A post cut short by the agent cancelling would leave a message nobody can retract: finish it (the
        # transport bounds it), so that the base records the delivery and then shows it cancelled.
        result: tuple[str, str] | None = None
        with anyio.CancelScope(shield=True):
            result = await self.transport.post_message(channel, message, thread_ts=thread_ts)
        assert result is not None
        return result

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        await self.transport.update_message(delivery.ref["channel"], delivery.ref["ts"], render_outcome(question))

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

    # --- finding questions -----------------------------------------------------------------------------------------

    def _agent_thread(self, question: QuestionRecord, agent: str, destination: str) -> tuple[str, str] | None:
        """The (conversation, thread ts) of `agent`'s earlier question at `destination`, if there is one: from
        memory, else (after a restart) from the deliveries in the store."""
        known = self._threads.get((agent, destination))
        if known is not None:
            return known
        store = self.ledger.store
        for earlier in store.list_questions(agent_id=agent, channel=self.name, limit=50):
            delivery = store.get_delivery(earlier.id, self.name)
            if earlier.id != question.id and delivery is not None and delivery.ref.get("destination") == destination:
                ref = delivery.ref
                return str(ref["channel"]), str(ref.get("thread_ts") or ref["ts"])
        return None

    def _delivered(self, key: str) -> tuple[QuestionRecord, Delivery] | None:
        delivery = self.ledger.store.find_delivery(self.name, key)
        record = self.ledger.store.get_question(delivery.question_id) if delivery is not None else None
        return (record, delivery) if record is not None and delivery is not None else None

    def _thread_index(self) -> dict[tuple[str, str], set[str]]:
        """Pending questions by (conversation, thread ts), read from the store once and then kept up to date, so
        that a reply in some unrelated thread costs a dictionary lookup."""
        if self._threads_open is None:
            store = self.ledger.store
            index: dict[tuple[str, str], set[str]] = {}
            for record in store.list_questions(status="pending", channel=self.name, limit=OPEN_QUESTIONS_SCANNED):
                delivery = store.get_delivery(record.id, self.name)
                if delivery is not None:
                    index.setdefault(_thread_of(delivery.ref), set()).add(record.id)
            self._threads_open = index
        return self._threads_open

    def _open_in_thread(self, channel: str, thread_ts: str) -> list[tuple[QuestionRecord, Delivery]]:
        store = self.ledger.store
        index = self._thread_index()
        found: list[tuple[QuestionRecord, Delivery]] = []
        for question_id in sorted(index.get((channel, thread_ts), ())):
            record = store.get_question(question_id)
            delivery = store.get_delivery(question_id, self.name)
            if record is None or delivery is None or record.status != "pending":
                index[(channel, thread_ts)].discard(question_id)
            else:
                found.append((record, delivery))
        if not index.get((channel, thread_ts)):
            index.pop((channel, thread_ts), None)
        return found

    async def _may_answer(self, user: str, record: QuestionRecord, delivery: Delivery) -> bool:
        """Whether `user` is one of the route's responders (anyone who can see the question when none are named)."""
        responders = self._responders(record, delivery)
        if not responders or user in responders:
            return True
        for group in (r for r in responders if r.startswith("S")):
            try:
                with anyio.fail_after(AUTHORISE_SECONDS):
                    if user in await self.transport.group_members(group):
                        return True
            except (SlackCallError, TimeoutError) as failure:
                log.warning("slack: cannot read user group %s (%s); refusing %s", group, failure, user)
        return False

    def _responders(self, record: QuestionRecord, delivery: Delivery) -> list[str]:
        """The route's responders by the current config; those stored at delivery if it no longer routes here."""
        route = self._router.route(self.name, record.agent)
        return route.responders if route is not None else list(delivery.ref.get("responders") or [])

    # --- answering -------------------------------------------------------------------------------------------------

    async def _tell(self, channel: str, user: str, text: str, thread_ts: str | None) -> None:
        try:
            await self.transport.post_ephemeral(channel, user, text, thread_ts=thread_ts)
        except SlackCallError as failure:
            log.warning("slack: could not tell %s in %s: %s", user, channel, failure)

    def _refused(self, user: str, record: QuestionRecord, via: str) -> None:
        self.ledger.store.audit(record.id, "refused", channel=self.name, actor=user, detail={"reason": via})

    def _submit(
        self, record: QuestionRecord, items: dict[str, AskUserQuestionAnswerItem], user: str
    ) -> tuple[str, bool] | None:
        """Record the answer. None when it won; else what to tell the user, and whether the question is closed."""
        try:
            resolution = self.ledger.submit(record.id, items, by=user, via=self.name)
        except AnswerError as problem:
            return str(problem), False
        except UnknownQuestion:
            return "This question is no longer open.", True
        return None if resolution.won else (resolved_notice(resolution.record), True)

    async def _on_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        try:
            click = read_block_actions(body)
        except ParseError as problem:
            log.warning("slack: ignored a click: %s", problem)
            return
        await self._answer_click(click)

    async def _answer_click(self, click: Interaction) -> None:
        where = (click.channel, click.user)
        found = self._delivered(click.key)
        if found is None:
            await self._tell(*where, "This question is no longer open in handraise.", click.thread_ts)
            return
        record, delivery = found
        if not await self._may_answer(click.user, record, delivery):
            self._refused(click.user, record, "click")
            await self._tell(*where, refusal_notice(self._responders(record, delivery)), click.thread_ts)
            return
        try:
            intent = decide(click, record.questions)
        except ReplyError as problem:
            notice = str(problem) if record.status == "pending" else resolved_notice(record)
            await self._tell(*where, notice, click.thread_ts)
            return
        except ParseError as problem:
            log.warning("slack: ignored a click on question %s: %s", record.id, problem)
            return
        if isinstance(intent, Held):
            return
        if isinstance(intent, Answer):
            if (refused := self._submit(record, intent.items, click.user)) is not None:
                await self._tell(*where, refused[0], click.thread_ts)
            return
        if record.status != "pending":
            await self._tell(*where, resolved_notice(record), click.thread_ts)
            return
        if click.trigger_id is None:
            return
        ref = ids.ModalRef(record.id, click.channel, click.ts, click.thread_ts)
        try:
            await self.transport.open_view(
                click.trigger_id, render_answer_modal(record, intent.question, ref, chosen=intent.chosen)
            )
        except (SlackCallError, RenderError) as failure:
            log.warning("slack: could not open the answer form for question %s: %s", record.id, failure)
            await self._tell(*where, "Slack did not open the form; reply in the thread instead.", click.thread_ts)

    async def _on_view(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        try:
            user, ref, values = read_view_ref(body)
        except ParseError as problem:
            log.warning("slack: ignored a form: %s", problem)
            await ack()
            return
        found = self._delivered(f"{ref.channel}:{ref.ts}")
        if found is None or found[0].id != ref.question_id:
            await ack(response_action="update", view=render_notice_view("Closed", "This question is no longer open."))
            return
        record, delivery = found
        if not await self._may_answer(user, record, delivery):
            self._refused(user, record, "form")
            notice = refusal_notice(self._responders(record, delivery))
            await ack(response_action="update", view=render_notice_view("Not yours to answer", notice))
            return
        try:
            items = read_modal_answer(values, record.questions)
        except ViewErrors as problem:
            await ack(response_action="errors", errors=problem.errors)
            return
        except ParseError as problem:
            log.warning("slack: ignored a form for question %s: %s", record.id, problem)
            await ack()
            return
        refused = self._submit(record, items, user)
        if refused is None:
            await ack()
        elif refused[1]:
            await ack(response_action="update", view=render_notice_view("Already answered", refused[0]))
        else:
            await ack(response_action="errors", errors={ids.modal_text_block(0): refused[0]})

    async def _on_message(self, event: dict[str, Any]) -> None:
        if event.get("subtype") not in (None, "thread_broadcast") or event.get("bot_id"):
            return
        channel, user, text = event.get("channel"), event.get("user"), event.get("text")
        thread_ts, ts = event.get("thread_ts"), event.get("ts")
        if not all(isinstance(value, str) for value in (channel, user, text, thread_ts)) or thread_ts == ts:
            return
        assert isinstance(channel, str) and isinstance(user, str) and isinstance(text, str)
        assert isinstance(thread_ts, str)
        open_here = self._open_in_thread(channel, thread_ts)
        if not open_here:
            return  # people talking in a thread with nothing to answer
        if len(open_here) > 1:
            notice = f"{len(open_here)} questions are open in this thread; answer each with its own buttons."
            await self._tell(channel, user, notice, thread_ts)
            return
        record, delivery = open_here[0]
        if not await self._may_answer(user, record, delivery):
            self._refused(user, record, "thread reply")
            await self._tell(channel, user, refusal_notice(self._responders(record, delivery)), thread_ts)
            return
        try:
            items = parse_thread_reply(text, record.questions)
        except ReplyError as problem:
            await self._tell(channel, user, str(problem), thread_ts)
            return
        if (refused := self._submit(record, items, user)) is not None:
            await self._tell(channel, user, refused[0], thread_ts)


def _thread_of(ref: Mapping[str, Any]) -> tuple[str, str]:
    """The (conversation, thread ts) a delivered question's replies arrive in."""
    return str(ref.get("channel")), str(ref.get("thread_ts") or ref.get("ts"))
