"""The email channel on the shared base, with mail handed to it by hand: every decision it makes about a reply."""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from bot.config import Config
from bot.email.channel import EmailChannel
from bot.installation import build_channels
from bot.questions.ledger import Ledger
from bot.settings.errors import ConfigError
from bot.store.sqlite.async_store import SqliteStore
from core import AbortController, AskUserQuestionAnswer, AskUserQuestionAnswerItem, UserQuestionError
from tests.fake_clock import FakeClock

from .rig import BOT, EmailRig, body_of, email_settings, reply_to
from .samples import DATABASE, FEATURES, PLAN
from .test_classify import _report

pytestmark = pytest.mark.anyio


def answer_of(rig: EmailRig) -> AskUserQuestionAnswer:
    (outcome,) = rig.outcome
    assert isinstance(outcome, AskUserQuestionAnswer), outcome
    return outcome


async def test_the_question_goes_to_the_routes_recipients_with_a_reply_token(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        token = rig.channel.binding.token_for(rig.question_id())
        assert mail["To"] == "alice@example.org" and mail["From"] == f"handraise <{BOT}>"
        assert mail["Reply-To"] == f"bot+{token}@example.org"
        assert mail["Subject"] == f"[handraise] Database [#{token}]"
        delivery = await rig.ledger.store.get_delivery(rig.question_id(), "email")
        assert delivery is not None and delivery.key == token
        assert delivery.ref["message_id"] == mail["Message-ID"]
        group.cancel_scope.cancel()


async def test_a_reply_answers_and_the_answerer_gets_a_confirmation(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        assert await rig.channel.handle(reply_to(mail, "2\n\nOn Tue, 2 Dec 2026 bot@example.org wrote:\n> x"))
    assert answer_of(rig).answers[0].selected == ["SQLite"]
    record = await rig.ledger.store.get_question(rig.question_id())
    assert record is not None and (record.answered_by, record.answered_via) == ("alice@example.org", "email")
    confirmation = rig.sender.sent[1]
    assert confirmation["To"] == "alice@example.org" and "-> SQLite" in body_of(confirmation)
    assert confirmation["In-Reply-To"] and confirmation["Auto-Submitted"] == "auto-replied"


async def test_confirmations_can_be_turned_off(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path, email_settings(confirmations=False))
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        await rig.channel.handle(reply_to(await rig.question_mail(), "SQLite"))
    assert len(rig.sender.sent) == 1


async def test_a_later_reply_is_told_who_answered_first_and_when(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        await rig.channel.handle(reply_to(mail, "1"))
    await rig.channel.handle(reply_to(rig.sender.sent[0], "3", sender="bob@ops.example.org"))
    late = rig.sender.sent[-1]
    assert late["To"] == "bob@ops.example.org"
    assert "already answered by alice@example.org at" in body_of(late) and "Your reply was not used" in body_of(late)
    assert answer_of(rig).answers[0].selected == ["Postgres (Recommended)"]
    assert rig.handled[-1].outcome == "closed"


async def test_a_sender_not_on_the_allow_list_changes_nothing_and_gets_no_mail(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        assert await rig.channel.handle(reply_to(mail, "2", sender="Alice <alice@evil.example>"))
        assert rig.handled[-1].outcome == "refused"
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and record.status == "pending"
        assert len(rig.sender.sent) == 1  # no backscatter to a spoofed address
        refused = [e for e in await rig.ledger.store.history() if e.kind == "refused"]
        assert refused and refused[0].detail["reason"] == "not-a-responder"
        await rig.channel.handle(reply_to(mail, "2", sender="carol@ops.example.org"))  # allowed by domain
    assert answer_of(rig).answers[0].selected == ["SQLite"]


async def test_a_forged_token_matches_nothing(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        forged = reply_to(mail, "2", to="bot+aaaaaaaaaaaaaaaaaaaa@example.org", references=False, subject="Re: hi")
        assert await rig.channel.handle(forged)
        assert rig.handled[-1].outcome == "unknown-token"
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and record.status == "pending" and len(rig.sender.sent) == 1
        group.cancel_scope.cancel()


@pytest.mark.parametrize(
    "extra", [{"Auto-Submitted": "auto-replied"}, {"X-Autoreply": "yes"}, {"Precedence": "bulk"}, {"List-Id": "<l>"}]
)
async def test_an_automatic_reply_is_not_an_answer(tmp_path: Path, extra: dict[str, str]) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        await rig.channel.handle(reply_to(mail, "I am out of the office until Monday.", extra=extra))
        assert rig.handled[-1].outcome == "refused" and "auto-reply" in rig.handled[-1].detail
        assert len(rig.sender.sent) == 1
        group.cancel_scope.cancel()


async def test_a_bounce_is_not_an_answer(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        bounce = _report("delivery-status")
        bounce.replace_header("To", str(mail["Reply-To"]))
        await rig.channel.handle(bounce.as_bytes())
        assert rig.handled[-1].outcome == "refused" and "bounce" in rig.handled[-1].detail
        group.cancel_scope.cancel()


async def test_mail_for_humans_is_left_alone(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    assert not await rig.channel.handle(b"From: alice@example.org\r\nTo: bot@example.org\r\nSubject: lunch\r\n\r\nhi")
    assert rig.handled[-1].outcome == "unmatched"


async def test_an_unreadable_reply_gets_the_problem_and_the_accepted_forms(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        await rig.channel.handle(reply_to(mail, "7"))
        help_mail = rig.sender.sent[-1]
        assert "there is no option 7; the options are numbered 1 to 3" in body_of(help_mail)
        assert "How to answer" in body_of(help_mail) and help_mail["Subject"].startswith("Re: [handraise]")
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and record.status == "pending"
        await rig.channel.handle(reply_to(help_mail, "3"))  # replying to the help mail works too
    assert answer_of(rig).answers[0].selected == ["MySQL"]


async def test_several_questions_keep_partial_answers_and_ask_only_for_the_rest(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE, FEATURES, PLAN)
        mail = await rig.question_mail()
        await rig.channel.handle(reply_to(mail, "1: 2"))
        follow_up = rig.sender.sent[-1]
        text = body_of(follow_up)
        assert "Thanks, I have your answers to question 1. Still open:" in text
        assert "2. Which features" in text and "3. Approve the migration plan?" in text
        assert "Which database" not in text
        assert follow_up.get_content_type() == "multipart/alternative"
        record = await rig.ledger.store.get_question(rig.question_id())
        assert record is not None and set(record.partial) == {"db"} and record.status == "pending"
        await rig.channel.handle(reply_to(follow_up, "2: auth, export\n3: approve", sender="bob@ops.example.org"))
    answers = {item.id: item for item in answer_of(rig).answers}
    assert answers["db"].selected == ["SQLite"]
    assert answers["features"].selected == ["Auth", "Export"]
    assert answers["plan"].selected == ["Approve"]


async def test_a_skip_counts_as_an_answer_to_that_question(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE, FEATURES)
        await rig.channel.handle(reply_to(await rig.question_mail(), "1: skip\n2: 1"))
    answers = answer_of(rig).answers
    assert answers[0] == AskUserQuestionAnswerItem(id="db", selected=[])


async def test_cancelling_sends_no_longer_needed_and_later_replies_hear_it(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    controller = AbortController()
    async with anyio.create_task_group() as group:
        group.start_soon(partial(rig.ask, DATABASE, signal=controller.signal))
        await rig.question_mail()
        controller.abort()
    notice = (await rig.sender.wait_for(2))[1]
    assert "no longer needed" in body_of(notice) and notice["In-Reply-To"] == rig.sender.sent[0]["Message-ID"]
    assert notice["To"] == "alice@example.org"
    await rig.channel.handle(reply_to(rig.sender.sent[0], "2"))
    assert "no longer needed" in body_of(rig.sender.sent[-1])


async def test_expiry_sends_expired(tmp_path: Path) -> None:
    clock = FakeClock()
    rig = EmailRig(tmp_path, email_settings({"to": ["alice@example.org"], "expire_after": "2h"}), clock)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        await rig.question_mail()
        await clock.advance(timedelta(hours=2))
    error = rig.outcome[0]
    assert isinstance(error, UserQuestionError) and error.code == "ASK_TIMEOUT"
    assert "expired" in body_of((await rig.sender.wait_for(2))[1])


async def test_an_answer_from_another_channel_sends_no_mail_but_later_replies_hear_who(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        await rig.question_mail()
        item = AskUserQuestionAnswerItem(id="db", selected=["MySQL"])
        await rig.ledger.submit(rig.question_id(), {"db": item}, by="U123", via="slack")
    assert len(rig.sender.sent) == 1
    await rig.channel.handle(reply_to(rig.sender.sent[0], "2"))
    assert "already answered by U123 via slack" in body_of(rig.sender.sent[-1])


async def test_replies_match_by_references_or_by_subject_tag_when_the_plus_address_is_lost(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE, FEATURES)
        mail = await rig.question_mail()
        await rig.channel.handle(reply_to(mail, "1: 1", to=BOT))
        await rig.channel.handle(reply_to(mail, "2: 2", to=BOT, references=False))
    assert [h.outcome for h in rig.handled] == ["partial", "answered"]


async def test_an_html_only_reply_is_read(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        await rig.channel.handle(reply_to(mail, "", html="<div>sqlite</div><blockquote>old</blockquote>"))
    assert answer_of(rig).answers[0].selected == ["SQLite"]


async def test_with_dmarc_required_only_authenticated_replies_count(tmp_path: Path) -> None:
    settings = email_settings(require_dmarc=True, trusted_authserv_id="mx.example.org")
    rig = EmailRig(tmp_path, settings)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        await rig.channel.handle(reply_to(mail, "1"))
        assert rig.handled[-1].outcome == "refused"
        passed = {"Authentication-Results": "mx.example.org; dkim=pass header.d=example.org; dmarc=pass"}
        await rig.channel.handle(reply_to(mail, "1", extra=passed))
    assert answer_of(rig).answers[0].selected == ["Postgres (Recommended)"]


async def test_without_responders_only_the_recipients_may_answer(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path, email_settings({"to": ["alice@example.org"]}))
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        await rig.channel.handle(reply_to(mail, "1", sender="bob@example.org"))
        assert rig.handled[-1].outcome == "refused"
        await rig.channel.handle(reply_to(mail, "1"))
    assert answer_of(rig).answers[0].selected == ["Postgres (Recommended)"]


async def test_a_failed_send_fails_the_ask_naming_the_server(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    rig.sender.fail_with = "email: could not send through the SMTP server smtp.example.org:587 after 4 attempts"
    await rig.ask(DATABASE)
    error = rig.outcome[0]
    assert isinstance(error, UserQuestionError) and error.code == "DELIVERY_FAILED" and "smtp.example.org" in str(error)


async def test_a_request_not_routed_to_email_passes_on(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path, email_settings({"to": ["alice@example.org"], "agents": ["deploy-*"]}))
    await rig.ask(DATABASE)
    error = rig.outcome[0]
    assert isinstance(error, UserQuestionError) and error.code == "NO_PROVIDER"
    assert rig.sender.sent == []


def test_from_settings_reads_the_secrets_from_the_environment() -> None:
    environ = {"HANDRAISE_EMAIL_SECRET": "x" * 32, "IMAP_PW": "pw"}
    channel = EmailChannel.from_settings(email_settings(), environ)
    assert channel.imap_password == "pw"
    with pytest.raises(ConfigError, match="HANDRAISE_EMAIL_SECRET is not set"):
        EmailChannel.from_settings(email_settings(), {"IMAP_PW": "pw"})
    with pytest.raises(ConfigError, match="at least 16"):
        EmailChannel.from_settings(email_settings(), {"HANDRAISE_EMAIL_SECRET": "short", "IMAP_PW": "pw"})


def test_the_configured_email_channel_is_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDRAISE_EMAIL_SECRET", "y" * 32)
    monkeypatch.setenv("IMAP_PW", "pw")
    config = Config.model_validate({"email": email_settings().model_dump(), "bot": {"answerers": ["email"]}})
    ledger: Any = Ledger(SqliteStore.open(tmp_path / "db"), FakeClock())
    channels = build_channels(config, ledger)
    assert [type(channel) for channel in channels] == [EmailChannel]


async def test_two_approvals_by_mail_each_hear_how_far_it_came_and_both_are_named(tmp_path: Path) -> None:
    settings = email_settings(
        {"to": ["alice@example.org"], "responders": ["alice@example.org", "@ops.example.org"], "approvals": 2}
    )
    rig = EmailRig(tmp_path, settings)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, PLAN)
        mail = await rig.question_mail()
        first = await rig.channel.handle(reply_to(mail, "approve"))
        assert first.outcome == "partial"
        assert "your approval is recorded: 1 of 2 approvals: alice@example.org" in body_of(rig.sender.sent[-1])
        assert (await rig.channel.handle(reply_to(mail, "Approve"))).outcome == "partial"  # the same person again
        assert "You had already approved" in body_of(rig.sender.sent[-1])
        await rig.channel.handle(reply_to(mail, "1", sender="bob@ops.example.org"))
    assert answer_of(rig).answers[0].selected == ["Approve"]
    record = await rig.ledger.store.get_question(rig.question_id())
    assert record is not None and record.answered_by == "alice@example.org, bob@ops.example.org"


async def test_a_reminder_goes_to_the_recipients_in_the_same_thread(tmp_path: Path) -> None:
    clock = FakeClock()
    rig = EmailRig(tmp_path, email_settings({"to": ["alice@example.org"], "remind_every": "15m"}), clock)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, DATABASE)
        mail = await rig.question_mail()
        await anyio.wait_all_tasks_blocked()  # the reminder waits for its time
        await clock.advance(timedelta(minutes=15))
        reminder = (await rig.sender.wait_for(2))[1]
        assert reminder["To"] == "alice@example.org" and reminder["In-Reply-To"] == mail["Message-ID"]
        assert "Reminder 1: this question is still waiting for an answer." in body_of(reminder)
        assert reminder["Reply-To"] == mail["Reply-To"]
        group.cancel_scope.cancel()
