"""End to end against real servers: the question goes out over SMTP into Dovecot; replies come back over IMAP IDLE."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from bot.email.parse import ParsedReply, parse_reply
from core import AskUserQuestionAnswerItem, AskUserQuestionItem

from .classic_replies import CORPUS, Reply
from .live import Asked, append, live, parse
from .rig import body_of, reply_to
from .samples import DATABASE, FEATURES, NAME, PLAN, SENT_THREE
from .servers import Dovecot, SmtpToDovecot
from .test_classify import _report

pytestmark = [pytest.mark.anyio, pytest.mark.dovecot]

Servers = tuple[Dovecot, SmtpToDovecot]


@pytest.fixture
def servers(dovecot: Dovecot, smtp: SmtpToDovecot) -> Servers:
    return dovecot, smtp


async def test_ask_mail_reply_answer(tmp_path: Path, servers: Servers, mailbox_number: int) -> None:
    async with live(tmp_path, *servers, mailbox_number) as rig:
        asked = rig.ask(DATABASE)
        (question,) = await rig.question_mails(1)
        assert question["To"] == rig.alice and question.get_content_type() == "multipart/alternative"
        await rig.send(reply_to(question, "SQLite", sender=rig.alice), str(question["Reply-To"]))
        answer = await asked.answer()
        assert answer.answers[0].selected == ["SQLite"]
        confirmation = (await rig.question_mails(2))[1]
        assert "-> SQLite" in body_of(confirmation) and confirmation["In-Reply-To"]
        with anyio.fail_after(5):  # the processed reply is flagged \Seen in the bot's mailbox
            while not servers[0].seen(rig.bot):
                await anyio.sleep(0.02)


async def test_a_reply_appended_over_imap_answers(tmp_path: Path, servers: Servers, mailbox_number: int) -> None:
    async with live(tmp_path, *servers, mailbox_number) as rig:
        asked = rig.ask(DATABASE, FEATURES)
        (question,) = await rig.question_mails(1)
        await rig.append(reply_to(question, "1: postgres\n2: auth and billing", sender=rig.alice))
        answer = await asked.answer()
        assert [item.selected for item in answer.answers] == [["Postgres (Recommended)"], ["Auth", "Billing"]]


async def test_every_reply_style_is_read(tmp_path: Path, servers: Servers, mailbox_number: int) -> None:
    async with live(tmp_path, *servers, mailbox_number, confirmations=False) as rig:
        cases: list[tuple[Reply, list[AskUserQuestionItem], ParsedReply, Asked]] = []
        for reply in CORPUS:
            questions = [DATABASE, FEATURES, PLAN] if reply.sent == SENT_THREE else [DATABASE]
            cases.append((reply, questions, parse_reply(reply.expected, questions), rig.ask(*questions)))
        mails = rig.in_ask_order(await rig.question_mails(len(cases)))
        for (reply, *_), mail in zip(cases, mails, strict=True):
            await rig.append(reply_to(mail, reply.text, html=reply.html, sender=rig.alice))
        await rig.handled(len(cases))
        for reply, questions, expected, asked in cases:
            if expected.problems:  # e.g. nothing but the quote: the question stays open
                assert not asked.done.is_set(), reply.name
                continue
            answer = await asked.answer()
            items = {item.id: item for item in answer.answers}
            for question in questions:
                want = expected.items.get(question.id, AskUserQuestionAnswerItem(id=question.id))
                assert items[question.id] == want, reply.name


GRAMMAR: list[tuple[list[AskUserQuestionItem], str, dict[str, AskUserQuestionAnswerItem]]] = [
    ([DATABASE], "2", {"db": AskUserQuestionAnswerItem(id="db", selected=["SQLite"])}),
    ([DATABASE], "2.", {"db": AskUserQuestionAnswerItem(id="db", selected=["SQLite"])}),
    ([DATABASE], "#3", {"db": AskUserQuestionAnswerItem(id="db", selected=["MySQL"])}),
    ([DATABASE], "option 1", {"db": AskUserQuestionAnswerItem(id="db", selected=["Postgres (Recommended)"])}),
    ([DATABASE], "POSTGRES", {"db": AskUserQuestionAnswerItem(id="db", selected=["Postgres (Recommended)"])}),
    ([DATABASE], "mysql (recommended)", {"db": AskUserQuestionAnswerItem(id="db", selected=["MySQL"])}),
    ([DATABASE], "Use Redis", {"db": AskUserQuestionAnswerItem(id="db", custom="Use Redis")}),
    (
        [FEATURES],
        "1, 2 and 4",
        {"features": AskUserQuestionAnswerItem(id="features", selected=["Auth", "Billing", "Export"])},
    ),
    ([FEATURES], "auth\nexport", {"features": AskUserQuestionAnswerItem(id="features", selected=["Auth", "Export"])}),
    (
        [FEATURES],
        "1 3",
        {"features": AskUserQuestionAnswerItem(id="features", selected=["Auth", "Search and replace"])},
    ),
    ([PLAN], "APPROVED", {"plan": AskUserQuestionAnswerItem(id="plan", selected=["Approve"])}),
    ([PLAN], "Do step 3 first", {"plan": AskUserQuestionAnswerItem(id="plan", custom="Do step 3 first")}),
    ([NAME], "payments-api", {"name": AskUserQuestionAnswerItem(id="name", custom="payments-api")}),
    ([DATABASE], "skip", {"db": AskUserQuestionAnswerItem(id="db")}),
    (
        [DATABASE, FEATURES, PLAN],
        "1) 2\n2. billing\n3: skip",
        {
            "db": AskUserQuestionAnswerItem(id="db", selected=["SQLite"]),
            "features": AskUserQuestionAnswerItem(id="features", selected=["Billing"]),
            "plan": AskUserQuestionAnswerItem(id="plan"),
        },
    ),
]


async def test_every_grammar_case_answers_as_specified(tmp_path: Path, servers: Servers, mailbox_number: int) -> None:
    async with live(tmp_path, *servers, mailbox_number, confirmations=False) as rig:
        asks = [rig.ask(*questions) for questions, _, _ in GRAMMAR]
        mails = rig.in_ask_order(await rig.question_mails(len(GRAMMAR)))
        for (_, text, _), mail in zip(GRAMMAR, mails, strict=True):
            await rig.append(reply_to(mail, text, sender=rig.alice))
        for (questions, text, expected), asked in zip(GRAMMAR, asks, strict=True):
            answer = await asked.answer()
            assert {item.id: item for item in answer.answers} == expected, text
            assert len(answer.answers) == len(questions)


async def test_a_spoofed_sender_and_a_forged_token_change_nothing(
    tmp_path: Path, servers: Servers, mailbox_number: int
) -> None:
    async with live(tmp_path, *servers, mailbox_number) as rig:
        asked = rig.ask(DATABASE)
        (question,) = await rig.question_mails(1)
        await rig.send(reply_to(question, "3", sender="Alice <alice@evil.example>"), str(question["Reply-To"]))
        forged = reply_to(
            question,
            "3",
            sender=rig.alice,
            to=f"bot{mailbox_number}+aaaaaaaaaaaaaaaaaaaa@example.org",
            references=False,
            subject="Re: [handraise] Database",
        )
        await rig.append(forged)
        handled = await rig.handled(2)
        assert sorted(h.outcome for h in handled) == ["refused", "unknown-token"]
        assert not asked.done.is_set()
        assert len(servers[0].messages(rig.alice)) == 1  # nothing was sent back to anyone
        await rig.append(reply_to(question, "1", sender=rig.alice))
        assert (await asked.answer()).answers[0].selected == ["Postgres (Recommended)"]


async def test_an_auto_reply_and_a_bounce_are_not_answers(
    tmp_path: Path, servers: Servers, mailbox_number: int
) -> None:
    async with live(tmp_path, *servers, mailbox_number) as rig:
        asked = rig.ask(DATABASE)
        (question,) = await rig.question_mails(1)
        auto = reply_to(question, "I am away until Monday.", sender=rig.alice, extra={"Auto-Submitted": "auto-replied"})
        await rig.append(auto)
        bounce = _report("delivery-status")
        bounce.replace_header("To", str(question["Reply-To"]))
        await rig.append(bounce.as_bytes())
        handled = await rig.handled(2)
        assert [h.outcome for h in handled] == ["refused", "refused"]
        assert "auto-reply" in handled[0].detail and "bounce" in handled[1].detail
        assert not asked.done.is_set()
        refused = [e for e in await rig.ledger.store.history() if e.kind == "refused"]
        assert len(refused) == 2


async def test_an_unreadable_reply_gets_help_and_the_question_stays_open(
    tmp_path: Path, servers: Servers, mailbox_number: int
) -> None:
    async with live(tmp_path, *servers, mailbox_number) as rig:
        asked = rig.ask(DATABASE)
        (question,) = await rig.question_mails(1)
        await rig.append(reply_to(question, "option 7", sender=rig.alice))
        help_mail = (await rig.question_mails(2))[1]
        assert "there is no option 7" in body_of(help_mail) and not asked.done.is_set()
        await rig.append(reply_to(help_mail, "2", sender=rig.alice))
        assert (await asked.answer()).answers[0].selected == ["SQLite"]


async def test_unanswered_questions_are_asked_for_again_alone(
    tmp_path: Path, servers: Servers, mailbox_number: int
) -> None:
    async with live(tmp_path, *servers, mailbox_number, confirmations=False) as rig:
        asked = rig.ask(DATABASE, FEATURES, PLAN)
        (question,) = await rig.question_mails(1)
        await rig.append(reply_to(question, "1: 2\n\n> quoted", sender=rig.alice))
        follow_up = (await rig.question_mails(2))[1]
        text = body_of(follow_up)
        assert "Still open" in text and "2. Which features" in text and "3. Approve" in text
        assert "Which database" not in text
        await rig.append(reply_to(follow_up, "2: export\n3: approve", sender="dana@ops.example.org"))
        answer = await asked.answer()
        assert [item.selected for item in answer.answers] == [["SQLite"], ["Export"], ["Approve"]]


async def test_a_processed_reply_can_be_moved_to_a_folder(
    tmp_path: Path, servers: Servers, mailbox_number: int
) -> None:
    async with live(tmp_path, *servers, mailbox_number, imap={"processed_folder": "Processed"}) as rig:
        asked = rig.ask(DATABASE)
        (question,) = await rig.question_mails(1)
        await rig.append(reply_to(question, "1", sender=rig.alice))
        await asked.answer()
        inbox = servers[0].maildir(rig.bot)
        folder = inbox / ".Processed"

        def moved() -> bool:
            # Dovecot moves within maildir as link-then-expunge: wait for both halves, not just the first.
            arrived = [p for sub in ("cur", "new") for p in (folder / sub).glob("*")]
            left = [p for sub in ("cur", "new") for p in (inbox / sub).glob("*")]
            return bool(arrived) and not left

        with anyio.fail_after(5):
            while not moved():
                await anyio.sleep(0.02)


async def test_a_reply_arriving_while_the_imap_server_is_down_is_not_lost(
    tmp_path: Path, own_dovecot: Dovecot, smtp: SmtpToDovecot, mailbox_number: int
) -> None:
    async with live(tmp_path, own_dovecot, smtp, mailbox_number) as rig:
        asked = rig.ask(DATABASE)
        # The question mail goes out through the shared SMTP server; its delivery record is what the reply needs.
        with anyio.fail_after(10):
            while not (records := await rig.ledger.store.list_questions()) or not (
                delivery := await rig.ledger.store.get_delivery(records[0].id, "email")
            ):
                await anyio.sleep(0.01)
        assert delivery is not None and rig.channel.watcher is not None
        sessions = rig.channel.watcher.sessions
        own_dovecot.stop()  # mid-IDLE
        with anyio.fail_after(10):
            while rig.channel.watcher.connected:
                await anyio.sleep(0.01)
        question = parse(
            f"From: handraise <{rig.bot}>\r\nTo: {rig.alice}\r\nSubject: {delivery.ref['subject']}\r\n"
            f"Reply-To: {rig.channel.binding.reply_address(delivery.key)}\r\n"
            f"Message-ID: {delivery.ref['message_id']}\r\n\r\nq\r\n".encode()
        )
        reply = reply_to(question, "3", sender=rig.alice)
        own_dovecot.drop(reply, rig.bot)
        await anyio.sleep(0.3)  # the watcher is failing to reconnect meanwhile
        assert not asked.done.is_set() and not rig.channel.watcher.connected
        own_dovecot.start()
        assert (await asked.answer()).answers[0].selected == ["MySQL"]
        assert rig.channel.watcher.sessions > sessions


async def test_idle_is_renewed_before_the_server_times_it_out(
    tmp_path: Path, servers: Servers, mailbox_number: int
) -> None:
    async with live(tmp_path, *servers, mailbox_number, watcher={"idle_seconds": 0.3}) as rig:
        asked = rig.ask(DATABASE)
        (question,) = await rig.question_mails(1)
        await anyio.sleep(1.0)  # several IDLE rounds
        await rig.append(reply_to(question, "2", sender=rig.alice))
        assert (await asked.answer()).answers[0].selected == ["SQLite"]


async def test_unmatched_mail_is_left_unseen_for_humans(tmp_path: Path, servers: Servers, mailbox_number: int) -> None:
    async with live(tmp_path, *servers, mailbox_number) as rig:
        await append(servers[0], rig.bot, b"From: carol@example.org\r\nTo: x@example.org\r\nSubject: lunch?\r\n\r\nhi")
        assert [h.outcome for h in await rig.handled(1)] == ["unmatched"]
        assert not servers[0].seen(rig.bot)
