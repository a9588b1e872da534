"""The Telegram channel: sends questions with inline keyboards, turns taps and replies into answers, and edits the
message to show the outcome.

Updates arrive by long polling (`run`, the default: no public URL needed) or on serve's `/telegram/webhook`
(`updates.py`). Each is acted on once, even when Telegram delivers it again after a restart (its `update_id` is kept
in the store). A tap or a reply is read against the question as it is now and handed to the shared base, which
checks who may answer, records it and lets the first answer win; the channel then shows the person the outcome (an
alert, a toast, a reply) and moves the message on to the next question of a request.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import anyio
from aiohttp import web
from telegram import Bot, CallbackQuery, Message, Update, User

from bot.channels.base import Channel, DeliveryError, Sent
from bot.channels.in_hand import InHand
from bot.channels.replies import Accepted, Answer, Ended, NotAllowed, Noted, Outcome, Unmatched, Unreadable
from bot.questions.routing import Route
from bot.questions.status_note import StatusNote
from bot.settings.secrets import resolve_secret
from bot.store.records import Delivery, QuestionRecord
from bot.telegram import keys, updates
from bot.telegram.notes import NotePoster
from bot.telegram.parse import (
    Chosen,
    Decision,
    ReplyError,
    Stale,
    Toggled,
    WantsWords,
    decide,
    read_prompt_ref,
    read_words,
)
from bot.telegram.render import (
    RenderError,
    TelegramMessage,
    approval_note,
    current_question,
    ended_notice,
    escape,
    prompt_placeholder,
    prompt_text,
    refusal,
    render_outcome,
    render_question,
    render_reminder,
)
from bot.telegram.settings import TelegramSettings, TelegramSubscription
from bot.telegram.topics import TelegramRef, message_key, topics
from bot.telegram.transport import Sleep, TelegramCallError, TelegramTransport, make_bot

log = logging.getLogger(__name__)

NAMES_KEPT = 10_000
"""People's names remembered to show who answered (a Telegram user id is all the store keeps)."""

ADVICE = {
    "chat not found": "check the chat id; the bot must be a member of the group (add it first)",
    "bot was blocked by the user": "the person blocked the bot; ask them to open it and press Start",
    "bot can't initiate conversation": "the person must open the bot and press Start once before it can write",
    "not enough rights": 'make the bot an admin that may post (and manage topics, for topic = "agent")',
    "unauthorized": "check the bot token in {token_env}",
    "not found": "check the bot token in {token_env} (and api_url)",
    "connection_failed": "cannot reach Telegram at {api_url}",
    "timeout": "Telegram at {api_url} did not answer in time",
    "rate_limited": "Telegram kept rate-limiting the bot; try again shortly",
}


