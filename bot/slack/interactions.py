"""Clicks on a question's buttons, and the answer form (a modal) that some of them open, turned into answers.

A click is acknowledged first, within Slack's 3 seconds; a form's acknowledgement carries the outcome (errors beside
the fields, or a notice in place of the form), so it waits for the answer to be recorded.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck

from bot.channels.base import Channel
from bot.channels.replies import Answer, Ended, NotAllowed, Noted, Unreadable
from bot.slack import ids
from bot.slack.modal import render_answer_modal, render_notice_view
from bot.slack.notices import Notices, notice
from bot.slack.parse import Answer as Chosen
from bot.slack.parse import (
    Interaction,
    OpenModal,
    ParseError,
    ViewErrors,
    decide,
    read_block_actions,
    read_modal_answer,
    read_view_ref,
)
from bot.slack.redeliveries import first_sight
from bot.slack.render import RenderError, refusal_notice, resolved_notice
from bot.slack.transport import SlackCallError, SlackTransport
from bot.store.records import Delivery, QuestionRecord

log = logging.getLogger(__name__)


class Interactions:
    """`channel`'s bolt handlers for block actions (`on_action`) and modal submissions (`on_view`)."""

    def __init__(self, channel: Channel, transport: SlackTransport, notices: Notices) -> None:
        self.channel = channel
        self.transport = transport
        self.notices = notices

    async def on_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        try:
            click = read_block_actions(body)
        except ParseError as problem:
            log.warning("slack: ignored a click: %s", problem)
            return
        # Clicks carry no event id; the action's own timestamp, per user, tells one click from a re-delivery.
        action_ts = click.element.get("action_ts")
        if isinstance(action_ts, str) and not await first_sight(self.channel, f"action:{click.user}:{action_ts}"):
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

        outcome = await self.channel.replies.answer(click.key, by=click.user, how="click", read=read)
        if isinstance(outcome, Noted) and form:
            await self._open_form(outcome.record, *form[0], click)
        else:
            await self.notices.show(outcome, click.channel, click.user, click.thread_ts)

    async def _open_form(
        self, record: QuestionRecord, ref: ids.ModalRef, intent: OpenModal, click: Interaction
    ) -> None:
        if record.status != "pending":
            await self.notices.tell(click.channel, click.user, resolved_notice(record), click.thread_ts)
            return
        if click.trigger_id is None:
            return
        try:
            await self.transport.open_view(
                click.trigger_id, render_answer_modal(record, intent.question, ref, chosen=intent.chosen)
            )
        except (SlackCallError, RenderError) as failure:
            log.warning("slack: could not open the answer form for question %s: %s", record.id, failure)
            told = "Slack did not open the form; reply in the thread instead."
            await self.notices.tell(click.channel, click.user, told, click.thread_ts)

    async def on_view(self, ack: AsyncAck, body: dict[str, Any]) -> None:
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
        # A form is opened from a recorded question: nothing to wait for (and Slack wants the answer within 3 s).
        outcome = await self.channel.replies.answer(
            key, by=user, how="form", read=read, question_id=ref.question_id, expected=False
        )
        if isinstance(outcome, Unreadable):
            errors = outcome.error.errors if isinstance(outcome.error, ViewErrors) else None
            await ack(response_action="errors", errors=errors or {ids.modal_text_block(0): outcome.reason})
        elif isinstance(outcome, NotAllowed):
            view = render_notice_view("Not yours to answer", refusal_notice(outcome.responders))
            await ack(response_action="update", view=view)
        elif isinstance(outcome, Ended):
            title = "Already answered" if outcome.answered else "Closed"
            text = notice(outcome) if outcome.record is not None else "This question is no longer open."
            await ack(response_action="update", view=render_notice_view(title, text or ""))
        else:
            await ack()
