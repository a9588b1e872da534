"""Tap tokens: what a button on a phone carries back to handraise (an ntfy action, a Web Push notification's button),
the only credential of an answer given from a lock screen. Each is bound to one question and the person it was sent
to, and when given to the option it chooses and the device it was pushed to; it carries a random nonce so that the
channel can accept it once (`bot.channels.one_tap`). Signed with itsdangerous (HMAC-SHA256, a key derived per
purpose), so it cannot be altered or made up; every replica holding the secret reads every token. Pure: no I/O.
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


class TapTokenError(ValueError):
    """Not a token this server signed as it stands: tampered with, made up, signed with another key, or mangled."""


@dataclass(frozen=True)
class Tap:
    """What a token stands for. `choice` is (question index, option index) when the token is one button's, None when
    one token serves every button and the request names the option; `device` is "" when the token is not a
    device's."""

    question_id: str
    person: str
    choice: tuple[int, int] | None
    device: str
    nonce: str


def device_of(address: str) -> str:
    """A short fixed-size name for a device's address (a push endpoint is long, and the token rides in a push)."""
    return base64.urlsafe_b64encode(hashlib.sha256(address.encode()).digest()[:18]).decode("ascii")


class TapTokens:
    """Issues and reads the tap tokens of one `purpose` ("ntfy", "web push"): a token of one purpose, or signed with
    another `secret`, is refused by the others."""

    def __init__(self, secret: str | bytes, *, purpose: str) -> None:
        self._serializer = URLSafeSerializer(
            secret,
            salt=f"handraise {purpose} tap token v2",
            signer_kwargs={"key_derivation": "hmac", "digest_method": hashlib.sha256},
        )

    def issue(self, question_id: str, person: str, *, choice: tuple[int, int] | None = None, device: str = "") -> str:
        """A fresh token: each call's nonce is new, so each token can be spent once on its own."""
        body: dict[str, Any] = {"q": question_id, "p": person, "n": secrets.token_urlsafe(12)}
        if choice is not None:
            body["c"] = list(choice)
        if device:
            body["d"] = device
        return str(self._serializer.dumps(body))

    def read(self, token: str) -> Tap:
        """What `token` stands for. Raises TapTokenError when this server did not sign it as it stands."""
        if not isinstance(token, str) or len(token) > MAX_TOKEN or not token.isascii():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TapTokenError("not a tap token")
        try:
            body: Any = self._serializer.loads(token)
        except BadData:
            raise TapTokenError("the tap token's signature does not match") from None
        if not isinstance(body, dict):
            raise TapTokenError("not a tap token")
        fields: dict[str, Any] = body  # pyright: ignore[reportUnknownVariableType]
        question_id, person, nonce = fields.get("q"), fields.get("p"), fields.get("n")
        device, choice = fields.get("d", ""), fields.get("c")
        if not all(isinstance(field, str) and field for field in (question_id, person, nonce)):
            raise TapTokenError("not a tap token")
        if not isinstance(device, str):
            raise TapTokenError("not a tap token")
        return Tap(str(question_id), str(person), _choice(choice), device, str(nonce))


def _choice(given: Any) -> tuple[int, int] | None:
    if given is None:
        return None
    if (
        isinstance(given, list)
        and len(given) == 2  # pyright: ignore[reportUnknownArgumentType]
        and all(type(number) is int and number >= 0 for number in given)  # pyright: ignore[reportUnknownVariableType]
    ):
        return (given[0], given[1])
    raise TapTokenError("not a tap token")
