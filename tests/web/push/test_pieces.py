"""The pure pieces of Web Push, one behaviour each: what a notification carries and how it is trimmed, which options
are buttons, the answer tokens, the encryption (decrypted by the test's own RFC 8291 code), `Retry-After`, and the
JWT's audience."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.store.records import QuestionRecord
from bot.web.push.answer_tokens import AnswerTokenError, AnswerTokens, device_of
from bot.web.push.encryption import MAX_PLAINTEXT, PayloadTooLarge, encrypt
from bot.web.push.keys import VapidKeys, new_private_key
from bot.web.push.notification import option_of, render_notification, tappable_options
from bot.web.push.sender import origin_of, retry_after_seconds
from core import AskUserQuestionItem
from tests.web.push.push_service import Device, decrypt


def record(*questions: dict[str, Any]) -> QuestionRecord:
    items = [AskUserQuestionItem.model_validate(question) for question in questions]
    return QuestionRecord(id="q-1", questions=items, status="pending", created_at=datetime.now(UTC))


def options(*labels: str) -> list[dict[str, str]]:
    return [{"label": label} for label in labels]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ({"id": "a", "question": "?", "options": options("yes", "no", "maybe")}, [0, 1]),
        ({"id": "a", "question": "?", "options": options("Other…", "yes", "no")}, [1, 2]),
        ({"id": "a", "question": "?", "options": options("yes", "Something else...")}, [0]),
        ({"id": "a", "question": "?"}, []),
        ({"id": "a", "question": "?", "options": options("a", "b"), "multi_select": True}, []),
        (
            {
                "id": "a",
                "question": "?",
                "detail": "plan",
                "options": options("Approve", "Deny…"),
                "intent": {"kind": "plan-review", "approve": "Approve", "reject": "Deny…"},
            },
            [0],
        ),
    ],
    ids=["first two", "other is words", "trailing dots", "free text", "multi-select", "reject option"],
)
def test_which_options_are_buttons(question: dict[str, Any], expected: list[int]) -> None:
    assert tappable_options(record(question)) == expected


def test_several_questions_get_no_buttons() -> None:
    both = record({"id": "a", "question": "1?", "options": options("x")}, {"id": "b", "question": "2?"})
    payload = json.loads(render_notification(both, "token"))
    assert payload["actions"] == []
    assert payload["body"] == "1) 1?\n2) 2?"


@pytest.mark.parametrize("action", ["o", "x0", "o-1", "o1.5", "o٣", "o 1", "o1234", ""])
def test_action_ids_that_name_no_option(action: str) -> None:
    assert option_of(action) is None


@settings(max_examples=60, deadline=None)
@given(text=st.text(min_size=1, max_size=2000), label=st.text(min_size=1, max_size=300))
def test_any_question_fits_one_record(text: str, label: str) -> None:
    payload = render_notification(
        record({"id": "a", "question": text, "options": [{"label": label}, {"label": "no"}]}), "t" * 200
    )
    assert len(payload) <= MAX_PLAINTEXT
    assert json.loads(payload)["answer_token"] == "t" * 200


def test_answer_tokens_are_bound_and_signed() -> None:
    tokens = AnswerTokens(b"k" * 32)
    token = tokens.issue("q-1", "alice@example.org", "https://push.example/1")
    read = tokens.read(token)
    assert (read.question_id, read.person, read.device) == (
        "q-1",
        "alice@example.org",
        device_of("https://push.example/1"),
    )
    assert tokens.read(tokens.issue("q-1", "alice@example.org", "https://push.example/1")).nonce != read.nonce
    with pytest.raises(AnswerTokenError):
        AnswerTokens(b"another key" * 3).read(token)
    for garbage in ("", ".", "a.b", "x" * 3000, "é", token.replace(".", "", 1)):
        with pytest.raises(AnswerTokenError):
            tokens.read(garbage)


def test_a_payload_decrypts_with_an_independent_implementation() -> None:
    device = Device(endpoint="https://push.example/1")
    body = encrypt(b'{"hello": "world"}', device.public, device.auth)
    assert decrypt(body, device.key, device.auth) == b'{"hello": "world"}'
    assert encrypt(b"same", device.public, device.auth) != encrypt(b"same", device.public, device.auth)


def test_a_full_record_is_4096_bytes_and_more_is_refused() -> None:
    device = Device(endpoint="https://push.example/1")
    assert len(encrypt(b"x" * MAX_PLAINTEXT, device.public, device.auth)) == 4096
    with pytest.raises(PayloadTooLarge):
        encrypt(b"x" * (MAX_PLAINTEXT + 1), device.public, device.auth)


def test_retry_after_in_seconds_or_as_a_date() -> None:
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("-3") is None
    assert retry_after_seconds("9" * 40) == 10**6
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (retry_after_seconds(later) or 0) <= 31
    earlier = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds(earlier) == 0.0


@pytest.mark.parametrize(
    ("endpoint", "origin"),
    [
        ("https://fcm.googleapis.com/fcm/send/abc", "https://fcm.googleapis.com"),
        ("https://Updates.Push.Services.Mozilla.com:443/wpush/v2/x", "https://updates.push.services.mozilla.com"),
        ("http://127.0.0.1:8123/push/x", "http://127.0.0.1:8123"),
    ],
)
def test_the_jwt_audience_is_the_push_services_origin(endpoint: str, origin: str) -> None:
    assert origin_of(endpoint) == origin


def test_the_vapid_header_names_the_key_and_a_jwt_within_a_day() -> None:
    import jwt
    from cryptography.hazmat.primitives.asymmetric import ec

    from tests.web.push.push_service import unb64

    keys = VapidKeys(new_private_key(), "mailto:ops@example.org")
    header = keys.authorization("https://push.example.org", now=1_000_000.0)
    params = dict(part.strip().split("=", 1) for part in header.removeprefix("vapid ").split(","))
    assert params["k"] == keys.public_key
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(params["k"]))
    claims = jwt.decode(
        params["t"], public, algorithms=["ES256"], audience="https://push.example.org", options={"verify_exp": False}
    )
    assert claims["sub"] == "mailto:ops@example.org"
    assert isinstance(claims["exp"], int) and 0 < claims["exp"] - 1_000_000 <= 24 * 3600


def test_a_kept_key_of_another_kind_is_refused() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    from bot.web.push.keys import VapidKeyError
    from tests.web.push.push_service import b64

    for key in (rsa.generate_private_key(65537, 2048), ec.generate_private_key(ec.SECP384R1())):
        der = key.private_bytes(
            serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        with pytest.raises(VapidKeyError):
            VapidKeys(b64(der), "mailto:ops@example.org")


def test_links_are_absolute_under_public_url_and_relative_without_it() -> None:
    question = record({"id": "a", "question": "Ship?", "options": options("yes", "no")})
    relative = json.loads(render_notification(question, "token"))
    absolute = json.loads(render_notification(question, "token", "https://handraise.example.org"))
    assert relative["answer_url"].startswith("/") and relative["url"].startswith("/")
    assert absolute["answer_url"] == "https://handraise.example.org" + relative["answer_url"]
    assert absolute["url"] == "https://handraise.example.org" + relative["url"]
