"""What is not an answer: automatic replies, bounces, receipts, strangers, and unauthenticated mail."""

from __future__ import annotations

import email
from email import policy
from email.message import EmailMessage, Message

import pytest

from bot.email.classify import authenticated, automatic, refusal, report, sender_allowed

ALLOWED = ["alice@example.org", "@ops.example.org"]


def parse(raw: str) -> Message:
    return email.message_from_string(raw, policy=policy.default)


def human(extra: str = "", sender: str = "Alice <alice@example.org>") -> Message:
    return parse(f"From: {sender}\nTo: bot+x@example.org\nSubject: Re: [handraise] Deploy?\n{extra}\n2\n")


def test_a_plain_human_reply_from_an_allowed_sender_is_an_answer() -> None:
    assert refusal(human(), allowed=ALLOWED) is None


@pytest.mark.parametrize(
    "extra",
    [
        "Auto-Submitted: auto-replied\n",
        "Auto-Submitted: auto-generated; owner-email=x@example.org\n",
        "Precedence: bulk\n",
        "Precedence: auto_reply\n",
        "Precedence: junk\n",
        "Precedence: list\n",
        "X-Autoreply: yes\n",
        "X-Autorespond: 1\n",
        "X-Auto-Response-Suppress: All\n",
        "X-Loop: bot@example.org\n",
        "List-Id: <team.lists.example.org>\n",
    ],
)
def test_automatic_replies_are_recognised_by_header(extra: str) -> None:
    verdict = refusal(human(extra), allowed=ALLOWED)
    assert verdict is not None and verdict.refusal == "auto-reply"


def test_auto_submitted_no_is_a_human() -> None:
    assert automatic(human("Auto-Submitted: no\n")) is None


@pytest.mark.parametrize("subject", ["Automatic reply: Deploy?", "Out of Office: Deploy?", "Abwesenheitsnotiz: x"])
def test_out_of_office_subjects_are_automatic(subject: str) -> None:
    message = parse(f"From: alice@example.org\nSubject: {subject}\n\nI am away")
    assert automatic(message) is not None


def _report(report_type: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = "Mail Delivery System <MAILER-DAEMON@mx.example.org>"
    message["To"] = "bot+x@example.org"
    message["Subject"] = "Undelivered Mail Returned to Sender"
    message.set_content("The mail could not be delivered.")
    status = EmailMessage()
    status.set_content("Reporting-MTA: dns; mx.example.org\n")
    message.add_attachment(status)
    message.replace_header("Content-Type", f"multipart/report; report-type={report_type}; boundary=b")
    return message


def test_a_bounce_is_recognised_by_content_type() -> None:
    verdict = report(_report("delivery-status"))
    assert verdict is not None and verdict.refusal == "bounce"


def test_a_read_receipt_is_recognised_by_content_type() -> None:
    verdict = report(_report("disposition-notification"))
    assert verdict is not None and verdict.refusal == "receipt"


def test_a_report_nested_inside_a_mixed_message_is_still_a_report() -> None:
    outer = EmailMessage()
    outer["From"] = "alice@example.org"
    outer.set_content("see attached")
    outer.add_attachment(_report("delivery-status"))
    assert report(outer) is not None


def test_an_empty_envelope_sender_is_a_bounce() -> None:
    verdict = refusal(human("Return-Path: <>\n"), allowed=ALLOWED)
    assert verdict is not None and verdict.refusal == "bounce"


def test_mailer_daemon_is_a_bounce_even_without_a_report() -> None:
    verdict = refusal(human(sender="MAILER-DAEMON@example.org"), allowed=["@example.org"])
    assert verdict is not None and verdict.refusal == "bounce"


def test_senders_are_allowed_by_address_or_domain() -> None:
    assert sender_allowed("ALICE@example.org", ALLOWED)
    assert sender_allowed("bob@ops.example.org", ALLOWED)
    assert not sender_allowed("bob@example.org", ALLOWED)
    assert not sender_allowed("bob@evil-ops.example.org", ALLOWED)
    assert not sender_allowed("bob@x.ops.example.org", ALLOWED)
    assert not sender_allowed("", ALLOWED)
    assert not sender_allowed("alice@example.org", [])


def test_a_stranger_is_refused() -> None:
    verdict = refusal(human(sender="mallory@evil.example"), allowed=ALLOWED)
    assert verdict is not None and verdict.refusal == "sender-not-allowed" and "mallory@evil.example" in verdict.reason


def test_the_bots_own_mail_is_refused_first() -> None:
    verdict = refusal(human(sender="bot+abc@example.org"), allowed=["@example.org"], own_address="bot@example.org")
    assert verdict is not None and verdict.refusal == "own-mail"


def auth(results: str) -> Message:
    return human("".join(f"Authentication-Results: {line}\n" for line in results.split("\n") if line))


def test_dmarc_pass_from_the_trusted_server_is_authenticated() -> None:
    assert (
        authenticated(auth("mx.example.org; spf=pass; dkim=pass header.d=example.org; dmarc=pass"), "mx.example.org")
        is None
    )


def test_dkim_pass_for_the_from_domain_is_enough() -> None:
    assert authenticated(auth("mx.example.org; dkim=pass header.d=example.org"), "MX.example.org") is None


def test_dkim_pass_for_another_domain_is_not_enough() -> None:
    verdict = authenticated(auth("mx.example.org; dkim=pass header.d=evil.example; dmarc=fail"), "mx.example.org")
    assert verdict is not None and "dmarc=fail" in verdict.reason


def test_only_the_topmost_header_from_the_trusted_server_counts() -> None:
    message = auth("mx.example.org; dmarc=fail\nmx.example.org; dmarc=pass")
    assert authenticated(message, "mx.example.org") is not None


def test_results_from_another_server_are_ignored() -> None:
    verdict = authenticated(auth("evil.example; dmarc=pass"), "mx.example.org")
    assert verdict is not None and "no Authentication-Results" in verdict.reason


def test_authentication_is_checked_only_when_a_trusted_server_is_configured() -> None:
    assert refusal(human(), allowed=ALLOWED) is None
    verdict = refusal(human(), allowed=ALLOWED, trusted_authserv_id="mx.example.org")
    assert verdict is not None and verdict.refusal == "not-authenticated"


def test_missing_headers_are_a_stranger_not_a_crash() -> None:
    verdict = refusal(parse("\n\njust a body"), allowed=ALLOWED)
    assert verdict is not None and verdict.refusal == "sender-not-allowed"
