"""The Discord channel: asks in one public thread per agent, turns presses, picks, modals and thread replies into
answers, and edits the message to show the outcome.

Events arrive over the Gateway (`gateway.py`). Each interaction and message is acted on once, even when Discord
delivers it again (a resume replays, a restart reconnects): its id is recognised before anything reaches the store's
answers, so a repeat gets no second callback and leaves no audit row. Every interaction gets its callback at once
(within Discord's 3 seconds): a private refusal (flags 64) for someone who may not answer, a modal for "Other…", a
deferred update for a pick kept for Submit.
"""

from __future__ import annotations

import contextvars
import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from bot.channels.agent_places import AgentPlaces
from bot.channels.base import Channel, DeliveryError, Sent
from bot.channels.in_hand import InHand
from bot.channels.replies import Accepted, Answer, Ended, NotAllowed, Noted, Outcome, Replies, Unmatched, Unreadable
from bot.discord import render
from bot.discord.gateway import Gateway, GatewayClosed
from bot.discord.parse import (
    Chosen,
    Decision,
    Picked,
    Press,
    Stale,
    WantsWords,
    decide,
    modal_words,
    read_press,
    read_words,
)
from bot.discord.rest import DiscordCallError, DiscordRest, Sleep
from bot.discord.settings import DiscordSettings, DiscordSubscription
from bot.questions.routing import Route
from bot.questions.status_note import StatusNote
from bot.settings.secrets import resolve_secret
from bot.store.records import Delivery, QuestionRecord

log = logging.getLogger(__name__)

SEEN_KEPT = 10_000
"""Event ids remembered in memory (the store remembers them across restarts)."""
RECORDING_WAIT_SECONDS = 2.0
"""How long a press on a message just posted waits for its delivery to be recorded: inside Discord's 3 seconds for
the callback, with room for the callback itself."""
PUBLIC_THREAD = 11
UNKNOWN_CHANNEL = 10003
ARCHIVE_MINUTES = 10_080

ADVICE = {
    401: "check the bot token in {token_env}",
    403: "give the bot View Channel, Send Messages, Create Public Threads and Send Messages in Threads there",
    404: "check the channel id (and api_url); the bot must be in that server",
    0: "cannot reach Discord at {api_url}",
    429: "Discord kept rate-limiting the bot; try again shortly",
}

_event: contextvars.ContextVar[tuple[str, frozenset[str]] | None] = contextvars.ContextVar(
    "discord_event", default=None
)
"""Who acted in the event being handled, and their member roles as the event carries them (for `role:` responders)."""


FINISH_SECONDS = 10.0
"""How long an event begun may take to finish, serve stopping or not (serve must exit within 15 s of SIGTERM)."""


class DiscordRef(BaseModel):
    """What the channel keeps about a sent question: the message to edit, and the thread it is in."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    channel_id: str
    """Where the message is: the agent's thread, or the subscription's channel for a question with no agent."""
    message_id: str
    channel: str = ""
    """The subscription's channel, to find an agent's thread there again after a restart."""
    thread: str | None = None
    parts: list[str] = Field(default_factory=list[str])


def _thread_in(ref: dict[str, Any], channel: str) -> str | None:
    discord = DiscordRef.model_validate(ref)
    return discord.thread if discord.channel == channel else None


def pick_key(question: int, person: str) -> str:
    """Where a person's multi-select pick for the batch's `question` is kept in the delivery's ref until Submit."""
    return f"pick:{question}:{person}"


def kept_pick(delivery: Delivery, question: int, person: str) -> tuple[str, ...] | None:
    """The pick `person` made in the select of the batch's `question`, as kept in the store; None when none."""
    kept = delivery.ref.get(pick_key(question, person))
    if not isinstance(kept, list):
        return None
    return tuple(str(label) for label in kept)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


