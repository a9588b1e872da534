"""Email rendering, as pure functions: a question becomes a `multipart/alternative` message (plain text and HTML),
and every later mail in its thread (confirmation, follow-up, unreadable reply, closed) a short text one.

Everything the agent wrote is data: HTML-escaped, and in the HTML version broken up where a mail client would
otherwise turn it into a link. The only links are the bot's own `mailto:` ones. Styles are inline (Gmail drops
`<style>`), there are no images, and no background colours, so the mail reads the same in light and dark mode.
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from urllib.parse import quote

from bot.channels.reject import bare
from bot.store.records import QuestionRecord
from core import AskUserQuestionAnswer, AskUserQuestionItem

SUBJECT_PREFIX = "[handraise]"
SUBJECT_TEXT_LIMIT = 70

MUTED = "#6b7280"
ACCENT = "#2563eb"
BORDER = "#9ca3af"
FOOTER = "Sent by handraise for an AI agent that is waiting for your reply."
"""Ends every question mail on a line long enough that a reply quoting it unmarked is recognised (see reading)."""
FONT = "-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,Helvetica,Arial,sans-serif"


@dataclass(frozen=True)
class Envelope:
    """The headers that thread a mail and bind replies to it."""

    sender: str
    to: Sequence[str]
    reply_to: str
    message_id: str
    subject: str
    in_reply_to: str | None = None
    references: Sequence[str] = field(default_factory=tuple[str, ...])
    automatic: bool = False
    """A notice the bot sends by itself (RFC 3834 `Auto-Submitted: auto-replied`), never the question itself."""


def question_subject(questions: Sequence[AskUserQuestionItem], tag: str) -> str:
    """`[handraise] <header or first question> [#token]`, the middle trimmed to one line of readable length."""
    first = questions[0]
    text = " ".join((first.header or first.question).split())
    if len(text) > SUBJECT_TEXT_LIMIT:
        text = text[: SUBJECT_TEXT_LIMIT - 1].rstrip() + "…"
    return f"{SUBJECT_PREFIX} {text} {tag}"


def reply_subject(subject: str) -> str:
    return subject if subject.lower().startswith("re:") else f"Re: {subject}"


def is_plan_review(question: AskUserQuestionItem) -> bool:
    return question.intent is not None and question.intent.kind == "plan-review"


def reject_how(question: AskUserQuestionItem) -> str | None:
    """How to use a plan review's reject option by mail ("Deny: your reason"), or None when it names none."""
    if question.reject_label is None:
        return None
    word = bare(question.reject_label)
    return (
        f'Reply with an option\'s number or name. To {word.casefold()} with your reason, reply "{word}: " followed '
        f'by it (the agent reads it); "{word}" alone is enough without one.'
    )


def _numbered(
    questions: Sequence[AskUserQuestionItem], only: Collection[str] | None
) -> list[tuple[int, AskUserQuestionItem]]:
    return [(n, q) for n, q in enumerate(questions, start=1) if only is None or q.id in only]


def _asker(record: QuestionRecord) -> str:
    agent = record.agent
    if agent is None:
        return "An agent asks"
    return f"Agent {agent.name or agent.id} asks"


# --- plain text ------------------------------------------------------------------------------------------------------


def _indent(text: str, prefix: str) -> list[str]:
    return [prefix + line if line.strip() else "" for line in text.strip("\n").splitlines()]


def question_text(number: int | None, question: AskUserQuestionItem) -> list[str]:
    """One question as plain-text lines: number, header, question, detail, options, what kind of answer it takes."""
    lines: list[str] = []
    head = f"{number}. " if number is not None else ""
    if question.header:
        lines.append(f"{head}[{' '.join(question.header.split())}]")
        head = "   " if number is not None else ""
    pad = "   " if number is not None else ""
    first, *rest = question.question.strip().splitlines() or [""]
    lines.append(head + first.strip())
    lines.extend(pad + line.strip() if line.strip() else "" for line in rest)
    if question.detail:
        lines.append("")
        lines.extend(_indent(question.detail, pad + "  | "))
    options = question.options or []
    if options:
        lines.append("")
        lines.append(pad + ("Choose one or more:" if question.multi_select else "Choose one:"))
        for index, option in enumerate(options, start=1):
            label = " ".join(option.label.split())
            described = f" - {' '.join(option.description.split())}" if option.description else ""
            lines.append(f"{pad}  {index}. {label}{described}")
        if (how := reject_how(question)) is not None:
            lines.append(pad + how)
        elif is_plan_review(question):
            lines.append(pad + "Reply APPROVE to approve, or write what to change.")
        else:
            lines.append(pad + "Or write your own answer.")
    elif is_plan_review(question):
        lines.append(pad + "Reply APPROVE to approve, or write what to change.")
    return lines


