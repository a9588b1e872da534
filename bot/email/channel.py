"""The email channel on the shared base: a question goes out as a mail form; replies in its thread come back, are
checked (bound by token, not automatic, from an allowed sender), read and parsed, and become the answer.

Every reply the bot sends back stays in the question's thread: a confirmation, "already answered by X at T", the
problems with an unreadable reply and how to answer, or a follow-up asking only for the questions still open.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import EmailMessage, Message
from email.utils import formataddr
from typing import Any, Literal

import anyio

from bot.answers import AnswerError
from bot.channel import Channel, DeliveryError, Sent
from bot.config import ConfigError, resolve_secret
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
from bot.ledger import UnknownQuestion
from bot.records import Delivery, QuestionRecord, Resolution
from bot.routing import Route, Router
from core import AskUserQuestionAnswerItem

log = logging.getLogger(__name__)

Outcome = Literal[
    "unmatched", "unknown-token", "refused", "closed", "answered", "duplicate", "partial", "unreadable", "failed"
]


@dataclass(frozen=True)
class Handled:
    """What the channel did with one incoming mail (for logs and tests)."""

    outcome: Outcome
    question_id: str | None = None
    sender: str | None = None
    detail: str = ""


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
    ) -> None:
        """Raises SecretTooWeak for a short token secret."""
        super().__init__()
        self.settings = settings
        self.binding = ReplyBinding(secret, settings.address)
        self.sender: MailSender = sender or SmtpSender(settings.smtp, smtp_password)
        self.imap_password = imap_password
        self.watcher_options = dict(watcher_options or {})
        self.watcher: ImapWatcher | None = None
        self.handled: list[Handled] = []
        self._handled_changed = anyio.Event()
        self._router = Router([self.name], {self.name: settings.subscriptions})

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
            message_id=self.binding.message_id(token),
            subject=subject,
        )
        await self.sender.send(render_question_email(question, envelope))
        ref = {"message_id": envelope.message_id, "subject": subject, "to": list(subscription.to)}
        return Sent(key=token, ref=ref | {"responders": self._allowed(subscription)})

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        """Cancelled or expired: tell the recipients in the thread. Answered: the answerer had a confirmation."""
        if question.status not in ("cancelled", "expired"):
            return
        envelope = self._thread_envelope(delivery, to=list(delivery.ref.get("to", [])))
        if envelope.to:
            await self.sender.send(render_notice(closed_text(question), envelope))

    def _thread_envelope(
        self, delivery: Delivery, *, to: list[str], reply: Message | None = None, automatic: bool = True
    ) -> Envelope:
        first = str(delivery.ref.get("message_id", ""))
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
            subject=reply_subject(str(delivery.ref.get("subject", "[handraise]"))),
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
                self.settings.imap, self.imap_password or "", self.handle, **self.watcher_options
            )
            await self.watcher.run()
        finally:
            with anyio.move_on_after(5, shield=True):  # a polite QUIT, but shutdown does not wait on a stuck server
                await self.sender.aclose()

    async def wait_handled(self, count: int) -> list[Handled]:
        """Wait until at least `count` mails have been handled; returns them all (tests and benchmarks bound it)."""
        while len(self.handled) < count:
            await self._handled_changed.wait()
        return list(self.handled)

    def _done(self, handled: Handled) -> bool:
        log.info(
            "email: %s%s%s",
            handled.outcome,
            f" question {handled.question_id}" if handled.question_id else "",
            f" ({handled.detail})" if handled.detail else "",
        )
        self.handled.append(handled)
        self._handled_changed.set()
        self._handled_changed = anyio.Event()
        return handled.outcome != "unmatched"

    async def handle(self, raw: bytes) -> bool:
        """Handle one incoming mail; True when it was the bot's business (the watcher then flags it \\Seen).

        Never raises for anything in the mail itself.
        """
        message = parse_mail(raw)
        match = self.binding.match(message)
        if match is None:
            return self._done(Handled("unmatched"))  # not for the bot: left untouched for humans
        store = self.ledger.store
        delivery = store.find_delivery(self.name, match.token)
        if delivery is None or not self.binding.verify(delivery.question_id, match.token):
            return self._done(Handled("unknown-token", detail=f"token from {match.by} matches no question"))
        record = store.get_question(delivery.question_id)
        if record is None:
            return self._done(Handled("unknown-token", delivery.question_id, detail="the question is gone"))
        sender = sender_address(message)
        trusted = self.settings.trusted_authserv_id if self.settings.require_dmarc else None
        allowed = self._responders(record, delivery)
        verdict = refusal(message, allowed=allowed, own_address=self.settings.address, trusted_authserv_id=trusted)
        if verdict is not None:
            detail = {"reason": verdict.refusal, "detail": verdict.reason, "message_id": header(message, "Message-ID")}
            store.audit(record.id, "refused", channel=self.name, actor=sender or None, detail=detail)
            return self._done(Handled("refused", record.id, sender, f"{verdict.refusal}: {verdict.reason}"))
        if record.status != "pending":
            await self._answer(message, delivery, already_answered_text(record, sender), sender)
            return self._done(Handled("closed", record.id, sender, record.status))
        text, html = reply_bodies(message)
        reply_text = new_text(text, html=html, sent=self._sent_text(record, delivery))
        parsed = parse_reply(reply_text, record.questions, answered=record.partial.keys())
        return self._done(await self._apply(message, delivery, record, sender, parsed.items, parsed.problems))

    async def _apply(
        self,
        message: Message,
        delivery: Delivery,
        record: QuestionRecord,
        sender: str,
        items: dict[str, AskUserQuestionAnswerItem],
        problems: list[str],
    ) -> Handled:
        ledger = self.ledger
        resolution: Resolution | None = None
        problems = list(problems)
        try:
            if items and {q.id for q in record.questions} <= set(record.partial) | set(items):
                resolution = ledger.submit(record.id, {**record.partial, **items}, by=sender, via=self.name)
            else:
                for item in items.values():
                    resolution = ledger.save_partial(record.id, item, by=sender, via=self.name).resolution
        except AnswerError as error:
            problems.append(str(error))
        except UnknownQuestion as error:
            return Handled("failed", record.id, sender, str(error))
        current = ledger.store.get_question(record.id) or record
        if resolution is not None and resolution.won:
            if self.settings.confirmations and current.answer is not None:
                await self._answer(message, delivery, confirmation_text(current, current.answer), sender)
            return Handled("answered", record.id, sender)
        if resolution is not None:
            await self._answer(message, delivery, already_answered_text(resolution.record, sender), sender)
            return Handled("duplicate", record.id, sender, resolution.record.status)
        unanswered = {q.id for q in current.questions if q.id not in current.partial}
        if problems:
            ledger.store.audit(
                record.id,
                "refused",
                channel=self.name,
                actor=sender,
                detail={"reason": "unreadable", "problems": problems},
            )
            await self._answer(message, delivery, problem_text(current, problems, unanswered), sender)
            return Handled("unreadable", record.id, sender, "; ".join(problems))
        envelope = self._thread_envelope(delivery, to=[sender], reply=message)
        follow_up = render_question_email(
            current, envelope, only=unanswered, intro=follow_up_intro(current, unanswered)
        )
        await self._answer(message, delivery, follow_up, sender)
        return Handled("partial", record.id, sender, f"{len(unanswered)} still open")

    # --- who may answer, and what the bot said -----------------------------------------------------------------------

    @staticmethod
    def _allowed(subscription: EmailSubscription) -> list[str]:
        """Who may answer: the route's responders, or else exactly the people it was sent to (fail closed)."""
        return list(subscription.responders or subscription.to)

    def _responders(self, record: QuestionRecord, delivery: Delivery) -> list[str]:
        # Read from the current config, so that removing someone takes effect for questions already out.
        route = self._router.route(self.name, record.agent)
        if route is not None and isinstance(route.subscription, EmailSubscription):
            return self._allowed(route.subscription)
        return [str(entry) for entry in delivery.ref.get("responders", [])]

    def _sent_text(self, record: QuestionRecord, delivery: Delivery) -> str:
        """Everything the bot sent in this thread, as text: lines of a reply that repeat it are history."""
        subject = str(delivery.ref.get("subject", ""))
        reply_to = self.binding.reply_address(delivery.key)
        return render_text(record) + "\n" + html_to_text(render_html(record, reply_to=reply_to, subject=subject))
