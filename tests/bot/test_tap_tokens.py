"""Tap tokens on their own (the kit's, used by ntfy and Web Push): what handraise signed reads back as issued; a token
garbled, oversize, forged, tampered with, signed with another key or for another purpose is refused before anything
is done with it, and a token names its own question and person, never another's."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from itsdangerous import URLSafeSerializer

from bot.channels.tap_tokens import MAX_TOKEN, Tap, TapTokenError, TapTokens, device_of

SECRET = "tk_secret"
TOKENS = TapTokens(SECRET, purpose="ntfy")


def test_a_token_reads_back_as_issued_and_each_is_new() -> None:
    token = TOKENS.issue("q_1", "alice@example.org", choice=(0, 2))
    tap = TOKENS.read(token)
    assert tap == Tap("q_1", "alice@example.org", (0, 2), "", tap.nonce)
    assert TOKENS.read(TOKENS.issue("q_1", "alice@example.org", choice=(0, 2))).nonce != tap.nonce
    assert SECRET not in token


def test_a_device_token_carries_the_device_and_no_choice() -> None:
    device = device_of("https://push.example/send/1")
    tap = TOKENS.read(TOKENS.issue("q_1", "bob", device=device))
    assert (tap.question_id, tap.person, tap.choice, tap.device) == ("q_1", "bob", None, device)
    assert device_of("https://push.example/send/2") != device and len(device) == 24


def test_another_key_or_another_purpose_reads_nothing() -> None:
    token = TOKENS.issue("q_1", "alice", choice=(0, 0))
    for other in (TapTokens("tk_rotated", purpose="ntfy"), TapTokens(SECRET, purpose="web push")):
        with pytest.raises(TapTokenError):
            other.read(token)


def _tampered(token: str, change: dict[str, Any]) -> str:
    """The token with its body changed and its old signature kept."""
    payload, signature = token.rsplit(".", 1)
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    raw = json.dumps(body | change, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode() + "." + signature


@pytest.mark.parametrize(
    "change",
    [{"q": "q_2"}, {"p": "mallory"}, {"c": [0, 1]}, {"d": "another device"}, {"n": "again"}],
    ids=["another question", "another person", "another option", "another device", "another nonce"],
)
def test_a_token_cannot_be_moved_to_another_question_person_option_or_device(change: dict[str, Any]) -> None:
    token = TOKENS.issue("q_1", "alice", choice=(0, 0), device="phone")
    with pytest.raises(TapTokenError):
        TOKENS.read(_tampered(token, change))


def _forged(body: object, secret: str = SECRET) -> str:
    """Signed with the right key by hand, as a leaked key would allow: the shape is still checked."""
    return str(TapTokens(secret, purpose="ntfy")._serializer.dumps(body))  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize(
    "token",
    [
        "",
        ".",
        "a.b",
        "a.b.c",
        "é.é",
        "x" * (MAX_TOKEN + 1),
        TOKENS.issue("q_1", "a", choice=(0, 0)) + "x" * MAX_TOKEN,
        URLSafeSerializer(SECRET).dumps({"q": "q_1", "p": "a", "n": "n"}),
        _forged([]),
        _forged("text"),
        _forged({"q": "q_1"}),
        _forged({"q": "q_1", "p": None, "n": "n"}),
        _forged({"q": "", "p": "a", "n": "n"}),
        _forged({"q": "q_1", "p": "a", "n": "n", "c": ["0", 0]}),
        _forged({"q": "q_1", "p": "a", "n": "n", "c": [0, -1]}),
        _forged({"q": "q_1", "p": "a", "n": "n", "c": [0, 1, 2]}),
        _forged({"q": "q_1", "p": "a", "n": "n", "c": [True, 0]}),
        _forged({"q": "q_1", "p": "a", "n": "n", "d": 7}),
    ],
)
def test_anything_else_is_refused(token: str) -> None:
    with pytest.raises(TapTokenError):
        TOKENS.read(token)


@given(st.text(max_size=3000))
def test_garbage_never_reads_and_never_raises_anything_else(token: str) -> None:
    with pytest.raises(TapTokenError):
        TOKENS.read(token)