def answer_example(questions: Sequence[AskUserQuestionItem], only: Collection[str] | None = None) -> str:
    """A reply that would answer the (remaining) questions, e.g. `2` or `1: 2` lines."""
    numbered = _numbered(questions, only)
    if len(numbered) == 1:
        return _example_for(numbered[0][1])
    return "\n".join(f"{n}: {_example_for(q)}" for n, q in numbered)


def _example_for(question: AskUserQuestionItem) -> str:
    if question.reject_label is not None:
        return f"{bare(question.reject_label)}: your reason"
    if is_plan_review(question):
        return "APPROVE"
    options = question.options or []
    if question.multi_select and len(options) >= 2:
        return "1, 2"
    if options:
        return "1"
    return "your answer"


def instructions(questions: Sequence[AskUserQuestionItem], only: Collection[str] | None = None) -> list[str]:
    """How to answer, with one example; the same wording in the question mail and in the help after a bad reply."""
    numbered = _numbered(questions, only)
    example = answer_example(questions, only)
    if len(numbered) == 1:
        question = numbered[0][1]
        if (reject := question.reject_label) is not None:
            word = bare(reject)
            how = (
                f'reply with the number or the name of one option; "{word}: " and your reason to '
                f'{word.casefold()} with words, or "{word}" alone.'
            )
        elif is_plan_review(question):
            how = "reply APPROVE to approve the plan, or write what should change."
        elif question.options and question.multi_select:
            how = "reply with the numbers or names of the options you pick, separated by commas or on separate lines"
            how += ", or write your own answer."
        elif question.options:
            how = "reply with the number or the name of one option, or write your own answer."
        else:
            how = "reply with your answer."
        return [
            f"How to answer: {how}",
            "For example, a reply that says only:",
            "",
            *_indent(example, "    "),
            "",
            FOOTER,
        ]
    return [
        "How to answer: reply with one line per question, starting with its number: an option's number or name,",
        'or your own words, or "skip". For example, a reply that says only:',
        "",
        *_indent(example, "    "),
        "",
        FOOTER,
    ]


def render_text(record: QuestionRecord, *, only: Collection[str] | None = None, intro: str | None = None) -> str:
    """The plain-text body of the question mail (or of a follow-up asking only for the questions in `only`)."""
    numbered = _numbered(record.questions, only)
    several = len(record.questions) > 1
    lines = [intro or f"{_asker(record)}:", ""]
    for n, question in numbered:
        lines.extend(question_text(n if several else None, question))
        lines.append("")
    lines.append("-" * 40)
    lines.extend(instructions(record.questions, only))
    return "\n".join(lines).rstrip() + "\n"


# --- HTML ------------------------------------------------------------------------------------------------------------

_LINKISH = re.compile(r"[A-Za-z0-9][\w\-.+%~]*(?:[.@:/]|://)[\w\-.+%~/?#=&:@]+")


def escape_text(text: str) -> str:
    """Escape agent text for HTML, and defuse anything a mail client would auto-link (URLs, addresses, domains).

    A WORD JOINER (U+2060, invisible) after each `.`, `@`, `:` and `/` inside such a token stops Gmail, Outlook and
    Apple Mail from recognising it, without changing what the reader sees.
    """
    out: list[str] = []
    position = 0
    for found in _LINKISH.finditer(text):
        out.append(html.escape(text[position : found.start()]))
        out.append(re.sub(r"([.@:/])", "\\1&#8288;", html.escape(found.group())))
        position = found.end()
    out.append(html.escape(text[position:]))
    return "".join(out)


def _paragraphs(text: str, style: str) -> str:
    return "".join(f'<p style="{style}">{escape_text(p).replace(chr(10), "<br>")}</p>' for p in _split_paras(text))


