"""Tap tokens on their own: what handraise signed reads back; anything else, however shaped, is refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from bot.ntfy.taps import Tap, TapError, issue, signing_key, verify

KEY = signing_key("tk_secret")


def test_a_token_reads_back_as_issued_and_each_is_new() -> None:
    token = issue(KEY, "q_1", 0, 2, "alice@example.org")
    tap = verify(KEY, token)
    assert (tap.question_id, tap.index, tap.option, tap.person) == ("q_1", 0, 2, "alice@example.org")
    assert isinstance(tap, Tap) and verify(KEY, issue(KEY, "q_1", 0, 2, "a")).nonce != tap.nonce
    assert "tk_secret" not in token


def _signed(body: object) -> str:
    payload = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    signature = hmac.new(KEY, payload.encode(), hashlib.sha256).digest()
    return f"{payload}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


@pytest.mark.parametrize(
    "token",
    [
        "",
        ".",
        "a.b.c",
        "é.é",
        "x" * 3000,
        issue(signing_key("tk_other"), "q_1", 0, 0, "a"),
        _signed([]),
        _signed({"q": "q_1", "i": "0", "o": 0, "p": "a", "n": "n"}),
        _signed({"q": "q_1", "i": 0, "o": 0, "p": None, "n": "n"}),
        _signed({"q": "q_1"}),
        _signed("text"),
        "bm90IGpzb24." + _signed({}).split(".")[1],
    ],
)
def test_anything_else_is_refused(token: str) -> None:
    with pytest.raises(TapError):
        verify(KEY, token)
