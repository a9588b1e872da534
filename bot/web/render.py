"""The inbox's HTML, as pure functions of records: every piece of agent or human text goes through `html.escape`.

No inline script or style anywhere (the Content-Security-Policy forbids both): behaviour lives in static/inbox.js,
looks in static/inbox.css, and the page works without either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from types import MappingProxyType

from bot.channels.reject import words_label
from bot.store.records import AuditEvent, QuestionRecord
from bot.web.forms import OTHER, SKIP, FormData, choice_field, first, other_field
from bot.web.installable import MANIFEST_PATH, THEME_COLOUR, THEME_COLOUR_DARK, icon_path
from bot.web.markdown import render_markdown
from bot.web.paging import Page, render_pager
from bot.web.push_controls import PUSH_SCRIPT, render_push_controls
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

Titles = Mapping[str, str]
"""How people read each channel's name ("slack" -> "Slack"): the registry's, handed down by the program, so that
rendering needs nothing of the registry above it. A name without a title is shown as it is."""

NO_TITLES: Titles = MappingProxyType({})
_OWN_TITLES: Titles = MappingProxyType({"api": "the API", "bot": "handraise"})


def channel_title(name: str | None, titles: Titles) -> str | None:
    """How people read the channel an answer came through ("Slack"), or the API / handraise itself."""
    if name is None:
        return None
    return _OWN_TITLES.get(name) or titles.get(name) or name


OUTCOME_WORDS = {"answered": "Answered", "cancelled": "Cancelled", "expired": "Expired", "failed": "Failed"}


@dataclass(frozen=True)
class Card:
    """One request as the inbox shows it; `values` and `error` bring back a form that could not be sent."""

    record: QuestionRecord
    responders: Sequence[str] = ()
    values: FormData = field(default_factory=dict[str, Sequence[str]])
    error: str | None = None
    mine: bool = False
    """The signed-in person may answer it: the live page places it among theirs, and counts it on "Waiting for you"."""


def answer_path(question_id: str) -> str:
    return f"/questions/{question_id}/answer"


# --- pages ----------------------------------------------------------------------------------------------------------


def render_inbox(
    cards: Sequence[Card],
    *,
    csrf: str,
    notice: str | None = None,
    remembered_by: str = "",
    page: Page | None = None,
    titles: Titles = NO_TITLES,
    account: str = "",
    bulk: Sequence[QuestionRecord] = (),
    person_first: bool = False,
    push: bool = False,
) -> str:
    """The inbox: `cards` (one page of the pending questions, newest first, and any form sent back with an error).

    `page` says how many questions wait in all and which of them these are; without it, the cards are all of them.
    `person_first` (signed in): the person's own come first, which the live script keeps when a question arrives.
    `push` offers this device notifications (a signed-in person, on a server that sends Web Push).
    """
    if page is None:
        page = Page(waiting=sum(1 for card in cards if card.record.status == "pending"))
    body = [
        '<div class="heading"><h1>Waiting for you</h1>',
        f'<p class="count" data-count>{_count(page.waiting)}</p>',
        '<p class="live" data-live hidden>Live</p></div>',
        '<div class="announcer visually-hidden" aria-live="polite" data-announcer></div>',
    ]
    if push:
        body.append(render_push_controls(csrf))
    if notice is not None:
        body.append(f'<p class="notice" role="status">{escape(notice)}</p>')
    if bulk:
        body.append(render_bulk(bulk, csrf))
    body.append(render_pager(page, "Pages"))
    order = (" data-mine-only" if page.mine else " data-person-first") if person_first else ""
    body.append(
        f'<div class="cards" id="pending" data-pending data-page="{page.number}" data-pages="{page.count}" '
        f'data-size="{page.size}"{order}>'
    )
    body.extend(
        render_card(card, csrf=csrf, remembered_by=remembered_by, page=page.number, titles=titles) for card in cards
    )
    body.append("</div>")
    body.append(f'<p class="empty" data-empty{"" if not cards else " hidden"}>No questions are waiting.</p>')
    body.append(render_pager(page, "More pages"))
    body.append('<noscript><p class="hint">Reload the page to see new questions.</p></noscript>')
    title = f"({page.waiting:,}) handraise inbox" if page.waiting else "handraise inbox"
    scripts = (PUSH_SCRIPT,) if push else ()
    return _page(title, "".join(body), current="inbox", account=account, scripts=scripts)


def render_history(
    entries: Sequence[tuple[QuestionRecord, Sequence[AuditEvent]]], *, titles: Titles = NO_TITLES, account: str = ""
) -> str:
    """Resolved questions, newest first, each with its outcome and its audit log."""
    body = ['<div class="heading"><h1>History</h1></div>', '<div class="cards">']
    for record, events in entries:
        body.append(f'<article class="card resolved" id="{_card_id(record)}">')
        body.append(_card_head(record))
        body.append(f'<div class="outcome" data-outcome>{render_outcome(record, titles)}</div>')
        for item in record.questions:
            kind = "question plan-review" if item.intent else "question"
            body.append(f'<div class="{kind}">{_legend_text(item)}{_detail(item, record)}</div>')
        body.append(_audit_log(events, titles))
        body.append("</article>")
    body.append("</div>")
    if not entries:
        body.append('<p class="empty">Nothing answered, cancelled or expired yet.</p>')
    return _page("History · handraise inbox", "".join(body), current="history", account=account)


def render_message(title: str, message: str, *, sign_in: bool = False) -> str:
    """A page that only says something: not signed in, form out of date, no such question; with `sign_in`, a link
    that starts a new sign-in."""
    body = f'<div class="heading"><h1>{escape(title)}</h1></div><p class="message">{escape(message)}</p>'
    if sign_in:
        body += '<p class="message"><a href="/auth/sign-in">Sign in</a></p>'
    return _page(f"{title} · handraise inbox", body, current=None)


def render_bulk(records: Sequence[QuestionRecord], csrf: str) -> str:
    """The bulk approval form (signed in): a checkbox per waiting plan review, and one button."""
    boxes = "".join(
        f'<li><label><input type="checkbox" name="id" value="{escape(record.id)}"> '
        f"{escape(_title(record))}</label></li>"
        for record in records
    )
    return (
        '<form method="post" action="/questions/approve" class="bulk"><fieldset><legend>Plans waiting for approval'
        f'</legend><input type="hidden" name="csrf" value="{escape(csrf)}"><ul>{boxes}</ul>'
        '<button type="submit" class="primary">Approve selected</button></fieldset></form>'
    )


def render_account(email: str, csrf: str) -> str:
    """Who is signed in, and the button that signs them out (a POST, so a link elsewhere cannot)."""
    return (
        '<a href="/?mine=1">Waiting for you</a>'
        f'<form method="post" action="/auth/sign-out" class="account"><span>Signed in as {escape(email)}</span>'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}"><button type="submit">Sign out</button></form>'
    )


def _page(title: str, body: str, *, current: str | None, account: str = "", scripts: Sequence[str] = ()) -> str:
    def link(name: str, href: str, text: str) -> str:
        here = ' aria-current="page"' if name == current else ""
        return f'<a href="{href}"{here}>{text}</a>'

    nav = "" if current is None else f'<nav aria-label="Views">{link("inbox", "/", "Inbox")}'
    nav += "" if current is None else f"{link('history', '/history', 'History')}</nav>"
    script_tags = "".join(f'<script src="{escape(src)}" defer></script>' for src in ("/static/inbox.js", *scripts))
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="referrer" content="no-referrer"><title>{escape(title)}</title>'
        f'{_APP_HEAD}<link rel="stylesheet" href="/static/inbox.css">{script_tags}</head>'
        f'<body><header class="top"><p class="brand">handraise</p>{nav}{account}</header>'
        f"<main>{body}</main></body></html>"
    )


_APP_HEAD = (
    f'<link rel="manifest" href="{MANIFEST_PATH}">'
    f'<meta name="theme-color" content="{THEME_COLOUR}" media="(prefers-color-scheme: light)">'
    f'<meta name="theme-color" content="{THEME_COLOUR_DARK}" media="(prefers-color-scheme: dark)">'
    f'<link rel="icon" type="image/png" href="{icon_path(192)}"><link rel="apple-touch-icon" href="{icon_path(192)}">'
)
"""What makes every page installable: the manifest, the title bar's colour (inbox.css `--surface`), the icons."""


