"""The ntfy channel: publishes each question once to its route's topic and answers it when a phone taps one of its
actions (an HTTP POST to `/ntfy/taps` on `[server] public_url`, carrying a signed one-time token).

A tap is acted on once: its token must carry handraise's signature, its nonce is remembered in the store (a
replay is refused even after a restart, or on another replica), and the base decides the rest (who may answer,
first answer wins, a question already over). ntfy cannot edit a message it delivered, so when a question ends a
short follow-up is published to the same topic saying how, so that nobody taps a question that is over.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from bot.channels.base import Channel, DeliveryError, Sent
from bot.channels.one_tap import Spent, answer_once
from bot.channels.replies import Accepted, Ended, NotAllowed, Noted, Outcome, Unmatched
from bot.channels.tap_tokens import TapTokenError, TapTokens
from bot.ntfy import render
from bot.ntfy.publisher import ADVICE, Publisher, PublishError
from bot.ntfy.settings import NtfySettings, NtfySubscription
from bot.questions.routing import Route
from bot.store.records import Delivery, QuestionRecord

log = logging.getLogger(__name__)

TAPS_PATH = "/ntfy/taps"
MAX_TAP_BODY = 4096


class NtfyRef(BaseModel):
    """What the channel keeps about a published question: where, and ntfy's id for the message."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    topic: str
    message_id: str = ""


class NtfyChannel(Channel):
    """Asks through ntfy. `token` is the ntfy access token; `public_url` is where phones send taps."""

    name = "ntfy"

    def __init__(
        self, settings: NtfySettings, *, token: str, public_url: str, titles: Mapping[str, str] | None = None
    ) -> None:
        super().__init__()
        self.settings = settings
        self.public_url = public_url.rstrip("/")
        self.publisher = Publisher(settings.server, token)
        # Taps are signed with a key derived from the ntfy token: every replica has it, it survives restarts, and
        # rotating the token retires the taps still on phones (the person then opens the question instead).
        self._taps = TapTokens(token, purpose="ntfy")
        self._titles = dict(titles or {})

    # --- the shared base's side ----------------------------------------------------------------------------------

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        subscription = _subscription(route)
        message = render.render_question(
            question, subscription.topic, self.public_url, self._tap_tokens(question, subscription)
        )
        try:
            message_id = await self.publisher.publish(message)
        except PublishError as failure:
            raise DeliveryError(
                f"ntfy: cannot publish to topic {subscription.topic}: {failure.message} — {self._advice(failure)}"
            ) from None
        return Sent(key=question.id, ref=NtfyRef(topic=subscription.topic, message_id=message_id))

    def _tap_tokens(self, question: QuestionRecord, subscription: NtfySubscription) -> render.TapToken:
        """Signs the taps of `question`'s actions for the topic's person (a fresh token for each tap offered)."""
        person = subscription.answerer

        def tap_token(index: int, option: int) -> str:
            return self._taps.issue(question.id, person, choice=(index, option))

        return tap_token

    def _advice(self, failure: PublishError) -> str:
        advice = ADVICE.get(failure.status, "see the server's message above")
        return advice.format(token_env=self.settings.token_env, server=self.settings.server)

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        ref = NtfyRef.model_validate(delivery.ref)
        await self.publisher.publish(render.render_outcome(question, ref.topic, self.public_url, self._titles))

    async def remind(self, question: QuestionRecord, delivery: Delivery, route: Route) -> None:
        """Publish the question again to its topic, titled as a reminder, with its actions (first tap wins)."""
        ref = NtfyRef.model_validate(delivery.ref)
        subscription = _subscription(route)
        tap_token = self._tap_tokens(question, subscription)
        await self.publisher.publish(
            render.render_reminder(question, ref.topic, self.public_url, tap_token, question.reminders)
        )

    async def show_progress(self, question: QuestionRecord, delivery: Delivery, needed: int) -> None:
        """Publish how many have approved so far to the question's topic (ntfy cannot edit what it sent)."""
        ref = NtfyRef.model_validate(delivery.ref)
        await self.publisher.publish(render.render_progress(question, ref.topic, self.public_url, needed))

    def add_routes(self, app: web.Application) -> None:
        """Serve the taps of ntfy's action buttons at `/ntfy/taps`."""
        app.router.add_post(TAPS_PATH, self.tap)

    async def close(self) -> None:
        await self.publisher.close()

    # --- taps ----------------------------------------------------------------------------------------------------

    async def tap(self, request: web.Request) -> web.Response:
        """One tap on an action button: answered once, or refused with a 4xx that changes nothing. The reply's text
        is what the phone may show."""
        raw = await request.content.read(MAX_TAP_BODY + 1)
        if len(raw) > MAX_TAP_BODY:
            return _say(413, "This is not a handraise tap.")
        try:
            body: Any = json.loads(raw)
            token = body["tap"] if isinstance(body, dict) else None
        except (ValueError, KeyError):
            token = None
        if not isinstance(token, str):
            return _say(400, "This is not a handraise tap.")
        try:
            tap = self._taps.read(token)
        except TapTokenError:
            log.warning("ntfy: a tap with a token handraise did not sign was refused")
            return _say(403, "This tap is not valid. Nothing was changed.")
        if tap.choice is None:
            return _say(403, "This tap is not valid. Nothing was changed.")
        # Found before the token is spent: a tap that beats its question's recording can be tried again.
        found = await self.replies.find(tap.question_id, tap.question_id)
        if found is None:
            return _reply(Unmatched(None, "tap", tap.question_id))
        outcome = await answer_once(self, tap, found, tap.choice, how="tap")
        if isinstance(outcome, Spent):
            return _say(409, "This button was already used. Nothing was changed.")
        return _reply(outcome)


def _subscription(route: Route) -> NtfySubscription:
    subscription = route.subscription
    if not isinstance(subscription, NtfySubscription):
        raise DeliveryError("ntfy: no [[ntfy.subscriptions]] entry names a topic; add one with topic")
    return subscription


def _say(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text, content_type="text/plain")


def _reply(outcome: Outcome) -> web.Response:
    if isinstance(outcome, Accepted):
        return _say(200, outcome.progress or "Answered. Thank you.")
    if isinstance(outcome, Unmatched):
        return _say(503, outcome.notice)
    if isinstance(outcome, Ended):
        record = outcome.record
        if record is None:
            return _say(409, "This question is no longer open. Nothing was changed.")
        if record.status == "answered":
            return _say(409, f"This question was already answered by {record.answered_by}. Nothing was changed.")
        return _say(409, f"This question is closed: it was {record.status}. Nothing was changed.")
    if isinstance(outcome, NotAllowed):
        return _say(403, "You may not answer this question. Nothing was changed.")
    if isinstance(outcome, Noted):
        return _say(200, "Noted.")
    return _say(422, f"{outcome.reason} Nothing was changed.")
