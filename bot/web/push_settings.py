"""The `[web.push]` table: Web Push notifications of new questions to the phones and desktops of signed-in people."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from bot.settings.tables import Table, quote_value

_SUBJECT = re.compile(r"(mailto:[^@\s]+@[^@\s]+|https://[^/\s?#]+(/[^\s]*)?)")


def _check_subject(subject: str) -> str:
    # Push services write to the subject when a sender misbehaves (RFC 8292 section 2.1): it must reach a person.
    if not _SUBJECT.fullmatch(subject):
        raise ValueError(
            f"{quote_value(subject)} is not a contact push services can use; write a mailto: or https: URL, "
            'e.g. "mailto:ops@example.org"'
        )
    return subject


class PushSettings(Table):
    """`[web.push]`: signed-in people turn notifications on in the inbox; each new question is pushed to the
    devices of the people who may answer it, with its options as buttons (docs/phone.md)."""

    enabled: bool = True
    subject: Annotated[str, AfterValidator(_check_subject)]
    """Who runs this server, for the push services (the VAPID `sub` claim): `mailto:` or `https:`."""