class DiscordChannel(Channel):
    """Asks in Discord. Give `token` to run against a test double; otherwise the token comes from the environment
    variable the settings name (ConfigError when it is unset)."""

    name = "discord"

    def __init__(
        self,
        settings: DiscordSettings,
        *,
        token: str | None = None,
        environ: Mapping[str, str] | None = None,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        super().__init__()
        self.settings = settings
        token = token if token is not None else resolve_secret(settings.bot_token_env, environ)
        self.rest = DiscordRest(settings.api_url, token, sleep=sleep)
        self.gateway = Gateway(self.rest, token, self.handle, sleep=sleep)
        self.threads: AgentPlaces[str] = AgentPlaces(self.name, _thread_in)
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._in_thread: dict[str, list[str]] = {}
        """Question message ids per thread, newest last, to find the question a thread reply answers."""
        self._threads_loaded = False
        self._handling = InHand("discord", "event")
        """Events being acted on now: stopping waits for them."""

    # --- the shared base's side ----------------------------------------------------------------------------------

    def attach(self, replies: Replies) -> None:
        super().attach(replies)
        replies.recording_wait = min(replies.recording_wait, RECORDING_WAIT_SECONDS)

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        subscription = route.subscription
        if not isinstance(subscription, DiscordSubscription):
            raise DeliveryError("discord: no [[discord.subscriptions]] entry names where to ask; add one with channel")
        try:
            message = render.render_question(question)
        except render.RenderError as problem:
            raise DeliveryError(f"discord: cannot show question {question.id}: {problem}") from problem
        agent = question.agent.id if question.agent is not None else None
        try:
            async with self.threads.lock(agent, subscription.channel):
                thread = None
                if agent is not None and question.agent is not None:
                    thread = await self.threads.find(self.ledger, agent, subscription.channel, besides=question.id)
                    if thread is None:
                        thread = await self._open_thread(subscription.channel, question.agent.name or agent)
                        self.threads.remember(agent, subscription.channel, thread)
                where = thread or subscription.channel
                try:
                    ref = await self._send_to_the_end(where, message, subscription.channel, thread)
                except DiscordCallError as failure:
                    if thread is None or question.agent is None or failure.discord_code != UNKNOWN_CHANNEL:
                        raise
                    # The agent's thread was deleted: open a new one (once) and ask there.
                    thread = await self._open_thread(subscription.channel, question.agent.name or question.agent.id)
                    self.threads.replace(question.agent.id, subscription.channel, thread)
                    ref = await self._send_to_the_end(thread, message, subscription.channel, thread)
        except DiscordCallError as failure:
            raise DeliveryError(
                f"discord: cannot send to channel {subscription.channel}: {failure.message} — {self._advice(failure)}"
            ) from None
        return Sent(key=ref.message_id, ref=ref)

    async def _open_thread(self, channel: str, name: str) -> str:
        body = {"name": render.clip(name, 100), "type": PUBLIC_THREAD, "auto_archive_duration": ARCHIVE_MINUTES}
        thread = await self.rest.call("POST", f"/channels/{channel}/threads", body)
        return str(thread["id"])

    async def _send_to_the_end(
        self, where: str, message: render.DiscordMessage, channel: str, thread: str | None
    ) -> DiscordRef:
        # A send cut short by the agent cancelling would leave a message nobody can retract: finish it.
        result: DiscordRef | None = None
        with anyio.CancelScope(shield=True):
            parts: list[str] = []
            for index, part in enumerate(message.parts):
                body = {"content": part, "allowed_mentions": render.NO_PINGS}
                file = message.file if index == len(message.parts) - 1 else None
                sent = await self.rest.call("POST", f"/channels/{where}/messages", body, file=file)
                parts.append(str(sent["id"]))
            sent = await self.rest.call("POST", f"/channels/{where}/messages", message.body())
            message_id = str(sent["id"])
            self._in_thread.setdefault(where, []).append(message_id)
            result = DiscordRef(channel_id=where, message_id=message_id, channel=channel, thread=thread, parts=parts)
        assert result is not None
        return result

    def _advice(self, failure: DiscordCallError) -> str:
        advice = ADVICE.get(failure.status, "see Discord's message above")
        return advice.format(token_env=self.settings.bot_token_env, api_url=self.settings.api_url)

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        ref = DiscordRef.model_validate(delivery.ref)
        await self._edit(ref, render.render_outcome(question))

    async def remind(self, question: QuestionRecord, delivery: Delivery, route: Route) -> None:
        ref = DiscordRef.model_validate(delivery.ref)
        body = {
            "content": render.render_reminder(question, route.responders, question.reminders),
            "allowed_mentions": render.NO_PINGS,
            "message_reference": {"message_id": ref.message_id, "fail_if_not_exists": False},
        }
        await self.rest.call("POST", f"/channels/{ref.channel_id}/messages", body)

    async def show_progress(self, question: QuestionRecord, delivery: Delivery, needed: int) -> None:
        ref = DiscordRef.model_validate(delivery.ref)
        await self._edit(ref, render.render_question(question, note=render.approval_note(question, needed)))

    async def post_note(self, note: StatusNote, route: Route) -> bool:
        """Post the note in the agent's thread (opening it if the agent has none yet, as its first question would),
        with nothing to answer."""
        subscription = route.subscription
        if not isinstance(subscription, DiscordSubscription):
            return False
        agent, channel = note.agent.id, subscription.channel
        async with self.threads.lock(agent, channel):
            thread = await self.threads.find(self.ledger, agent, channel)
            if thread is None:
                thread = await self._open_thread(channel, note.agent.name or agent)
                self.threads.remember(agent, channel, thread)
        body = {"content": render.render_note(note.headline, note.detail), "allowed_mentions": render.NO_PINGS}
        await self.rest.call("POST", f"/channels/{thread}/messages", body)
        return True

    async def _edit(self, ref: DiscordRef, message: render.DiscordMessage) -> None:
        await self.rest.call("PATCH", f"/channels/{ref.channel_id}/messages/{ref.message_id}", message.body())

    async def members(self, entry: str) -> frozenset[str] | None:
        """A `role:<id>` entry holds whoever acts in the event being handled when the event's member roles include
        it (Discord carries the roles in the event: no member lookup, no GUILD_MEMBERS intent)."""
        if not entry.startswith("role:"):
            return None
        event = _event.get()
        if event is None:
            return frozenset()
        person, roles = event
        return frozenset({person}) if entry[5:] in roles else frozenset()

    async def run(self) -> None:
        """The Gateway for as long as the channel runs; one replica holds it at a time. A fatal close (a bad token,
        the Message Content intent not enabled) is logged and stops this channel only: the others go on."""
        try:
            await self.leadership.run_alone(f"discord gateway {self.settings.bot_token_env}", self.gateway.run)
        except GatewayClosed as closed:
            log.error("discord: no longer receiving clicks or replies: %s", closed.message)

    async def close(self) -> None:
        """Finish the events being acted on (a click recorded and its callback sent), then close the connections."""
        await self._handling.stop(FINISH_SECONDS)
        await self.gateway.close()
        await self.rest.close()

    # --- events ----------------------------------------------------------------------------------------------------

    async def handle(self, event: str, data: dict[str, Any]) -> None:
        """Act on one Gateway event, once. An event begun is finished even when serve stops meanwhile: a click is
        not cut between being recorded and its callback (Discord would show the person a failure)."""
        with self._handling.one():
            with anyio.CancelScope(shield=True), anyio.move_on_after(FINISH_SECONDS) as bounded:
                if event == "INTERACTION_CREATE":
                    await self._on_interaction(data)
                elif event == "MESSAGE_CREATE":
                    await self._on_message(data)
            if bounded.cancelled_caught:
                log.warning("discord: a %s event took over %gs; gave up on it", event, FINISH_SECONDS)

    async def _first_sight(self, kind: str, event_id: object) -> bool:
        """Whether this event is new: remembered in memory (two deliveries at once) and in the store (a restart)."""
        if not isinstance(event_id, str) or not event_id.isdigit():
            return False
        key = f"{kind}:{event_id}"
        if key in self._seen:
            return False
        self._seen[key] = None
        if len(self._seen) > SEEN_KEPT:
            self._seen.popitem(last=False)
        return await self.ledger.store.first_sight(self.name, key, now=self.ledger.clock.now())

    async def _on_interaction(self, data: dict[str, Any]) -> None:
        interaction_id, token = data.get("id"), data.get("token")
        if not isinstance(token, str) or not await self._first_sight("interaction", interaction_id):
            return
        path = f"/interactions/{interaction_id}/{token}/callback"
        member = data.get("member") if isinstance(data.get("member"), dict) else None
        who = (member or {}).get("user") or data.get("user") or {}
        person = str(who.get("id", "")) if isinstance(who, dict) else ""
        roles = frozenset(str(role) for role in (member or {}).get("roles") or [] if isinstance(role, (str, int)))
        body = data.get("data") if isinstance(data.get("data"), dict) else {}
        assert isinstance(body, dict)
        press = read_press(body.get("custom_id"))
        message = data.get("message") if isinstance(data.get("message"), dict) else {}
        assert isinstance(message, dict)
        message_id = press.extra if press is not None and press.kind == "x" else message.get("id")
        if press is None or not person.isdigit() or not isinstance(message_id, str):
            await self._callback(path, render.ephemeral("This control is not one of handraise's."))
            return
        _event.set((person, roles))
        values = [str(value) for value in body.get("values") or [] if isinstance(value, str)][:25]
        callback = await self._answer_press(press, person, message_id, values, modal_words(body))
        await self._callback(path, callback)

    async def _answer_press(
        self, press: Press, person: str, message_id: str, values: list[str], words: str | None
    ) -> dict[str, Any]:
        decided: list[Decision] = []

        def read(record: QuestionRecord, delivery: Delivery) -> Answer | None:
            decision = decide(press, record, values, words, kept_pick(delivery, press.question, person))
            decided.append(decision)
            if isinstance(decision, Chosen):
                return Answer({decision.item.id: decision.item}, partial=len(record.questions) > 1)
            return None

        how = {"x": "modal", "u": "submit", "s": "select", "m": "select"}.get(press.kind, "press")
        outcome = await self.replies.answer(message_id, by=person, how=how, read=read)
        if isinstance(outcome, Noted) and decided:
            decision = decided[0]
            if isinstance(decision, Picked):
                # Kept in the store, not here: after a restart, Submit still finds the pick.
                notes = {pick_key(press.question, person): list(decision.labels)}
                await self.ledger.store.note_on_delivery(outcome.record.id, self.name, notes)
                return {"type": 6}
            return self._follow_up(outcome.record, decision, message_id)
        if isinstance(outcome, Accepted):
            if outcome.still_open:
                return {"type": 7, "data": render.render_question(outcome.record).body()}
            if outcome.needed > 1 and not outcome.complete:
                lead = "You had already approved this" if outcome.repeated else "Your approval is recorded"
                return render.ephemeral(f"{lead}: {render.approval_note(outcome.record, outcome.needed)[2:]}.")
            return {"type": 6}  # the message is edited once, to the outcome, by close_out
        return render.ephemeral(self._notice(outcome))

    def _follow_up(self, record: QuestionRecord, decision: Decision, message_id: str) -> dict[str, Any]:
        if isinstance(decision, WantsWords):
            question = record.questions[decision.index]
            return {"type": 9, "data": render.render_modal(question, decision.index, message_id)}
        assert isinstance(decision, Stale)
        return render.ephemeral(decision.reason)

    def _notice(self, outcome: Outcome) -> str:
        if isinstance(outcome, Unmatched):
            return outcome.notice
        if isinstance(outcome, NotAllowed):
            return render.refusal(outcome.responders)
        if isinstance(outcome, Ended):
            return render.ended_notice(outcome.record)
        if isinstance(outcome, Unreadable):
            return outcome.reason
        return "Answer recorded."

    async def _callback(self, path: str, body: dict[str, Any]) -> None:
        try:
            await self.rest.call("POST", path, body)
        except DiscordCallError as failure:
            log.warning("discord: could not answer an interaction: %s", failure.message)

    # --- thread replies --------------------------------------------------------------------------------------------

    async def _on_message(self, data: dict[str, Any]) -> None:
        author = data.get("author") if isinstance(data.get("author"), dict) else None
        text, where = data.get("content"), data.get("channel_id")
        if author is None or author.get("bot") or not isinstance(text, str) or not isinstance(where, str):
            return
        person = str(author.get("id", ""))
        member = data.get("member") if isinstance(data.get("member"), dict) else {}
        assert isinstance(member, dict)
        roles = frozenset(str(role) for role in member.get("roles") or [] if isinstance(role, (str, int)))
        _event.set((person, roles))
        reference = data.get("message_reference")
        target = reference.get("message_id") if isinstance(reference, dict) else None
        found = await self.replies.delivered(target) if isinstance(target, str) else None
        if found is None:
            found = await self._pending_in(where)
        if found is None and self.replies.in_flight.newest() is not None and where in self._in_thread:
            await self.replies.recorded()  # a reply within milliseconds of the post: its question is being recorded
            found = await self._pending_in(where)
        if found is None:
            return  # people talking in a thread with nothing to answer
        record, delivery = found
        if not await self.replies.may_answer(person, await self.replies.responders(record, delivery)):
            return  # a thread message from anyone else answers nothing (and is no refusal: people talk)
        # Only now, for a message that may answer: the server's other chatter costs the store nothing.
        if not await self._first_sight("message", data.get("id")):
            return

        def read(record: QuestionRecord, delivery: Delivery) -> Answer:
            index = render.current_question(record)
            item = read_words(text, record.questions[index])
            return Answer({item.id: item}, partial=len(record.questions) > 1)

        key = DiscordRef.model_validate(delivery.ref).message_id
        outcome = await self.replies.answer(key, by=person, how="thread reply", read=read, found=found)
        try:
            if isinstance(outcome, Accepted) and outcome.still_open:
                await self._edit(DiscordRef.model_validate(delivery.ref), render.render_question(outcome.record))
            elif isinstance(outcome, Unreadable | NotAllowed):
                body = {
                    "content": render.clip(self._notice(outcome), render.MAX_TEXT),
                    "allowed_mentions": render.NO_PINGS,
                    "message_reference": {"message_id": str(data.get("id")), "fail_if_not_exists": False},
                }
                await self.rest.call("POST", f"/channels/{where}/messages", body)
        except DiscordCallError as failure:
            log.warning("discord: could not show the outcome of a thread reply: %s", failure.message)

    async def _pending_in(self, thread: str) -> tuple[QuestionRecord, Delivery] | None:
        """The newest pending question posted in `thread` (found again from the store after a restart)."""
        if not self._threads_loaded:
            self._threads_loaded = True
            pending = await self.ledger.store.list_questions(status="pending", channel=self.name, limit=500)
            for record in pending:  # newest first: each older one goes before it
                delivery = await self.ledger.store.get_delivery(record.id, self.name)
                if delivery is not None:
                    ref = DiscordRef.model_validate(delivery.ref)
                    known = self._in_thread.setdefault(ref.channel_id, [])
                    if ref.message_id not in known:
                        known.insert(0, ref.message_id)
        known = self._in_thread.get(thread, [])
        for message_id in reversed(list(known)):
            found = await self.replies.delivered(message_id)
            if found is not None and found[0].status == "pending":
                return found
            if found is not None:
                known.remove(message_id)  # it ended: no reply will answer it again
        return None
