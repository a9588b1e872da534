"""Answer tokens: what a notification's buttons carry back (`Authorization: Bearer <token>`), the credential of an
answer from the lock screen, where there is no cookie. One per device per question, bound to the question, the
person and the device, signed (itsdangerous, HMAC-SHA256) with a key derived from the kept VAPID key so that every
replica reads every token, and single use through its random nonce (the store remembers spent ones).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadData, URLSafeSerializer

MAX_TOKEN = 2048
"""Longer is not a token handraise made; it is refused before anything is decoded."""


class AnswerTokenError(ValueError):
    """Not a token this server signed: tampered with, made up, or mangled."""


@dataclass(frozen=True)
class AnswerToken:
    question_id: str
    person: str
    device: str
    """A digest of the device's endpoint (`device_of`): the token works only while that device is subscribed."""
    nonce: str


def device_of(endpoint: str) -> str:
    """A short fixed-size name for a device's endpoint (the endpoint itself is long, and the token rides in a push)."""
    return base64.urlsafe_b64encode(hashlib.sha256(endpoint.encode()).digest()[:18]).decode("ascii")


class AnswerTokens:
    def __init__(self, secret: bytes) -> None:
        self._serializer = URLSafeSerializer(secret, salt="handraise push answer token v1")

    def issue(self, question_id: str, person: str, endpoint: str) -> str:
        body = {"q": question_id, "p": person, "d": device_of(endpoint), "n": secrets.token_urlsafe(12)}
        return str(self._serializer.dumps(body))

    def read(self, token: str) -> AnswerToken:
        """What `token` stands for. Raises AnswerTokenError when this server did not sign it as it stands."""
        if len(token) > MAX_TOKEN or not token.isascii():
            raise AnswerTokenError("not an answer token")
        try:
            body: Any = self._serializer.loads(token)
        except BadData:
            raise AnswerTokenError("the answer token's signature does not match") from None
        if not isinstance(body, dict):
            raise AnswerTokenError("not an answer token")
        fields: list[Any] = [body.get(name) for name in ("q", "p", "d", "n")]  # pyright: ignore[reportUnknownMemberType]
        if not all(isinstance(field, str) and field for field in fields):
            raise AnswerTokenError("not an answer token")
        return AnswerToken(*(str(field) for field in fields))