def _count(pending: int) -> str:
    return "nothing pending" if pending == 0 else "1 question" if pending == 1 else f"{pending:,} questions"


# --- one request ----------------------------------------------------------------------------------------------------


def render_card(card: Card, *, csrf: str, remembered_by: str = "", page: int = 1, titles: Titles = NO_TITLES) -> str:
    """A request as a form: every question in it, one submit. A resolved one shows its outcome and is disabled.

    `page` is the inbox page it is shown on, where the browser returns after sending the answer.
    """
    record = card.record
    base = _card_id(record)
    resolved = record.status != "pending"
    parts = [
        f'<article class="card{" resolved" if resolved else ""}" id="{base}" data-question="{escape(record.id)}" '
        f'data-status="{escape(record.status)}"{" data-mine" if card.mine else ""} aria-labelledby="{base}-title">',
        _card_head(record),
        f'<div class="outcome" data-outcome role="status">{render_outcome(record, titles) if resolved else ""}</div>',
        f'<div class="partial" data-partial>{render_partial_note(record)}</div>',
    ]
    if card.error is not None:
        parts.append(f'<p class="error" role="alert" id="{base}-error">{escape(card.error)}</p>')
    lone_plan = len(record.questions) == 1 and record.questions[0].intent is not None
    parts.append(f'<form method="post" action="{escape(answer_path(record.id))}" class="answer">')
    parts.append(f'<input type="hidden" name="csrf" value="{escape(csrf)}">')
    if page > 1:
        parts.append(f'<input type="hidden" name="page" value="{page}">')
    if lone_plan:
        # Enter in a text field submits through the first submit button; a disabled one makes Enter do nothing,
        # so a keystroke can never approve a plan.
        parts.append('<button type="submit" class="implicit" disabled hidden tabindex="-1">Send</button>')
    parts.append(f'<fieldset class="body"{" disabled" if resolved else ""}>')
    parts.append(f'<legend class="visually-hidden">Answer {escape(_title(record))}</legend>')
    if card.responders:
        parts.append(_responder_field(base, card.values, remembered_by))
    for index, item in enumerate(record.questions):
        parts.append(_question(base, index, item, record, card.values, buttons=lone_plan))
    parts.append(_plan_actions(record.questions[0]) if lone_plan else _actions())
    parts.append("</fieldset></form></article>")
    return "".join(parts)


