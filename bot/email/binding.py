"""Binding a reply to its question: an unguessable token, the plus-address and Message-IDs that carry it.

The token is an HMAC of the question id under a secret from the environment, so the bot can tell a token it issued
from a guessed one without a lookup, and nobody without the secret can forge one for a question they know the id of.
A reply is matched by the token in its To/Cc address, else by the Message-IDs it refers to, else by a `[#token]` tag in
its subject (clients that drop the plus-address still keep one of the other two).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from email.message import Message
from email.utils import getaddresses
from typing import Literal

from bot.email.errors import EmailErrorCode
from bot.errors import HandraiseError

TOKEN_BYTES = 12
"""96 bits of HMAC output (past the 80 the design asks for): 20 base32 characters once the padding is dropped."""

MIN_SECRET_LENGTH = 16

TOKEN_PATTERN = r"[a-z2-7]{20}"
_TOKEN = re.compile(TOKEN_PATTERN)
_SUBJECT_TAG = re.compile(r"\[#(" + TOKEN_PATTERN + r")\]", re.IGNORECASE)
_MESSAGE_ID = re.compile(r"<([^<>@\s]+)@([^<>\s]+)>")

MatchedBy = Literal["address", "references", "subject"]


class SecretTooWeak(HandraiseError, ValueError):
    """The token secret is too short to keep tokens unguessable."""

    code = EmailErrorCode.SECRET_TOO_WEAK


@dataclass(frozen=True)
class TokenMatch:
    token: str
    by: MatchedBy


class ReplyBinding:
    """Issues and recognises reply tokens for the bot's address `address` (`local@domain`)."""

    def __init__(self, secret: str | bytes, address: str) -> None:
        key = secret.encode() if isinstance(secret, str) else secret
        if len(key) < MIN_SECRET_LENGTH:
            raise SecretTooWeak(
                f"the email token secret has {len(key)} characters; use at least {MIN_SECRET_LENGTH} random ones, "
                "e.g. the output of: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        self._key = key
        local, _, domain = address.rpartition("@")
        if not local or not domain:
            raise ValueError(f"{address!r} is not an email address")
        self.local = local.split("+", 1)[0]
        self.domain = domain.lower()

    def token_for(self, question_id: str) -> str:
        """The token for `question_id`: the same every time, so a resumed question keeps its address."""
        digest = hmac.new(self._key, b"handraise-email-reply\0" + question_id.encode(), hashlib.sha256).digest()
        return base64.b32encode(digest[:TOKEN_BYTES]).decode("ascii").rstrip("=").lower()

    def verify(self, question_id: str, token: str) -> bool:
        """Whether `token` was issued for `question_id`; compared in constant time."""
        return hmac.compare_digest(self.token_for(question_id).encode(), token.lower().encode("ascii", "replace"))

    def reply_address(self, token: str) -> str:
        return f"{self.local}+{token}@{self.domain}"

    def message_id(self, token: str) -> str:
        """A fresh Message-ID for one email about the question; it carries the token so replies to it match."""
        return f"<hr.{token}.{secrets.token_hex(6)}@{self.domain}>"

    def question_message_id(self, token: str) -> str:
        """The Message-ID of the email that shows the question: the same every time, so that one sent again (its
        sender died before recording the first) is the same message to mail clients, and replies to either match."""
        return f"<hr.{token}.q@{self.domain}>"

    @staticmethod
    def subject_tag(token: str) -> str:
        return f"[#{token}]"

    def token_in_address(self, address: str) -> str | None:
        local, _, domain = address.strip().lower().rpartition("@")
        if domain != self.domain:
            return None
        base, plus, tag = local.partition("+")
        if not plus or base != self.local.lower() or not _TOKEN.fullmatch(tag):
            return None
        return tag

    def token_in_message_ids(self, header: str) -> str | None:
        """The token of the first of the bot's Message-IDs in an In-Reply-To or References value."""
        for local, domain in _MESSAGE_ID.findall(header):
            if domain.lower() != self.domain:
                continue
            parts = local.lower().split(".")
            if len(parts) == 3 and parts[0] == "hr" and _TOKEN.fullmatch(parts[1]):
                return parts[1]
        return None

    def match(self, message: Message) -> TokenMatch | None:
        """Find the token a reply carries: To/Cc address, then In-Reply-To/References, then the subject tag.

        Returns None for mail that is not a reply to the bot (it is left for humans). Never raises on odd headers.
        """
        for address in _addresses(_header_values(message, "To") + _header_values(message, "Cc")):
            if token := self.token_in_address(address):
                return TokenMatch(token, "address")
        for name in ("In-Reply-To", "References"):
            for value in _header_values(message, name):
                if token := self.token_in_message_ids(value):
                    return TokenMatch(token, "references")
        for subject in _header_values(message, "Subject"):
            if found := _SUBJECT_TAG.search(subject):
                return TokenMatch(found[1].lower(), "subject")
        return None


def _header_values(message: Message, name: str) -> list[str]:
    """Every value of header `name` as text; a header the parser cannot read is taken raw rather than raising."""
    try:
        values = message.get_all(name) or []
    except Exception:  # a malformed header can make the email package raise while parsing it lazily
        values = [value for key, value in message.raw_items() if key.lower() == name.lower()]
    return [str(value) for value in values]


def _addresses(values: Iterable[str]) -> list[str]:
    try:
        return [address for _, address in getaddresses(list(values)) if address]
    except Exception:
        return []
