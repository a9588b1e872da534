"""The email channel on the shared base: a question goes out as a mail form; replies in its thread come back, are
checked (bound by token, not automatic), read, and handed to the base, which checks the sender against the route's
responders, keeps partial answers and lets the first answer win.

Every reply the bot sends back stays in the question's thread: a confirmation, "already answered by X at T", the
problems with an unreadable reply and how to answer, or a follow-up asking only for the questions still open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.message import EmailMessage, Message
from email.utils import formataddr
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from bot.channels.base import Channel, DeliveryError, Sent
from bot.channels.replies import Answer, Ended, NotAllowed, Noted, Outcome, Unreadable
from bot.email.binding import ReplyBinding, SecretTooWeak
from bot.email.classify import header, headers, refusal, sender_address
from bot.email.parse import parse_reply
from bot.email.reading import html_to_text, new_text, parse_mail, reply_bodies
from bot.email.render import (
    Envelope,
    already_answered_text,
    closed_text,
    confirmation_text,
    follow_up_intro,
    problem_text,
    question_subject,
    render_html,
    render_notice,
    render_question_email,
    render_text,
    reply_subject,
)
from bot.email.settings import EmailSettings, EmailSubscription
from bot.email.transport import ImapWatcher, MailSender, SmtpSender
from bot.questions.routing import Route
from bot.settings.errors import ConfigError
from bot.settings.secrets import resolve_secret
from bot.store.records import Delivery, QuestionRecord

log = logging.getLogger(__name__)

MailOutcome = Literal["unmatched", "unknown-token", "refused", "closed", "answered", "partial", "unreadable"]


@dataclass(frozen=True)
class Handled:
    """What the channel did with one incoming mail; true when the mail was the bot's business."""

    outcome: MailOutcome
    question_id: str | None = None
    sender: str | None = None
    detail: str = ""

    def __bool__(self) -> bool:
        return self.outcome != "unmatched"


