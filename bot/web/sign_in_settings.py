"""The `[web.sign_in]` table: the company's OpenID Connect provider, and who among its people may use the inbox."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

from bot.channels.addresses import address_matches
from bot.settings.tables import EnvName, Table, non_empty, quote_value

_URL = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[^/\s:@\[\]?#]+)(:[0-9]{1,5})?(/[^\s?#]*)?")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.?[^@\s]*")
_DOMAIN = re.compile(r"@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*")


def _check_issuer(issuer: str) -> str:
    # http:// is accepted for a provider on this machine or a test network; the discovery document must repeat it.
    if not _URL.fullmatch(issuer):
        raise ValueError(f'{quote_value(issuer)} is not an issuer URL; write e.g. "https://accounts.google.com"')
    return issuer


def _check_person(entry: str) -> str:
    """An entry of `allowed`: `@example.org` (everyone at exactly that domain) or one address."""
    if entry.startswith("@"):
        if not _DOMAIN.fullmatch(entry):
            raise ValueError(f'{quote_value(entry)} is not "@domain"; write e.g. "@example.org"')
    elif not _EMAIL.fullmatch(entry):
        raise ValueError(f'{quote_value(entry)} is neither an address nor "@domain"; write e.g. "bob@example.org"')
    return entry


Person = Annotated[str, AfterValidator(_check_person)]


class SignInSettings(Table):
    """`[web.sign_in]`: with it, the inbox signs people in at `issuer` (OpenID Connect) instead of its token link."""

    issuer: Annotated[str, AfterValidator(_check_issuer)]
    client_id: str = Field(min_length=1)
    client_secret_env: EnvName
    allowed: Annotated[
        list[Person], non_empty('nobody could sign in; list addresses or domains, e.g. ["@example.org"]')
    ]

    def allows(self, email: str) -> bool:
        """Whether `email` is listed, or its domain is, exactly: `@example.org` is not `@example.org.evil.net`."""
        return matches(self.allowed, email)


def matches(entries: list[str], email: str) -> bool:
    """Whether `email` is one of `entries` (addresses, or `@domain` for everyone at exactly that domain), by the rule
    every channel's responders follow (`bot.channels.addresses`)."""
    return "@" in email.strip() and any(address_matches(entry, email) for entry in entries)
