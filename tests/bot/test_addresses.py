"""One rule for who a person is, for every channel's responders and the inbox's sign-in allow-list."""

from __future__ import annotations

import pytest

from bot.channels.addresses import address_matches
from bot.channels.replies import is_allowed
from bot.web.sign_in_settings import matches


@pytest.mark.parametrize(
    ("entry", "person", "expected"),
    [
        ("alice@example.org", "alice@example.org", True),
        ("Alice@Example.ORG", " alice@example.org ", True),
        ("@example.org", "bob@example.org", True),
        ("@Example.org", "BOB@EXAMPLE.ORG", True),
        ("@example.org", "mallory@example.org.evil.net", False),
        ("@example.org", "mallory@evil-example.org", False),
        ("@example.org", "@example.org", False),
        ("@example.org", "a@b@example.org", False),
        ("@example.org", "example.org", False),
        ("@", "bob@", False),
        ("alice@example.org", "alice@example.org.evil.net", False),
        ("straße@example.org", "strasse@example.org", False),  # two mailboxes, whatever casefold says
        ("alice", "Alice", True),  # a channel's own name for someone (a Slack handle, a Telegram user name)
        ("", "", False),
    ],
)
def test_an_entry_names_a_person_by_one_rule_everywhere(entry: str, person: str, expected: bool) -> None:
    assert address_matches(entry, person) is expected
    assert is_allowed(person, [entry]) is expected
    if "@" in person.strip():
        assert matches([entry], person) is expected


def test_no_responders_means_anyone_but_an_empty_allow_list_lets_nobody_in() -> None:
    assert is_allowed("anyone@example.org", [])
    assert not matches([], "anyone@example.org")
    assert not matches(["@example.org"], "no-at-sign")
