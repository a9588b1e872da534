"""Reply tokens: HMAC of the question id, plus-addresses, Message-IDs, subject tags, and matching a reply."""

from __future__ import annotations

import email
import re
from email import policy
from email.message import Message

import pytest

from bot.email.binding import ReplyBinding, SecretTooWeak

SECRET = "s3cret-for-tests-only-0123456789"


def binding(secret: str = SECRET) -> ReplyBinding:
    return ReplyBinding(secret, "bot@Example.org")


def parse(raw: str) -> Message:
    return email.message_from_string(raw, policy=policy.default)


def test_a_token_is_stable_and_at_least_80_bits() -> None:
    token = binding().token_for("q_abc")
    assert token == binding().token_for("q_abc")
    assert re.fullmatch(r"[a-z2-7]{20}", token)  # 96 bits of HMAC in base32
    assert token != binding().token_for("q_abd")


def test_a_token_depends_on_the_secret() -> None:
    assert binding().token_for("q_abc") != binding("another-secret-of-enough-length").token_for("q_abc")


def test_verify_accepts_only_the_issued_token() -> None:
    token = binding().token_for("q_abc")
    assert binding().verify("q_abc", token)
    assert binding().verify("q_abc", token.upper())
    assert not binding().verify("q_abd", token)
    assert not binding().verify("q_abc", "a" * 20)
    assert not binding().verify("q_abc", "ünïcode")


def test_a_short_secret_is_refused_with_advice() -> None:
    with pytest.raises(SecretTooWeak, match="at least 16"):
        ReplyBinding("short", "bot@example.org")


def test_the_reply_address_is_plus_addressed_on_the_bots_domain() -> None:
    token = binding().token_for("q_abc")
    assert binding().reply_address(token) == f"bot+{token}@example.org"
    assert binding().token_in_address(f"BOT+{token.upper()}@EXAMPLE.ORG") == token
    assert binding().token_in_address(f"other+{token}@example.org") is None
    assert binding().token_in_address(f"bot+{token}@example.com") is None
    assert binding().token_in_address("bot+short@example.org") is None


def test_the_questions_message_id_is_the_same_every_time_and_carries_the_token() -> None:
    token = binding().token_for("q_abc")
    first, second = binding().question_message_id(token), binding().question_message_id(token)
    assert first == second != binding().question_message_id(binding().token_for("q_other"))
    assert binding().token_in_message_ids(first) == token


def test_each_message_id_is_fresh_and_carries_the_token() -> None:
    token = binding().token_for("q_abc")
    first, second = binding().message_id(token), binding().message_id(token)
    assert first != second
    assert binding().token_in_message_ids(f"<x@elsewhere> {first}") == token
    assert binding().token_in_message_ids("<hr.aaaaaaaaaaaaaaaaaaaa.1@evil.example>") is None


def test_match_prefers_the_address() -> None:
    b = binding()
    token, other = b.token_for("q_1"), b.token_for("q_2")
    reply = parse(
        f"From: a@example.org\nTo: Bot <bot+{token}@example.org>\nIn-Reply-To: {b.message_id(other)}\n"
        f"Subject: Re: x [#{other}]\n\nhi"
    )
    found = b.match(reply)
    assert found is not None and (found.token, found.by) == (token, "address")


def test_match_finds_the_token_in_cc() -> None:
    token = binding().token_for("q_1")
    found = binding().match(parse(f"To: someone@example.org\nCc: bot+{token}@example.org\n\nhi"))
    assert found is not None and found.by == "address"


def test_match_falls_back_to_references_then_subject() -> None:
    b = binding()
    token = b.token_for("q_1")
    by_refs = b.match(parse(f"To: bot@example.org\nReferences: <a@b> {b.message_id(token)}\n\nhi"))
    assert by_refs is not None and (by_refs.token, by_refs.by) == (token, "references")
    by_subject = b.match(parse(f"To: bot@example.org\nSubject: Re: [handraise] Deploy? [#{token.upper()}]\n\nhi"))
    assert by_subject is not None and (by_subject.token, by_subject.by) == (token, "subject")


def test_unrelated_mail_matches_nothing() -> None:
    assert binding().match(parse("From: a@example.org\nTo: bot@example.org\nSubject: lunch?\n\nhi")) is None


def test_malformed_headers_do_not_raise() -> None:
    raw = "To: =?utf-8?q?broken\nCc: <<<@@@>>>\nReferences: <<<\nSubject: =?x-unknown?b?////?=\n\nhi"
    assert binding().match(parse(raw)) is None