class TelegramChannel(Channel):
    """Asks in Telegram. Give `bot` (and `webhook_secret`) to run against a test double; otherwise the token comes
    from the environment variable the settings name (ConfigError when it is unset)."""

    name = "telegram"

    def __init__(
        self,
        settings: TelegramSettings,
        *,
        bot: Bot | None = None,
        webhook_secret: str | None = None,
        environ: Mapping[str, str] | None = None,
        poll_seconds: int = 50,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        super().__init__()
        self.settings = settings
        if bot is None:
            bot = make_bot(resolve_secret(settings.bot_token_env, environ), settings.api_url, poll_seconds=poll_seconds)
        if webhook_secret is None and settings.mode == "webhook" and settings.webhook_secret_env is not None:
            webhook_secret = resolve_secret(settings.webhook_secret_env, environ)
        self.webhook_secret = webhook_secret
        self.poll_seconds = poll_seconds
        self.transport = TelegramTransport(bot, sleep=sleep)
        self.topics = topics(self.name)
        self.names: dict[str, str] = {}
        self._notes = NotePoster(self, self.transport, self.topics)
        self._handling = InHand("telegram", "update")

    # --- the shared base's side ----------------------------------------------------------------------------------

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        subscription = route.subscription
        if not isinstance(subscription, TelegramSubscription):
            raise DeliveryError(
                "telegram: no [[telegram.subscriptions]] entry names where to ask; add one with chat = <chat id>"
            )
        try:
            message = render_question(question, names=self.names)
        except RenderError as problem:
            raise DeliveryError(f"telegram: cannot show question {question.id}: {problem}") from problem
        chat = str(subscription.chat)
        agent = question.agent.id if question.agent is not None and subscription.topic == "agent" else None
        try:
            async with self.topics.lock(agent, chat):
                topic = subscription.topic if isinstance(subscription.topic, int) else None
                if agent is not None and question.agent is not None:
                    topic = await self.topics.find(self.ledger, agent, chat)
                    if topic is None:
                        topic = await self.transport.create_topic(subscription.chat, question.agent.name or agent)
                        self.topics.remember(agent, chat, topic)
                chat_id, message_id, parts = await self._send_to_the_end(subscription.chat, message, topic)
        except TelegramCallError as failure:
            raise DeliveryError(
                f"telegram: cannot send to {chat}: {failure.reason} — {self._advice(failure)}"
            ) from None
        ref = TelegramRef(chat_id=chat_id, message_id=message_id, topic=topic, chat=chat, parts=parts)
        return Sent(key=ref.key, ref=ref)

    async def _send_to_the_end(
        self, chat: int | str, message: TelegramMessage, topic: int | None
    ) -> tuple[int, int, list[int]]:
        # A send cut short by the agent cancelling would leave a message nobody can retract: finish it (the
        # transport bounds it), so that the base records the delivery and then shows it cancelled.
        result: tuple[int, int, list[int]] | None = None
        with anyio.CancelScope(shield=True):
            parts = [(await self.transport.send(chat, part, topic=topic))[1] for part in message.parts]
            chat_id, message_id = await self.transport.send(chat, message.text, message.keyboard, topic=topic)
            result = chat_id, message_id, parts
        assert result is not None
        return result

    def _advice(self, failure: TelegramCallError) -> str:
        reason = failure.reason.casefold()
        advice = next((text for key, text in ADVICE.items() if key in reason), "see the Bot API's description above")
        return advice.format(token_env=self.settings.bot_token_env, api_url=self.settings.api_url)

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        ref = TelegramRef.model_validate(delivery.ref)
        await self.transport.edit(ref.chat_id, ref.message_id, render_outcome(question, self.names).text)

    async def remind(self, question: QuestionRecord, delivery: Delivery, route: Route) -> None:
        """Reply to the question with a reminder that mentions the responders."""
        ref = TelegramRef.model_validate(delivery.ref)
        text = render_reminder(question, route.responders, question.reminders) + f"\nref {ref.message_id}/0"
        await self.transport.send(ref.chat_id, text, topic=ref.topic, reply_to=ref.message_id)

    async def show_progress(self, question: QuestionRecord, delivery: Delivery, needed: int) -> None:
        """Keep the buttons and add how many have approved, so the next approver sees who already did."""
        ref = TelegramRef.model_validate(delivery.ref)
        message = render_question(question, note=approval_note(question, needed, self.names), names=self.names)
        await self.transport.edit(ref.chat_id, ref.message_id, message.text, message.keyboard)

    async def post_note(self, note: StatusNote, route: Route) -> bool:
        """Send the note to the route's chat (the agent's topic), replying to its last question there; no buttons."""
        return await self._notes.post(note, route)

    async def run(self) -> None:
        """Long polling (the default) for as long as the channel runs; in webhook mode, register the webhook."""
        if self.settings.mode == "webhook":
            assert self.settings.webhook_url is not None and self.webhook_secret is not None
            url, secret = self.settings.webhook_url, self.webhook_secret
            await updates.keep_trying(
                self.transport, lambda: self.transport.set_webhook(url, secret), "set the webhook"
            )
            return
        # Telegram refuses a second long poll for the same bot: one replica polls, another takes over when it goes.
        await self.leadership.run_alone(
            f"telegram polling {self.settings.bot_token_env}",
            lambda: updates.poll(self.transport, self.handle, self.poll_seconds),
        )

    def add_routes(self, app: web.Application) -> None:
        """Serve Telegram's webhook at `/telegram/webhook` (webhook mode)."""
        if self.settings.mode == "webhook" and self.webhook_secret is not None:
            app.router.add_post(
                updates.WEBHOOK_PATH,
                updates.webhook_handler(self.transport.bot, self.webhook_secret, self.handle, self._handling),
            )

    async def close(self) -> None:
        """Finish the updates being handled (their taps recorded and acknowledged), then close the connection."""
        await self._handling.stop(updates.FINISH_SECONDS)
        await self.transport.close()

    # --- updates -------------------------------------------------------------------------------------------------

    async def handle(self, update: Update) -> None:
        """Act on one update, once: a re-delivery (after a restart, a webhook retry) is recognised by its id.

        Once its id is kept, an update is finished whatever happens meanwhile: serve stopping does not cut a tap
        between recording it and acknowledging it (answerCallbackQuery), nor leave it marked seen but not acted on.
        """
        with self._handling.one(), anyio.CancelScope(shield=True):
            with anyio.move_on_after(updates.FINISH_SECONDS) as bounded:
                await self._handle_once(update)
            if bounded.cancelled_caught:
                log.warning(
                    "telegram: update %s took over %gs; gave up on it", update.update_id, updates.FINISH_SECONDS
                )

    async def _handle_once(self, update: Update) -> None:
        if not await self.ledger.store.first_sight(self.name, str(update.update_id), now=self.ledger.clock.now()):
            return
        try:
            if update.callback_query is not None:
                await self._on_tap(update.callback_query)
            elif update.message is not None:
                await self._on_message(update.message)
        except TelegramCallError as failure:
            log.warning("telegram: could not show the outcome of update %s: %s", update.update_id, failure)

    def _remember(self, user: User) -> str:
        """The user's id as the store names them; their name kept to show who answered."""
        if len(self.names) >= NAMES_KEPT:
            self.names.pop(next(iter(self.names)))
        name = " ".join(part for part in (user.first_name, user.last_name) if part) or user.username or ""
        if name:
            self.names[str(user.id)] = name[:64]
        return str(user.id)

    async def _on_tap(self, query: CallbackQuery) -> None:
        message = query.message
        tap = keys.read_tap(query.data)
        if message is None or tap is None:
            await self.transport.answer_tap(query.id, "This button is not one of handraise's.")
            return
        person = self._remember(query.from_user)
        decided: list[Decision] = []

        def read(record: QuestionRecord, delivery: Delivery) -> Answer | None:
            decision = decide(tap, record)
            decided.append(decision)
            if isinstance(decision, Chosen):
                item = decision.item
                return Answer({item.id: item}, partial=len(record.questions) > 1)
            return None

        chat_id, message_id = message.chat.id, message.message_id
        key = message_key(chat_id, message_id)
        outcome = await self.replies.answer(key, by=person, how="tap", read=read)
        if isinstance(outcome, Noted) and decided:
            await self._follow_up(query, outcome.record, decided[0], chat_id, message_id)
            return
        text, alert = self._notice(outcome)
        if isinstance(outcome, Accepted) and outcome.still_open:
            await self._next_question(outcome.record, chat_id, message_id)
        await self.transport.answer_tap(query.id, text, alert=alert)

    async def _follow_up(
        self, query: CallbackQuery, record: QuestionRecord, decision: Decision, chat_id: int, message_id: int
    ) -> None:
        if isinstance(decision, Toggled):
            await self.transport.edit_keyboard(
                chat_id, message_id, render_question(record, mask=decision.mask).keyboard
            )
            await self.transport.answer_tap(query.id)
        elif isinstance(decision, WantsWords):
            delivery = await self.ledger.store.get_delivery(record.id, self.name)
            topic = TelegramRef.model_validate(delivery.ref).topic if delivery is not None else None
            prompt = prompt_text(record, decision.index, message_id)
            name = escape(self.names.get(str(query.from_user.id), ""))
            mention = f'<a href="tg://user?id={query.from_user.id}">{name or "You"}</a>, '
            await self.transport.send(
                chat_id,
                mention + prompt,
                topic=topic,
                reply_to=message_id,
                force_reply=prompt_placeholder(record.questions[decision.index]),
            )
            await self.transport.answer_tap(query.id, "Reply to the message the bot just sent.")
        elif isinstance(decision, Stale):
            await self.transport.answer_tap(query.id, decision.reason[:200])

    async def _next_question(self, record: QuestionRecord, chat_id: int, message_id: int) -> None:
        message = render_question(record, names=self.names)
        await self.transport.edit(chat_id, message_id, message.text, message.keyboard)

    def _notice(self, outcome: Outcome) -> tuple[str | None, bool]:
        """What the person is told about their tap or reply, and whether it needs their attention (an alert)."""
        if isinstance(outcome, NotAllowed):
            return refusal(outcome.responders, self.names), True
        if isinstance(outcome, Unmatched):
            return outcome.notice, True
        if isinstance(outcome, Ended):
            return ended_notice(outcome.record, self.names), True
        if isinstance(outcome, Unreadable):
            return outcome.reason[:200], True
        if isinstance(outcome, Accepted):
            if outcome.still_open:
                return "Saved. Now the next question.", False
            if outcome.needed > 1 and not outcome.complete:
                lead = "You had already approved this" if outcome.repeated else "Your approval is recorded"
                return f"{lead}: {approval_note(outcome.record, outcome.needed, self.names)[2:]}."[:200], False
            return "Answer recorded.", False
        return None, False

    async def _on_message(self, message: Message) -> None:
        replied, sender, text = message.reply_to_message, message.from_user, message.text
        if replied is None or sender is None or sender.is_bot or text is None or replied.from_user is None:
            return  # people talking, a sticker, a service message: nothing to read
        if replied.from_user.id != await self.transport.bot_id():
            return
        chat_id = message.chat.id
        named = read_prompt_ref(replied.text)
        message_id, position = named if named is not None else (replied.message_id, None)
        person = self._remember(sender)

        def read(record: QuestionRecord, delivery: Delivery) -> Answer:
            index = current_question(record)
            if position is not None and position != index:
                raise ReplyError(
                    f"That prompt was for question {position + 1}, which has its answer; "
                    "reply to the question message to answer the one asked now."
                )
            item = read_words(text, record.questions[index])
            return Answer({item.id: item}, partial=len(record.questions) > 1)

        # A reply to a question (its buttons are ours) may beat the question's recording; one to a notice may not.
        expected = named is not None or keys.shows_our_keyboard(replied.reply_markup)
        key = message_key(chat_id, message_id)
        outcome = await self.replies.answer(key, by=person, how="reply", read=read, expected=expected)
        if isinstance(outcome, Accepted) and outcome.still_open:
            await self._next_question(outcome.record, chat_id, message_id)
        if isinstance(outcome, Ended) and outcome.record is None and not isinstance(outcome, Unmatched):
            return  # a reply to some other message of the bot's (a notice): nothing to say
        notice, _ = self._notice(outcome)
        if notice is not None and not (isinstance(outcome, Accepted) and outcome.complete):
            await self.transport.send(
                chat_id, escape(notice), topic=message.message_thread_id, reply_to=message.message_id
            )