def _split_paras(text: str) -> list[str]:
    return [p.strip("\n") for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def mailto(address: str, subject: str, body: str) -> str:
    return f"mailto:{address}?subject={quote(subject, safe='')}&body={quote(body, safe='')}"


def _question_html(
    number: int | None, question: AskUserQuestionItem, *, reply_to: str, subject: str, several: bool
) -> str:
    parts: list[str] = []
    caption = [f"Question {number}"] if number is not None else []
    if question.header:
        caption.append(" ".join(question.header.split()))
    if caption:
        parts.append(
            f'<p style="margin:0 0 4px 0;font-size:12px;letter-spacing:0.04em;text-transform:uppercase;'
            f'color:{MUTED};">{escape_text(" · ".join(caption))}</p>'
        )
    parts.append(_paragraphs(question.question, "margin:0 0 8px 0;font-size:17px;font-weight:600;"))
    if question.detail:
        parts.append(
            f'<div style="margin:0 0 12px 0;padding:4px 0 4px 12px;border-left:3px solid {BORDER};'
            f'white-space:pre-wrap;font-family:Menlo,Consolas,monospace;font-size:13px;">'
            f"{escape_text(question.detail.strip())}</div>"
        )
    options = question.options or []
    if options:
        hint = "Choose one or more" if question.multi_select else "Choose one"
        parts.append(f'<p style="margin:0 0 6px 0;font-size:13px;color:{MUTED};">{hint} (click to reply):</p>')
        rows: list[str] = []
        for index, option in enumerate(options, start=1):
            said = f"{bare(option.label)}: " if option.label == question.reject_label else str(index)
            body = f"{number}: {said}" if several and number is not None else said
            href = html.escape(mailto(reply_to, reply_subject(subject), body), quote=True)
            described = (
                f'<br><span style="font-size:13px;color:{MUTED};">{escape_text(option.description)}</span>'
                if option.description
                else ""
            )
            rows.append(
                '<tr><td style="padding:4px 0;vertical-align:top;">'
                f'<a href="{href}" style="display:inline-block;padding:6px 12px;border:1px solid {ACCENT};'
                f'border-radius:6px;color:{ACCENT};text-decoration:none;font-weight:600;">'
                f"{index}. {escape_text(' '.join(option.label.split()))}</a>{described}</td></tr>"
            )
        parts.append(
            '<table role="presentation" cellpadding="0" cellspacing="0" border="0" style="border-collapse:collapse;">'
            + "".join(rows)
            + "</table>"
        )
    if (how := reject_how(question)) is not None:
        parts.append(f'<p style="margin:8px 0 0 0;">{escape_text(how)}</p>')
    elif is_plan_review(question):
        parts.append(
            '<p style="margin:8px 0 0 0;">Reply <strong>APPROVE</strong> to approve, or write what to change.</p>'
        )
    elif options:
        parts.append(f'<p style="margin:8px 0 0 0;font-size:13px;color:{MUTED};">Or reply with your own answer.</p>')
    return (
        f'<div style="border:1px solid {BORDER};border-radius:8px;padding:12px 16px;margin:0 0 16px 0;">'
        + "".join(parts)
        + "</div>"
    )


def render_html(
    record: QuestionRecord,
    *,
    reply_to: str,
    subject: str,
    only: Collection[str] | None = None,
    intro: str | None = None,
) -> str:
    """The HTML body of the question mail: the text version's content, plus one-click `mailto:` replies."""
    several = len(record.questions) > 1
    cards = "".join(
        _question_html(n if several else None, q, reply_to=reply_to, subject=subject, several=several)
        for n, q in _numbered(record.questions, only)
    )
    how = "<br>".join(escape_text(line) if line else "" for line in instructions(record.questions, only))
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        '<meta name="color-scheme" content="light dark"><meta name="supported-color-schemes" content="light dark">'
        f"<title>{escape_text(subject)}</title></head>"
        f'<body style="margin:0;padding:0;">'
        f'<div style="max-width:640px;margin:0 auto;padding:16px;font-family:{FONT};font-size:15px;line-height:1.5;">'
        f'<p style="margin:0 0 12px 0;font-size:13px;color:{MUTED};">{escape_text(intro or _asker(record))}</p>'
        f"{cards}"
        f'<p style="margin:0;font-size:13px;color:{MUTED};font-family:{FONT};">{how}</p>'
        "</div></body></html>"
    )


# --- messages --------------------------------------------------------------------------------------------------------