def _card_id(record: QuestionRecord) -> str:
    return "card-" + escape(record.id)


def _title(record: QuestionRecord) -> str:
    who = (record.agent.name or record.agent.id) if record.agent is not None else "An agent"
    count = len(record.questions)
    return f"{who} asks" if count == 1 else f"{who} asks {count} questions"


def _card_head(record: QuestionRecord) -> str:
    labels = "".join(
        f'<span class="label">{escape(key)}={escape(value)}</span>'
        for key, value in (record.agent.labels.items() if record.agent else ())
    )
    agent_id = ""
    if record.agent is not None and record.agent.name and record.agent.name != record.agent.id:
        agent_id = f' <span class="agent-id">({escape(record.agent.id)})</span>'
    return (
        f'<header class="card-head"><h2 id="{_card_id(record)}-title">{escape(_title(record))}{agent_id}</h2>'
        f'<p class="meta">asked {_time(record.created_at)}{labels}</p></header>'
    )


def _time(moment: datetime) -> str:
    local = moment.astimezone()
    return f'<time datetime="{escape(moment.isoformat())}">{local.strftime("%Y-%m-%d %H:%M")}</time>'


def _legend_text(item: AskUserQuestionItem) -> str:
    chip = f'<span class="chip">{escape(item.header)}</span> ' if item.header else ""
    return f'<p class="legend">{chip}<span class="text">{escape(item.question)}</span></p>'


def _detail(item: AskUserQuestionItem, record: QuestionRecord, anchor: str = "") -> str:
    if item.detail is None:
        return ""
    id_attr = f' id="{anchor}"' if anchor else ""
    if item.intent is not None:
        return (
            f'<div class="plan"{id_attr} role="region" aria-label="The plan under review" tabindex="0">'
            f"{render_markdown(item.detail)}</div>"
        )
    return f'<p class="detail"{id_attr}>{escape(item.detail)}</p>'