class EmailRef(BaseModel):
    """What the email channel keeps about a sent question: enough to reply in its thread later."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    message_id: str = ""
    subject: str = ""
    to: list[str] = Field(default_factory=list[str])


class EmailChannel(Channel):
    """Asks by email. Construct with `from_settings` (secrets from the environment) or directly in tests."""

    name = "email"

    def __init__(
        self,
        settings: EmailSettings,
        *,
        secret: str,
        smtp_password: str | None = None,
        imap_password: str | None = None,
        sender: MailSender | None = None,
        watcher_options: Mapping[str, Any] | None = None,
        on_handled: Callable[[Handled], None] | None = None,
    ) -> None:
        """Raises SecretTooWeak for a short token secret. `on_handled` hears what became of each incoming mail."""
        super().__init__()
        self.settings = settings
        self.binding = ReplyBinding(secret, settings.address)
        self.sender: MailSender = sender or SmtpSender(settings.smtp, smtp_password)
        self.imap_password = imap_password
        self.watcher_options = dict(watcher_options or {})
        self.watcher: ImapWatcher | None = None
        self.on_handled = on_handled

    @classmethod
    def from_settings(cls, settings: EmailSettings, environ: Mapping[str, str] | None = None) -> EmailChannel:
        """The channel for `[email]`, its secrets read from the environment. Raises ConfigError."""
        smtp = settings.smtp.password_env
        try:
            return cls(
                settings,
                secret=resolve_secret(settings.token_secret_env, environ),
                smtp_password=resolve_secret(smtp, environ) if smtp else None,
                imap_password=resolve_secret(settings.imap.password_env, environ),
            )
        except SecretTooWeak as error:
            raise ConfigError(f"{error} (in {settings.token_secret_env})", key="email.token_secret_env") from None

    @property
    def from_header(self) -> str:
        return formataddr((self.settings.from_name, self.settings.address))

    # --- sending ---------------------------------------------------------------------------------------------------

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        subscription = route.subscription
        if not isinstance(subscription, EmailSubscription):
            raise DeliveryError(
                "email: the channel has no subscription naming recipients; add [[email.subscriptions]] with "
                'to = ["someone@example.org"]'
            )
        token = self.binding.token_for(question.id)
        subject = question_subject(question.questions, self.binding.subject_tag(token))
        envelope = Envelope(
            sender=self.from_header,
            to=list(subscription.to),
            reply_to=self.binding.reply_address(token),
            message_id=self.binding.question_message_id(token),
            subject=subject,
        )
        await self.sender.send(render_question_email(question, envelope))
        return Sent(key=token, ref=EmailRef(message_id=envelope.message_id, subject=subject, to=list(subscription.to)))

    def responders(self, route: Route) -> list[str]:
        """The route's responders, or else exactly the people it was sent to: mail never means "anyone"."""
        subscription = route.subscription
        if isinstance(subscription, EmailSubscription):
            return list(subscription.responders or subscription.to)
        return route.responders

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        """Cancelled or expired: tell the recipients in the thread. Answered: the answerer had a confirmation."""
        if question.status not in ("cancelled", "expired"):
            return
        envelope = self._thread_envelope(delivery, to=EmailRef.model_validate(delivery.ref).to)
        if envelope.to:
            await self.sender.send(render_notice(closed_text(question), envelope))

    async def remind(self, question: QuestionRecord, delivery: Delivery, route: Route) -> None:
        """Send the question again, in its thread, to the people it went to, saying it is still waiting."""
        envelope = self._thread_envelope(delivery, to=EmailRef.model_validate(delivery.ref).to, automatic=False)
        if envelope.to:
            intro = f"Reminder {question.reminders}: this question is still waiting for an answer."
            await self.sender.send(render_question_email(question, envelope, intro=intro))

    def _thread_envelope(
        self, delivery: Delivery, *, to: list[str], reply: Message | None = None, automatic: bool = True
    ) -> Envelope:
        ref = EmailRef.model_validate(delivery.ref)
        first = ref.message_id
        references = [first] if first else []
        in_reply_to = first or None
        if reply is not None:
            message_id = header(reply, "Message-ID").strip()
            earlier = " ".join(headers(reply, "References")).split()
            chain: list[str] = [*references, *earlier[-10:], *([message_id] if message_id else [])]
            references = list(dict.fromkeys(chain))
            in_reply_to = message_id or in_reply_to
        return Envelope(
            sender=self.from_header,
            to=to,
            reply_to=self.binding.reply_address(delivery.key),
            message_id=self.binding.message_id(delivery.key),
            subject=reply_subject(ref.subject or "[handraise]"),
            in_reply_to=in_reply_to,
            references=references,
            automatic=automatic,
        )

    async def _answer(self, reply: Message, delivery: Delivery, message: EmailMessage | str, to: str) -> None:
        """Send a mail back to the person who wrote `reply`; a failure is logged, never raised into the watcher."""
        envelope = self._thread_envelope(delivery, to=[to], reply=reply)
        if isinstance(message, str):
            message = render_notice(message, envelope)
        try:
            await self.sender.send(message)
        except DeliveryError as error:
            log.warning("email: could not reply to %s about question %s: %s", to, delivery.question_id, error.message)

    # --- receiving -------------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Watch the mailbox for replies until cancelled; then close the SMTP connection kept for sending."""
        try:
            if self.imap_password is None:
                log.warning("email: no IMAP password given, so replies are not read")
                await anyio.sleep_forever()
            self.watcher = ImapWatcher(
                self.settings.imap, self.imap_password or "", self._watched, **self.watcher_options
            )
            # One watcher per mailbox across replicas: another replica's takes over when this one's goes.
            imap = self.settings.imap
            await self.leadership.run_alone(
                f"imap {imap.username}@{imap.host}:{imap.port}/{imap.mailbox}", self.watcher.run
            )
        finally:
            with anyio.move_on_after(5, shield=True):  # a polite QUIT, but shutdown does not wait on a stuck server
                await self.sender.aclose()

    async def _watched(self, raw: bytes) -> bool:
        return bool(await self.handle(raw))

    def _done(self, handled: Handled) -> Handled:
        log.info(
            "email: %s%s%s",
            handled.outcome,
            f" question {handled.question_id}" if handled.question_id else "",
            f" ({handled.detail})" if handled.detail else "",
        )
        if self.on_handled is not None:
            self.on_handled(handled)
        return handled

    async def handle(self, raw: bytes) -> Handled:
        """Handle one incoming mail; true when it was the bot's business (the watcher then flags it \\Seen).

        Never raises for anything in the mail itself.
        """
        message = parse_mail(raw)
        match = self.binding.match(message)
        if match is None:
            return self._done(Handled("unmatched"))  # not for the bot: left untouched for humans
        found = await self.replies.find(match.token)  # a reply can beat the recording of its question's mail
        if found is None or not self.binding.verify(found[1].question_id, match.token):
            return self._done(Handled("unknown-token", detail=f"token from {match.by} matches no question"))
        record, delivery = found
        sender, message_id = sender_address(message), header(message, "Message-ID")
        trusted = self.settings.trusted_authserv_id if self.settings.require_dmarc else None
        verdict = refusal(message, own_address=self.settings.address, trusted_authserv_id=trusted)
        if verdict is not None:
            await self.replies.refuse(record, sender, verdict.refusal, detail=verdict.reason, message_id=message_id)
            return self._done(Handled("refused", record.id, sender, f"{verdict.refusal}: {verdict.reason}"))

        def read(record: QuestionRecord, delivery: Delivery) -> Answer:
            text, html = reply_bodies(message)
            reply_text = new_text(text, html=html, sent=self._sent_text(record, delivery))
            parsed = parse_reply(reply_text, record.questions, answered=record.partial.keys())
            return Answer(parsed.items, partial=True, problems=tuple(parsed.problems))

        outcome = await self.replies.answer(
            match.token, by=sender, how="mail", read=read, found=found, message_id=header(message, "Message-ID")
        )
        return self._done(await self._show(outcome, message, delivery, sender))

    async def _show(self, outcome: Outcome, message: Message, delivery: Delivery, sender: str) -> Handled:
        """Reply in the thread with what became of the mail (a refused sender gets nothing: no backscatter)."""
        if isinstance(outcome, NotAllowed):
            return Handled("refused", outcome.record.id, sender, f"not-a-responder: {sender} may not answer")
        if isinstance(outcome, Ended):
            if outcome.record is None:
                return Handled("unknown-token", delivery.question_id, sender, "the question is gone")
            await self._answer(message, delivery, already_answered_text(outcome.record, sender), sender)
            return Handled("closed", outcome.record.id, sender, outcome.record.status)
        if isinstance(outcome, Unreadable):
            record = outcome.record
            unanswered = {q.id for q in record.questions if q.id not in record.partial}
            await self._answer(message, delivery, problem_text(record, outcome.problems, unanswered), sender)
            return Handled("unreadable", record.id, sender, "; ".join(outcome.problems))
        if isinstance(outcome, Noted):
            return Handled("closed", outcome.record.id, sender, "nothing to record")
        record = outcome.record
        if outcome.progress is not None and not outcome.complete:
            lead = "You had already approved this question" if outcome.repeated else "Thanks, your approval is recorded"
            text = f"{lead}: {outcome.progress}.\n\nThe question stays open until enough people approve."
            await self._answer(message, delivery, text, sender)
            return Handled("partial", record.id, sender, outcome.progress)
        if outcome.complete:
            if self.settings.confirmations and record.answer is not None:
                await self._answer(message, delivery, confirmation_text(record, record.answer), sender)
            return Handled("answered", record.id, sender)
        unanswered = set(outcome.still_open)
        envelope = self._thread_envelope(delivery, to=[sender], reply=message)
        follow_up = render_question_email(record, envelope, only=unanswered, intro=follow_up_intro(record, unanswered))
        await self._answer(message, delivery, follow_up, sender)
        return Handled("partial", record.id, sender, f"{len(unanswered)} still open")

    def _sent_text(self, record: QuestionRecord, delivery: Delivery) -> str:
        """Everything the bot sent in this thread, as text: lines of a reply that repeat it are history."""
        subject = EmailRef.model_validate(delivery.ref).subject
        reply_to = self.binding.reply_address(delivery.key)
        return render_text(record) + "\n" + html_to_text(render_html(record, reply_to=reply_to, subject=subject))
