"""Answering in the inbox: the answer form's POST, handed to the shared base, then a redirect back to the page it
came from, or that page again with the form refused and why.

Forms work without JavaScript (POST, then a redirect). Every answer goes through the base, so the first answer from
any channel wins and a late one is told who answered.
"""

from __future__ import annotations

from urllib.parse import quote_plus

from aiohttp import web

from bot.channels.base import Channel
from bot.channels.replies import Answer, Ended, NotAllowed, Unreadable
from bot.store.errors import StoreUnavailable
from bot.store.records import Delivery, QuestionRecord
from bot.web.auth import redirect
from bot.web.form_body import UnreadableBody, read_form
from bot.web.forms import FormData, FormError, NotAResponder, first, not_a_responder, parse_answer_form, parse_responder
from bot.web.gate import Gate
from bot.web.pages import BY_COOKIE, InboxPages
from bot.web.paging import Page
from bot.web.render import render_message
from bot.web.responses import html_page, no_such_question
from bot.web.shown import ShownQuestions


class Answering:
    """Serves `/questions/{id}/answer` for the inbox `channel`."""

    def __init__(self, channel: Channel, auth: Gate, shown: ShownQuestions, pages: InboxPages) -> None:
        self.channel = channel
        self.auth = auth
        self.shown = shown
        self.pages = pages

    async def answer(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._answer_form(request)
        except StoreUnavailable as down:
            # Say it to the person, in the page: their answer is not recorded, and it is worth trying again.
            message = f"Your answer was not sent: {down.message} ({down.code}). Go back and send it again later."
            response = html_page(render_message("Answer not sent", message), 503)
            response.headers["Retry-After"] = "5"
            return response
        except UnreadableBody as unreadable:
            message = f"Your answer was not sent: {unreadable}."
            return html_page(render_message("Answer not sent", message), unreadable.status)

    async def _answer_form(self, request: web.Request) -> web.StreamResponse:
        form = await read_form(request)
        if not self.auth.csrf_ok(request, form):
            message = "This form is out of date (handraise may have restarted). Reload the inbox and answer again."
            return html_page(render_message("Form expired", message), 403)
        question_id = request.match_info["id"]  # the inbox's delivery key
        replies = self.channel.replies
        found = self.shown.held(question_id) or await replies.delivered(question_id)
        if found is None:
            return no_such_question()
        record, delivery = found
        person = self.auth.person(request)
        try:
            # Signed in, the person is who the provider vouched for: a `by` in the form is ignored.
            name = person if person is not None else parse_responder(form, await replies.responders(record))
        except NotAResponder as refused:
            name = refused.name  # the base refuses it, and audits that
        except FormError as bad:
            return await self._not_sent(request, record, form, str(bad))

        def read(record: QuestionRecord, delivery: Delivery) -> Answer:
            return Answer(parse_answer_form(record.questions, form))

        by = name or self.channel.name
        outcome = await replies.answer(delivery.key, by=by, how="form", read=read, found=found)
        if isinstance(outcome, NotAllowed):
            return await self._refused(request, record, form, not_a_responder(outcome.person), 403)
        if isinstance(outcome, Unreadable):
            return await self._not_sent(request, outcome.record, form, outcome.reason)
        if isinstance(outcome, Ended):
            if outcome.record is None:
                return no_such_question()
            return await self._refused(request, outcome.record, form, _too_late(outcome.record), 409)
        response = redirect(_answered(record.id, _page_number(form)))
        if name is not None and person is None:
            response.set_cookie(BY_COOKIE, name, max_age=365 * 24 * 3600, path="/", httponly=True, samesite="Strict")
        return response

    async def _not_sent(
        self, request: web.Request, record: QuestionRecord, form: FormData, why: str
    ) -> web.StreamResponse:
        """A form that cannot be sent: what was wrong with it, unless it is too late anyway (that matters more)."""
        if record.status != "pending":
            return await self._refused(request, record, form, _too_late(record), 409)
        return await self._refused(request, record, form, why, 400)

    async def _refused(
        self, request: web.Request, record: QuestionRecord, form: FormData, message: str, status: int
    ) -> web.StreamResponse:
        """The inbox again (the page the form was on), the refused form first with what was typed and why it was not
        sent."""
        page = str(_page_number(form))
        leading = [await self.pages.card(record, form, message, request=request)]
        return await self.pages.inbox_page(request, leading, status=status, page=page)


def _page_number(form: FormData) -> int:
    """The inbox page a form was sent from (its hidden `page` field), 1 when it says nothing sensible."""
    requested = first(form, "page")
    return Page.at(10**9, requested).number if requested else 1


def _answered(question_id: str, page: int) -> str:
    """Where a browser goes once its answer is sent: the page it answered on, with a notice about the question."""
    back = f"page={page}&" if page > 1 else ""
    return f"/?{back}answered={quote_plus(question_id)}"


def _too_late(record: QuestionRecord) -> str:
    return f"Your answer was not sent: this question was already {record.status}."