def _message(envelope: Envelope, now: datetime | None) -> EmailMessage:
    message = EmailMessage()
    message["From"] = envelope.sender
    message["To"] = ", ".join(envelope.to)
    message["Reply-To"] = envelope.reply_to
    message["Subject"] = envelope.subject
    message["Message-ID"] = envelope.message_id
    message["Date"] = format_datetime(now or datetime.now(UTC))
    if envelope.in_reply_to:
        message["In-Reply-To"] = envelope.in_reply_to
    if envelope.references:
        message["References"] = " ".join(envelope.references)
    if envelope.automatic:
        message["Auto-Submitted"] = "auto-replied"
    # Ask Exchange not to send out-of-office and other automatic replies to the bot.
    message["X-Auto-Response-Suppress"] = "All"
    return message


def render_question_email(
    record: QuestionRecord,
    envelope: Envelope,
    *,
    only: Collection[str] | None = None,
    intro: str | None = None,
    now: datetime | None = None,
) -> EmailMessage:
    """The question (or, with `only`, a follow-up for some of its questions) as `multipart/alternative`."""
    message = _message(envelope, now)
    message.set_content(render_text(record, only=only, intro=intro))
    message.add_alternative(
        render_html(record, reply_to=envelope.reply_to, subject=envelope.subject, only=only, intro=intro),
        subtype="html",
    )
    return message


def render_notice(text: str, envelope: Envelope, *, now: datetime | None = None) -> EmailMessage:
    """A short plain-text mail in the question's thread."""
    message = _message(envelope, now)
    message.set_content(text.rstrip() + "\n")
    return message


# --- notice texts ----------------------------------------------------------------------------------------------------


def format_when(when: datetime | None) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if when else "an earlier time"


def describe_answer(record: QuestionRecord, answer: AskUserQuestionAnswer) -> list[str]:
    by_id = {item.id: item for item in answer.answers}
    several = len(record.questions) > 1
    lines: list[str] = []
    for n, question in enumerate(record.questions, start=1):
        item = by_id.get(question.id)
        if item is None:
            continue
        chosen = [*item.selected, *([f'"{item.custom}"'] if item.custom else [])]
        shown = ", ".join(chosen) if chosen else "(skipped)"
        lines.append(f"  {f'{n}. ' if several else ''}{' '.join(question.question.split())} -> {shown}")
    return lines


def confirmation_text(record: QuestionRecord, answer: AskUserQuestionAnswer) -> str:
    lines = ["Thanks, your answer was recorded and passed to the agent:", "", *describe_answer(record, answer)]
    return "\n".join(lines)


def already_answered_text(record: QuestionRecord, sender: str) -> str:
    """What a reply to a question that is no longer pending gets back."""
    if record.status == "answered":
        who = "you" if record.answered_by and record.answered_by.lower() == sender.lower() else record.answered_by
        via = f" via {record.answered_via}" if record.answered_via and record.answered_via != "email" else ""
        lines = [f"This question was already answered by {who or 'someone'}{via} at {format_when(record.resolved_at)}."]
        if record.answer is not None:
            lines += ["", "The answer that counts:", *describe_answer(record, record.answer)]
        lines += ["", "Your reply was not used."]
        return "\n".join(lines)
    return closed_text(record) + "\n\nYour reply was not used."


def closed_text(record: QuestionRecord) -> str:
    """The "no longer needed" / "expired" mail, and what later replies to such a question are told."""
    when = format_when(record.resolved_at)
    reason = f" ({record.error_message})" if record.error_message else ""
    if record.status == "cancelled":
        return f"This question is no longer needed: the agent stopped waiting at {when}{reason}."
    if record.status == "expired":
        return f"This question has expired at {when}{reason}."
    if record.status == "failed":
        return f"This question was closed at {when}{reason}."
    return f"This question is {record.status}."


def problem_text(record: QuestionRecord, problems: Sequence[str], unanswered: Collection[str]) -> str:
    """The polite reply to a reply the bot could not read: what went wrong, and how to answer."""
    lines = ["Sorry, I could not read your reply as an answer:", ""]
    lines += [f"  - {problem}" for problem in problems]
    lines += ["", "The question is still open.", ""]
    lines += instructions(record.questions, unanswered)
    lines += ["", 'Option numbers like "2", "#2" or "option 2" work, and so do option names.']
    return "\n".join(lines)


def follow_up_intro(record: QuestionRecord, unanswered: Collection[str]) -> str:
    numbers = [str(n) for n, q in enumerate(record.questions, start=1) if q.id not in unanswered]
    have = ", ".join(numbers)
    return f"Thanks, I have your answers to question{'s' if len(numbers) > 1 else ''} {have}. Still open:"
