"""Bulk approval, signed in: one form on the inbox with a checkbox per waiting plan review and "Approve selected".
Each selected question gets its approve option from the person, recorded separately in the audit under their name,
exactly as if they had pressed Approve on each card (the same `Replies.answer`, the same responders check)."""

from __future__ import annotations

from aiohttp import web

from bot.channels.base import Channel
from bot.channels.replies import Accepted, Answer
from bot.store.records import Delivery, QuestionRecord
from bot.web.auth import redirect
from bot.web.bulk_rules import approvable
from bot.web.form_body import read_form
from bot.web.forms import choice_field, parse_answer_form
from bot.web.gate import Gate
from bot.web.render import render_message
from bot.web.responses import html_page

MAX_SELECTED = 100
"""One inbox page's worth; more ids in one POST are not from the inbox's form."""


class BulkApproval:
    def __init__(self, channel: Channel, auth: Gate) -> None:
        self.channel = channel
        self.auth = auth

    async def approve(self, request: web.Request) -> web.StreamResponse:
        """`POST /questions/approve`: approve each selected question as the signed-in person."""
        person = self.auth.person(request)
        form = await read_form(request)
        if person is None or not self.auth.csrf_ok(request, form):
            message = "This form is out of date. Reload the inbox and approve again."
            return html_page(render_message("Form expired", message), 403)
        selected = list(dict.fromkeys(form.get("id", [])))[:MAX_SELECTED]
        approved = 0
        for question_id in selected:
            found = await self.channel.replies.delivered(question_id)
            if found is None or not approvable(found[0]):
                continue
            if await self._approve(person, found):
                approved += 1
        return redirect(f"/?approved={approved}")

    async def _approve(self, person: str, found: tuple[QuestionRecord, Delivery]) -> bool:
        record, delivery = found
        item = record.questions[0]
        assert item.intent is not None
        labels = [option.label for option in item.options or ()]
        form = {choice_field(0): [str(labels.index(item.intent.approve))], "action": ["send"]}

        def read(record: QuestionRecord, delivery: Delivery) -> Answer:
            return Answer(parse_answer_form(record.questions, form))

        outcome = await self.channel.replies.answer(delivery.key, by=person, how="bulk", read=read, found=found)
        return isinstance(outcome, Accepted)
