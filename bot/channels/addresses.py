"""Whether a person is the one an entry names: one rule for the responders of every channel and for the inbox's
sign-in allow-list, so that a person let in is the person a route names.

Case is ignored with `str.lower`, not `casefold`: casefold makes "straße" and "strasse" one address, two mailboxes
that may well belong to two people. A `@domain` entry matches an address at exactly that domain, and only an address
with one `@` and something before it: never "@example.org" itself, "a@b@example.org", or "x@example.org.evil.net".
"""

from __future__ import annotations


def normal_address(text: str) -> str:
    """An address as it is compared: surrounding spaces off, lower case."""
    return text.strip().lower()


def address_matches(entry: str, person: str) -> bool:
    """Whether `person` (an address, or a channel's name for someone) is what `entry` names: the same text ignoring
    case, or, for a `@domain` entry, an address at that domain."""
    wanted, allowed = normal_address(person), normal_address(entry)
    if allowed.startswith("@"):
        local, _, domain = wanted.rpartition("@")
        return wanted.count("@") == 1 and bool(local) and domain == allowed[1:] and bool(domain)
    return bool(wanted) and wanted == allowed
