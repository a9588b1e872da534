"""The Teams channel: posts each question as an Adaptive Card in the subscription's channel, turns presses and
thread replies into answers, and updates the card in one step when the question ends.

Activities arrive on serve's `/teams/messages` (`incoming.py` checks each token first). Each is acted on once: a
repeat of an activity id (Teams delivering again, at once or after a restart) is recognised before anything reaches
the answer path, and a repeated press is answered with the card as it is now. Who pressed is looked up among the
conversation's members (`GET …/members/{id}`), so that responders are matched by email, UPN or Microsoft Entra
object id, and the answered card shows their name, never a raw id.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from aiohttp import web
from pydantic import BaseModel, ConfigDict

from bot.channels.base import Channel, DeliveryError, Sent
from bot.channels.replies import Accepted, Answer, Ended, NotAllowed, Noted, Outcome, Unreadable
from bot.questions.routing import Route
from bot.questions.status_note import StatusNote
from bot.settings.secrets import resolve_secret
from bot.store.records import Delivery, QuestionRecord
from bot.teams import cards
from bot.teams.auth import SigningKeys, TokenCheck
from bot.teams.connector import BotToken, Connector, Sleep, TeamsCallError
from bot.teams.conversations import ConversationBook, seen_in
from bot.teams.incoming import MESSAGES_PATH, messages_handler
from bot.teams.parse import Chosen, Press, action_data, decide, read_press, read_words, thread_root
from bot.teams.people import People, recorded_as
from bot.teams.settings import TeamsSettings, TeamsSubscription

log = logging.getLogger(__name__)

CARD_LOCKS_KEPT = 10_000
FOLLOW_UPS_QUEUED = 1_000
FOLLOW_UP_SECONDS = 60.0
"""A follow-up (the next question shown to everyone, a note in a thread) may take this long, Retry-After included."""
NOT_OURS = "This card is not one of handraise's."
GONE = "This question is no longer open in handraise."


Later = Callable[[], Awaitable[None]]


class TeamsRef(BaseModel):
    """What the Teams channel keeps about a sent card: where it went and its activity id (the thread's root)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    service_url: str
    conversation: str
    activity_id: str

    @property
    def key(self) -> str:
        return thread_key(self.conversation, self.activity_id)

    @property
    def thread(self) -> str:
        return f"{self.conversation};messageid={self.activity_id}"


def thread_key(conversation: str, root: str) -> str:
    """The delivery key: the card's thread as Teams names it, which every press and reply on it carries."""
    return f"{conversation};messageid={root}"


class TeamsChannel(Channel):
    """Asks in Microsoft Teams. The app id and password come from the environment variables the settings name
    (ConfigError when unset); `sleep` waits out a Retry-After (tests record it instead)."""

    name = "teams"

    def __init__(
        self, settings: TeamsSettings, *, environ: Mapping[str, str] | None = None, sleep: Sleep = anyio.sleep
    ) -> None:
        super().__init__()
        self.settings = settings
        app_id = resolve_secret(settings.app_id_env, environ)
        password = resolve_secret(settings.app_password_env, environ)
        self.app_id = app_id
        self.connector = Connector(BotToken(settings.token_endpoint, app_id, password), sleep=sleep)
        self.keys = SigningKeys(settings.openid_metadata_url)
        self.check = TokenCheck(app_id, self.keys)
        self.book = ConversationBook(Path(settings.conversations_file))
        self.people = People(self.connector)
        self.names = self.people.names
        self._cards: dict[str, anyio.Lock] = {}
        """One lock per card: its updates go out one at a time, each showing the question as it is then."""
        self._send_later, self._later = anyio.create_memory_object_stream[tuple[str, Later]](FOLLOW_UPS_QUEUED)

    # --- the shared base's side ----------------------------------------------------------------------------------

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        subscription = route.subscription
        if not isinstance(subscription, TeamsSubscription):
            raise DeliveryError("teams: no [[teams.subscriptions]] entry names where to ask; add one")
        try:
            activity = cards.render_question(question)
        except cards.RenderError as problem:
            raise DeliveryError(f"teams: cannot show question {question.id}: {problem}") from problem
        conversation, service_url = subscription.conversation, subscription.service_url
        posted: str | None = None
        # A post cut short by the agent cancelling would leave a card nobody can update: finish it (the connector
        # bounds it), so that the base records the delivery and then shows it cancelled.
        with anyio.CancelScope(shield=True):
            try:
                posted = await self.connector.post(service_url, conversation, activity)
            except TeamsCallError as failure:
                raise DeliveryError(f"teams: cannot post to {conversation}: {failure} — {_advice(failure)}") from None
        assert posted is not None
        ref = TeamsRef(service_url=service_url, conversation=conversation, activity_id=posted)
        return Sent(key=ref.key, ref=ref)

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        ref = TeamsRef.model_validate(delivery.ref)
        async with self._card(ref.activity_id):
            await self.connector.update(
                ref.service_url, ref.conversation, ref.activity_id, cards.render_outcome(question, self.names)
            )

    async def remind(self, question: QuestionRecord, delivery: Delivery, route: Route) -> None:
        """A reply in the card's thread saying the question still waits (mentioning nobody)."""
        ref = TeamsRef.model_validate(delivery.ref)
        text = cards.reminder_text(question, question.reminders)
        await self.connector.post(ref.service_url, ref.thread, {"type": "message", "text": text, "textFormat": "plain"})

    async def show_progress(self, question: QuestionRecord, delivery: Delivery, needed: int) -> None:
        """Keep the actions and add how many have approved, so the next approver sees who already did."""
        ref = TeamsRef.model_validate(delivery.ref)
        note = cards.approval_note(question, needed, self.names)
        async with self._card(ref.activity_id):
            current = await self.ledger.store.get_question(question.id)
            if current is None or current.status != "pending":
                return  # it ended meanwhile: the outcome is (or will be) on the card
            await self.connector.update(
                ref.service_url, ref.conversation, ref.activity_id, cards.render_question(question, note=note)
            )

    async def post_note(self, note: StatusNote, route: Route) -> bool:
        """A status note as plain text (so it can mention nobody) in the thread of the agent's last question in the
        route's channel, else as a post of its own there."""
        subscription = route.subscription
        if not isinstance(subscription, TeamsSubscription):
            return False
        last = await self._last_card(note.agent.id, subscription.conversation)
        where = last.thread if last is not None else subscription.conversation
        await self.connector.post(subscription.service_url, where, cards.note_message(note))
        return True

    async def _last_card(self, agent: str, conversation: str) -> TeamsRef | None:
        store = self.ledger.store
        for record in await store.list_questions(agent_id=agent, channel=self.name, limit=1):
            delivery = await store.get_delivery(record.id, self.name)
            ref = TeamsRef.model_validate(delivery.ref) if delivery is not None else None
            if ref is not None and ref.conversation == conversation:
                return ref
        return None

    async def members(self, entry: str) -> frozenset[str] | None:
        """A responders entry naming someone by another handle than the one their answers are recorded under
        (their UPN or Entra object id, where the email is recorded): the people met who have that handle."""
        return self.people.with_handle(entry) or None

    def add_routes(self, app: web.Application) -> None:
        """Serve the Bot Framework's messaging endpoint at `/teams/messages`."""
        app.router.add_post(MESSAGES_PATH, messages_handler(self.check, self.handle))

    async def run(self) -> None:
        """Show follow-ups (the next question of a request to everyone, a note in a thread) in the background, so
        that Teams gets every activity's answer within its 5 seconds whatever the Bot Connector's pace."""
        async with anyio.create_task_group() as group, self._later:
            group.start_soon(self.keys.prefetch)
            async for what, work in self._later:
                group.start_soon(self._follow_up, what, work)

    async def _follow_up(self, what: str, work: Later) -> None:
        try:
            with anyio.fail_after(FOLLOW_UP_SECONDS):
                await work()
        except Exception as failure:
            log.warning("teams: could not %s: %s", what, failure)

    def _soon(self, what: str, work: Later) -> None:
        try:
            self._send_later.send_nowait((what, work))
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.warning("teams: too much to show at once; could not %s", what)

    def _card(self, activity_id: str) -> anyio.Lock:
        if len(self._cards) > CARD_LOCKS_KEPT:
            self._cards = {key: lock for key, lock in self._cards.items() if lock.locked()}
        return self._cards.setdefault(activity_id, anyio.Lock())

    async def close(self) -> None:
        self._send_later.close()
        await self.connector.close()
        await self.keys.close()

    # --- activities ----------------------------------------------------------------------------------------------

    async def handle(self, activity: Mapping[str, Any]) -> dict[str, Any] | None:
        """Act on one activity (its token already checked), once; returns the body of an invoke's answer."""
        await self._note_conversation(activity)
        kind, activity_id = activity.get("type"), activity.get("id")
        is_press = kind == "invoke" and activity.get("name") == "adaptiveCard/action"
        is_submit = kind == "message" and isinstance(activity.get("value"), dict)
        is_reply = kind == "message" and not is_submit and isinstance(activity.get("text"), str)
        if not (is_press or is_submit or is_reply):
            return None
        if not isinstance(activity_id, str) or not activity_id or len(activity_id) > 200:
            return cards.invoke_message(NOT_OURS) if is_press else None
        first = await self.ledger.store.first_sight(self.name, activity_id, now=self.ledger.clock.now())
        try:
            if is_press or is_submit:
                return await self._on_press(activity, answer_now=is_press, repeat=not first)
            if first:
                await self._on_reply(activity)
        except TeamsCallError as failure:
            log.warning("teams: could not act on activity %s: %s", activity_id[:60], failure)
            if is_press:
                return cards.invoke_message("Teams could not be reached just now; press again in a moment.")
        return None

    async def _note_conversation(self, activity: Mapping[str, Any]) -> None:
        seen = seen_in(activity)
        if seen is not None and seen.service_url.startswith(("https://", "http://")) and not self.book.knows(seen):
            await anyio.to_thread.run_sync(self.book.note, seen)

    def _key_of(self, activity: Mapping[str, Any]) -> str | None:
        conversation = activity.get("conversation")
        conversation_id = conversation.get("id") if isinstance(conversation, dict) else None
        if not isinstance(conversation_id, str):
            return None
        base, root = thread_root(conversation_id)
        reply_to = activity.get("replyToId")
        root = reply_to if isinstance(reply_to, str) and reply_to else root
        return thread_key(base, root) if root else None

    async def _on_press(self, activity: Mapping[str, Any], *, answer_now: bool, repeat: bool) -> dict[str, Any] | None:
        press = read_press(action_data(dict(activity)))
        if press is None:
            return cards.invoke_message(NOT_OURS) if answer_now else None
        found = await self._find(activity, press)
        if found is None:
            return cards.invoke_message(GONE) if answer_now else None
        if repeat:  # the same press again: show the card as it is now, change nothing
            return cards.invoke_answer(self._card_now(found[0])) if answer_now else None
        member = await self.people.sender(activity)
        if member is None:
            text = "Teams could not tell handraise who you are just now; press again in a moment."
            return cards.invoke_message(text) if answer_now else None

        def read(record: QuestionRecord, delivery: Delivery) -> Answer | None:
            decision = decide(press, record)
            if isinstance(decision, Chosen):
                return Answer({decision.item.id: decision.item}, partial=len(record.questions) > 1)
            return None  # a stale card: answered below with the card as it is now

        outcome = await self.replies.answer(found[1].key, by=recorded_as(member), how="press", read=read, found=found)
        if isinstance(outcome, Accepted) and outcome.still_open:
            self._show_everyone(outcome.record, found[1])
        return self._invoke_answer(outcome) if answer_now else None

    async def _find(self, activity: Mapping[str, Any], press: Press) -> tuple[QuestionRecord, Delivery] | None:
        """The question a press names; a press within moments of the post waits for its delivery to be kept."""
        key = self._key_of(activity)
        if key is not None:
            found = await self.replies.find(key, press.question_id)
            if found is not None:
                return found
        await self.replies.recorded()  # no thread named (a client that leaves it out): the question names it
        return await self._by_question(press.question_id)

    async def _by_question(self, question_id: str) -> tuple[QuestionRecord, Delivery] | None:
        delivery = await self.ledger.store.get_delivery(question_id, self.name)
        return await self.replies.delivered(delivery.key, question_id) if delivery is not None else None

    def _card_now(self, record: QuestionRecord) -> cards.Card:
        activity = (
            cards.render_question(record) if record.status == "pending" else cards.render_outcome(record, self.names)
        )
        return activity["attachments"][0]["content"]

    def _invoke_answer(self, outcome: Outcome) -> dict[str, Any]:
        if isinstance(outcome, NotAllowed):
            return cards.invoke_message(self._refusal(outcome.responders))
        if isinstance(outcome, Unreadable):
            return cards.invoke_message(outcome.reason)
        if isinstance(outcome, Ended) and outcome.record is None:
            return cards.invoke_message(GONE)
        if isinstance(outcome, Accepted) and outcome.needed > 1 and not outcome.complete:
            note = cards.approval_note(outcome.record, outcome.needed, self.names)
            return cards.invoke_answer(cards.render_question(outcome.record, note=note)["attachments"][0]["content"])
        assert isinstance(outcome, Accepted | Ended | Noted) and outcome.record is not None
        return cards.invoke_answer(self._card_now(outcome.record))

    def _refusal(self, responders: tuple[str, ...]) -> str:
        shown = [self.names.get(who) or who for who in responders[:5]]
        more = f" and {len(responders) - 5} more" if len(responders) > 5 else ""
        who = ", ".join(shown) + more if shown else "the people this question was routed to"
        return f"Only {who} may answer this question. Nothing was changed."

    def _show_everyone(self, record: QuestionRecord, delivery: Delivery) -> None:
        """Update the card for everyone, soon, as the question is when the update goes out (the final outcome,
        if it ended meanwhile: never a live card over an answered one)."""
        ref = TeamsRef.model_validate(delivery.ref)

        async def update() -> None:
            async with self._card(ref.activity_id):
                current = await self.ledger.store.get_question(record.id)
                if current is None:
                    return
                shown = cards.render_question(current) if current.status == "pending" else None
                shown = shown or cards.render_outcome(current, self.names)
                await self.connector.update(ref.service_url, ref.conversation, ref.activity_id, shown)

        self._soon(f"update the card of {record.id}", update)

    async def _on_reply(self, activity: Mapping[str, Any]) -> None:
        sender = activity.get("from")
        if not isinstance(sender, dict) or str(sender.get("id", "")).startswith("28:"):
            return  # the bot's own messages, or no sender
        key = self._key_of(activity)
        found = await self.replies.delivered(key) if key is not None else None
        if found is None:
            return  # people talking in a thread that is no question's
        member = await self.people.sender(activity)
        if member is None:
            return
        text = str(activity["text"])

        def read(record: QuestionRecord, delivery: Delivery) -> Answer:
            question = record.questions[cards.current_question(record)]
            item = read_words(text, question)
            return Answer({item.id: item}, partial=len(record.questions) > 1)

        outcome = await self.replies.answer(
            found[1].key, by=recorded_as(member), how="thread reply", read=read, found=found
        )
        if isinstance(outcome, Accepted) and outcome.still_open:
            self._show_everyone(outcome.record, found[1])
        if isinstance(outcome, Unreadable):
            ref = TeamsRef.model_validate(found[1].ref)
            reply = {"type": "message", "text": outcome.reason, "textFormat": "plain"}

            async def explain() -> None:
                await self.connector.post(ref.service_url, ref.thread, reply)

            self._soon("say why a reply was not read", explain)


def _advice(failure: TeamsCallError) -> str:
    if failure.what == "get a token":
        return "check the app id and password (and token_url / tenant_id)"
    if failure.status in (401, 403):
        return "add the app to the team, and check the app id and password"
    if failure.status == 404:
        return "check the conversation id and service_url (handraise teams conversations lists them)"
    if failure.status == 0:
        return "cannot reach the service_url"
    return "see Teams' answer above"
