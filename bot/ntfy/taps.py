"""Tap tokens: what an ntfy action button carries back to handraise. Each names one option of one question and the
person it was sent to, with a random nonce so that it can be used once, and an HMAC-SHA256 signature (the standard
library's `hmac`) so that it cannot be altered or made up. Pure: the one-time check is the channel's (the store).

The signing key is derived from the ntfy access token: every replica has it, it survives restarts, and rotating
the token retires the taps still on phones (the person then opens the question instead).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass

MAX_TOKEN = 2048
"""Longer is not a token handraise made; it is refused before anything is decoded."""


class TapError(ValueError):
    """A token that is malformed or whose signature does not match: nothing is done with it."""


@dataclass(frozen=True)
class Tap:
    """One option of one question, offered to `person`; `nonce` makes it single-use."""

    question_id: str
    index: int
    option: int
    person: str
    nonce: str


def signing_key(ntfy_token: str) -> bytes:
    return hmac.new(ntfy_token.encode(), b"handraise ntfy tap tokens v1", hashlib.sha256).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def issue(key: bytes, question_id: str, index: int, option: int, person: str) -> str:
    """A fresh signed token for tapping `option` of question `index` of `question_id`."""
    body = {"q": question_id, "i": index, "o": option, "p": person, "n": secrets.token_urlsafe(12)}
    payload = _b64(json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode())
    return f"{payload}.{_b64(_sign(key, payload))}"


def _sign(key: bytes, payload: str) -> bytes:
    return hmac.new(key, payload.encode("ascii"), hashlib.sha256).digest()


def verify(key: bytes, token: str) -> Tap:
    """The tap `token` stands for; raises TapError when it is not one handraise signed with `key`."""
    if not isinstance(token, str) or len(token) > MAX_TOKEN or not token.isascii() or token.count(".") != 1:
        raise TapError("not a tap token")
    payload, signature = token.split(".")
    try:
        given = _unb64(signature)
    except (binascii.Error, ValueError):
        raise TapError("not a tap token") from None
    if not hmac.compare_digest(given, _sign(key, payload)):
        raise TapError("the tap token's signature does not match")
    try:
        body = json.loads(_unb64(payload))
    except (binascii.Error, ValueError):
        raise TapError("not a tap token") from None
    if not isinstance(body, dict):
        raise TapError("not a tap token")
    fields = (body.get("q"), body.get("i"), body.get("o"), body.get("p"), body.get("n"))
    question_id, index, option, person, nonce = fields
    if not (
        isinstance(question_id, str)
        and isinstance(index, int)
        and isinstance(option, int)
        and isinstance(person, str)
        and isinstance(nonce, str)
    ):
        raise TapError("not a tap token")
    return Tap(question_id, index, option, person, nonce)