def _question(
    base: str, index: int, item: AskUserQuestionItem, record: QuestionRecord, values: FormData, *, buttons: bool
) -> str:
    prefix = f"{base}-q{index}"
    described = f' aria-describedby="{prefix}-detail"' if item.detail is not None else ""
    chip = f'<span class="chip">{escape(item.header)}</span> ' if item.header else ""
    parts = [
        f'<fieldset class="question{" plan-review" if item.intent else ""}"{described}>',
        f'<legend>{chip}<span class="text">{escape(item.question)}</span></legend>',
        _detail(item, record, f"{prefix}-detail"),
    ]
    typed = escape(first(values, other_field(index)) or "")
    chosen = set(values.get(choice_field(index)) or ())
    text_name = escape(other_field(index))
    reject = item.reject_label if not item.multi_select else None
    if buttons and reject is not None:  # its reject option ("Deny…") is the button that sends these words
        parts.append(
            f'<label class="field-label" for="{prefix}-other">{escape(words_label(reject))}</label>'
            f'<textarea id="{prefix}-other" name="{text_name}" rows="3" '
            f'placeholder="Your reason, which the agent reads. Then press {escape(reject)}">{typed}</textarea>'
        )
    elif buttons:  # a lone plan review: its options are the form's buttons; only the changes text is a field
        parts.append(
            f'<label class="field-label" for="{prefix}-other">Request changes</label>'
            f'<textarea id="{prefix}-other" name="{text_name}" rows="3" '
            f'placeholder="What should change? Then press Request changes.">{typed}</textarea>'
        )
    elif not item.options:
        parts.append(
            f'<label class="field-label" for="{prefix}-other">Your answer</label>'
            f'<textarea id="{prefix}-other" name="{text_name}" rows="3">{typed}</textarea>'
        )
    else:
        kind = "checkbox" if item.multi_select else "radio"
        name = escape(choice_field(index))
        parts.append(f'<div class="options" role="{"group" if item.multi_select else "radiogroup"}">')
        for number, option in enumerate(item.options):
            if option.label == reject:
                continue  # shown as the words choice below, in place of "Request changes"
            check = " checked" if str(number) in chosen else ""
            primary = " approve" if item.intent is not None and option.label == item.intent.approve else ""
            description = f'<span class="desc">{escape(option.description)}</span>' if option.description else ""
            parts.append(
                f'<div class="option{primary}"><input type="{kind}" id="{prefix}-o{number}" name="{name}" '
                f'value="{number}"{check}><label for="{prefix}-o{number}"><span class="label-text">'
                f"{escape(option.label)}</span>{description}</label></div>"
            )
        other_word = reject or ("Request changes" if item.intent is not None else "Other")
        placeholder = (
            "Your reason (optional)" if reject else "What should change?" if item.intent else "Your own answer"
        )
        check = " checked" if OTHER in chosen else ""
        parts.append(
            f'<div class="option other"><input type="{kind}" id="{prefix}-o-other" name="{name}" value="{OTHER}"'
            f'{check}><label for="{prefix}-o-other"><span class="label-text">{escape(other_word)}</span></label>'
            f'<textarea id="{prefix}-other" name="{text_name}" rows="1" aria-labelledby="{prefix}-o-other" '
            f'placeholder="{placeholder}" data-other-for='
            f'"{prefix}-o-other">{typed}</textarea></div></div>'
        )
    if item.multi_select and item.options:
        parts.append('<p class="hint">Choose any that apply.</p>')
    parts.append("</fieldset>")
    return "".join(parts)


def _responder_field(base: str, values: FormData, remembered_by: str) -> str:
    given = first(values, "by")
    return (
        f'<div class="field by"><label class="field-label" for="{base}-by">Answering as</label>'
        f'<input type="text" id="{base}-by" name="by" autocomplete="email" required '
        f'value="{escape(given if given is not None else remembered_by)}" aria-describedby="{base}-by-hint">'
        f'<p class="hint" id="{base}-by-hint">Your name or email; only the configured responders may answer.</p></div>'
    )


def _actions() -> str:
    return (
        '<div class="actions"><button type="submit" name="action" value="send" class="primary">Send answer</button>'
        f'<button type="submit" name="action" value="{SKIP}" class="quiet">Skip</button></div>'
    )


