"""The inbox's pages: the list of waiting questions (which also signs a browser in from the access link), the
history of ended ones, and one question's card as the live page fetches it."""

from __future__ import annotations

from aiohttp import web

from bot.channels.base import Channel
from bot.questions.approvals import progress
from bot.store.records import QuestionRecord
from bot.web.auth import secured
from bot.web.bulk_rules import approvable
from bot.web.forms import FormData
from bot.web.gate import Gate
from bot.web.paging import Page
from bot.web.render import Card, Titles, render_card, render_history, render_inbox
from bot.web.responses import html_page, no_such_question
from bot.web.shown import ShownQuestions

PAGE_LIMIT = 100
BY_COOKIE = "handraise_inbox_by"
"""The name a browser last answered under, offered again in the next form."""


class InboxPages:
    """Renders the inbox `channel`'s pages; `titles` say how people read the channels' names."""

    def __init__(self, channel: Channel, auth: Gate, shown: ShownQuestions, titles: Titles) -> None:
        self.channel = channel
        self.auth = auth
        self.shown = shown
        self.titles = titles
        self.push_offered = False
        """Whether signed-in people are offered notifications on their devices (the server sends Web Push)."""

    async def inbox(self, request: web.Request) -> web.StreamResponse:
        """`/`: the waiting questions; with `?token=`, the sign-in that leads there."""
        offered = request.query.get("token")
        if offered is not None:
            opened = await self.auth.open_link(request, offered)
            if opened is not None:
                return opened
        if not self.auth.allows(request):
            return await self.auth.refuse(request)
        notice = await self._sent_notice(request.query.get("answered"))
        if (approved := request.query.get("approved", "")).isdecimal():
            notice = f"Approved {int(approved[:4])} selected question(s) as {self.auth.person(request) or 'you'}."

        return await self.inbox_page(request, [], notice=notice, page=request.query.get("page"))

    async def history(self, request: web.Request) -> web.StreamResponse:
        store = self.channel.ledger.store
        records = [r for r in await store.list_questions(channel="web", limit=PAGE_LIMIT) if r.status != "pending"]
        return html_page(
            render_history(
                [(record, await store.history(question_id=record.id)) for record in records],
                titles=self.titles,
                account=self.auth.account(request),
            )
        )

    async def inbox_page(
        self,
        request: web.Request,
        leading: list[Card],
        *,
        notice: str | None = None,
        status: int = 200,
        page: str | None = None,
    ) -> web.StreamResponse:
        """The inbox at `page`, with the `leading` cards (a refused form) first."""
        store, name = self.channel.ledger.store, self.channel.name
        # The count is the store's, not the page's: with thousands waiting, a page shows only some of them.
        self.shown.waiting = waiting = await store.count_questions("pending", channel=name)
        listed = {card.record.id for card in leading}
        person = self.auth.person(request)
        if person is None:
            this_page = Page.at(waiting, page)
            offset = this_page.first_shown - 1
            pending = await store.list_questions(status="pending", channel=name, limit=this_page.size, offset=offset)
        else:
            # Signed in, the person's questions come first across all pages, so the order is of every waiting one.
            every = await store.list_questions(status="pending", channel=name, limit=max(waiting, 1))
            ordered = await self._mine_first(person, every, only_mine=request.query.get("mine") == "1")
            this_page = Page.at(len(ordered), page, mine=request.query.get("mine") == "1")
            offset = this_page.first_shown - 1
            pending = ordered[offset : offset + this_page.size]
        pending = [record for record in pending if record.id not in listed]
        cards = leading + [await self.card(record, request=request) for record in pending]
        remembered = request.cookies.get(BY_COOKIE, "")
        html = render_inbox(
            cards,
            csrf=self.auth.csrf_for(request),
            notice=notice,
            remembered_by=remembered,
            page=this_page,
            titles=self.titles,
            account=self.auth.account(request),
            # Only the plans this person may approve: a box for one routed to others would only be refused.
            bulk=[card.record for card in cards if card.mine and approvable(card.record)],
            person_first=person is not None,
            push=self.push_offered and person is not None,
        )
        return html_page(html, status)

    async def waiting(self, request: web.Request) -> web.StreamResponse:
        """`/questions/waiting`: how many questions wait, and (signed in) how many the person may answer; the live
        "Waiting for you" page shows the second, which the event stream (one count for everyone) cannot tell."""
        store, name = self.channel.ledger.store, self.channel.name
        waiting = await store.count_questions("pending", channel=name)
        person = self.auth.person(request)
        mine: int | None = None
        if person is not None:
            every = await store.list_questions(status="pending", channel=name, limit=max(waiting, 1))
            mine = len(await self._mine_first(person, every, only_mine=True))
        return secured(web.json_response({"waiting": waiting, "mine": mine}, headers={"Cache-Control": "no-store"}))

    async def _mine_first(self, person: str, records: list[QuestionRecord], *, only_mine: bool) -> list[QuestionRecord]:
        """The questions `person` may answer first, oldest first among them, then the rest as they are; with
        `only_mine` ("Waiting for you", `?mine=1`), only theirs."""
        replies = self.channel.replies
        mine = [record for record in records if await replies.may_answer(person, await replies.responders(record))]
        mine.sort(key=lambda record: record.created_at)
        if only_mine:
            return mine
        ids = {record.id for record in mine}
        return mine + [record for record in records if record.id not in ids]

    async def card_fragment(self, request: web.Request) -> web.StreamResponse:
        """One question's card, as the live page inserts or refreshes it."""
        question_id = request.match_info["id"]  # the inbox's delivery key
        found = self.shown.held(question_id) or await self.channel.replies.delivered(question_id)
        if found is None:
            return no_such_question()
        remembered = request.cookies.get(BY_COOKIE, "")
        return html_page(
            render_card(
                await self.card(found[0], request=request),
                csrf=self.auth.csrf_for(request),
                remembered_by=remembered,
                titles=self.titles,
            )
        )

    async def card(
        self,
        record: QuestionRecord,
        values: FormData | None = None,
        error: str | None = None,
        *,
        request: web.Request | None = None,
    ) -> Card:
        """A question's card: its answer form, with what was typed and why it was refused when it was. A signed-in
        person answers as themselves, so their card asks no name (the responders are checked on the POST)."""
        person = self.auth.person(request) if request is not None else None
        replies = self.channel.replies
        if person is None:
            return Card(record, await replies.responders(record), values or {}, error)
        mine = await replies.may_answer(person, await replies.responders(record))
        return Card(record, [], values or {}, error, mine=mine)

    async def _sent_notice(self, question_id: str | None) -> str | None:
        store = self.channel.ledger.store
        record = await store.get_question(question_id) if question_id else None
        if record is None:
            return None
        title = record.questions[0].header or record.questions[0].question
        name = self.channel.name
        if record.status == "pending" and any(approval.via == name for approval in record.approvals):
            needed = self.channel.replies.approvals_needed(record, await store.get_delivery(record.id, name))
            return f"Approval recorded for “{title}”: {progress(record, needed)}."
        if record.status != "answered" or record.answered_via != "web":
            return None
        return f"Answer sent: “{title}”."