def _plan_actions(item: AskUserQuestionItem) -> str:
    name = escape(choice_field(0))
    buttons: list[str] = []
    for number, option in enumerate(item.options or ()):
        approve = item.intent is not None and option.label == item.intent.approve
        style = "primary approve" if approve else "secondary"
        # The reject option ("Deny…") sends the words field, where the option stands: no separate Request changes.
        value = OTHER if option.label == item.reject_label else str(number)
        button = f'<button type="submit" name="{name}" value="{value}" class="{style}">{escape(option.label)}</button>'
        if approve:
            buttons.insert(0, button)
        else:
            buttons.append(button)
    if item.reject_label is None:
        buttons.insert(
            1, f'<button type="submit" name="{name}" value="{OTHER}" class="secondary">Request changes</button>'
        )
    buttons.append(f'<button type="submit" name="action" value="{SKIP}" class="quiet">Skip</button>')
    notes = "".join(
        f'<li><span class="label-text">{escape(option.label)}</span> {escape(option.description)}</li>'
        for option in item.options or ()
        if option.description
    )
    return (
        f'<ul class="option-notes">{notes}</ul>' if notes else ""
    ) + f'<div class="actions">{"".join(buttons)}</div>'


# --- outcomes -------------------------------------------------------------------------------------------------------


def render_outcome(record: QuestionRecord, titles: Titles = NO_TITLES) -> str:
    """What became of a resolved question: who answered what, where and when, or why it ended."""
    if record.status == "pending":
        return ""
    word = OUTCOME_WORDS.get(record.status, record.status.capitalize())
    via = channel_title(record.answered_via, titles)
    who = (
        f" by {escape(record.answered_by)}" if record.answered_by and record.answered_by != record.answered_via else ""
    )
    where = f" {'in' if record.status == 'answered' else 'via'} {escape(via)}" if via else ""
    when = f" at {_time(record.resolved_at)}" if record.resolved_at else ""
    line = f'<p class="outcome-line outcome-{escape(record.status)}"><strong>{word}</strong>{who}{where}{when}'
    if record.status != "answered":
        return line + (f": {escape(record.error_message)}</p>" if record.error_message else "</p>")
    answers = record.answer.answers if record.answer is not None else []
    return line + "</p>" + _answer_list(record, answers)


def _answer_list(record: QuestionRecord, answers: Sequence[AskUserQuestionAnswerItem]) -> str:
    asked = {item.id: item for item in record.questions}
    rows: list[str] = []
    for answer in answers:
        item = asked.get(answer.id)
        name = (item.header or item.question) if item is not None else answer.id
        rows.append(f'<li><span class="q">{escape(name)}</span> {_answer_text(answer)}</li>')
    return f'<ul class="answers">{"".join(rows)}</ul>'


def _answer_text(answer: AskUserQuestionAnswerItem) -> str:
    said = [f"<strong>{escape(label)}</strong>" for label in answer.selected]
    if answer.custom is not None:
        said.append(f"<q>{escape(answer.custom)}</q>")
    return ", ".join(said) if said else '<em class="skipped">skipped</em>'


def render_partial_note(record: QuestionRecord) -> str:
    """What a pending request has so far: the answers given elsewhere to some of its questions (email answers them
    one by one), the approvals of one that needs several, and the reminders sent."""
    if record.status != "pending":
        return ""
    notes = ""
    if record.approvals:
        names = ", ".join(escape(approval.by) for approval in record.approvals)
        count = len(record.approvals)
        notes += f'<p class="hint approvals">Approved so far by {names} ({count} approval{"s" * (count > 1)}).</p>'
    if record.reminders:
        times = "once" if record.reminders == 1 else f"{record.reminders} times"
        notes += f'<p class="hint reminded">Still waiting for an answer: reminded {times}.</p>'
    items = [item for item in (record.partial.get(q.id) for q in record.questions) if item is not None]
    if items:
        notes += '<p class="hint">Already answered elsewhere, so far:</p>' + _answer_list(record, items)
    return notes


def _audit_log(events: Sequence[AuditEvent], titles: Titles) -> str:
    rows = []
    for event in events:
        where = f" in {escape(channel_title(event.channel, titles) or '')}" if event.channel else ""
        who = f" by {escape(event.actor)}" if event.actor else ""
        rows.append(f"<li>{_time(event.at)} <span class='kind'>{escape(event.kind)}</span>{who}{where}</li>")
    return f'<details class="audit"><summary>Audit log ({len(rows)})</summary><ol>{"".join(rows)}</ol></details>'
