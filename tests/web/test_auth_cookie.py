"""The session cookie is read without parsing every cookie, yet exactly as aiohttp's own parser reads it."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from bot.web.auth import InboxAuth, cookie_value

NAME = "handraise_inbox_8765"
TOKEN = "Tok-en_123.~+/="


def request(cookie: str | None, host: str = "127.0.0.1:8765") -> web.Request:
    headers = {"Host": host} if cookie is None else {"Host": host, "Cookie": cookie}
    return make_mocked_request("GET", "/", headers=headers)


@pytest.mark.parametrize(
    "header",
    [
        f"{NAME}={TOKEN}",
        f"a=1; {NAME}={TOKEN}; b=2",
        f"a=1;{NAME}={TOKEN}",
        f" {NAME}={TOKEN} ;",
        f"{NAME} = {TOKEN}",
        f'{NAME}="{TOKEN}"',
        f"{NAME}={TOKEN}; {NAME}=other",
        f"{NAME}=other; {NAME} ={TOKEN}",
        f"{NAME}={TOKEN} trailing",
        f"{NAME}={TOKEN}\tx",
        f"{NAME}=t\u00f6k",
        f"{NAME}=",
        NAME,
        f"x{NAME}=bad",
        f"{NAME}0=bad",
        f"x={NAME}=bad",
        f'a="x; {NAME}={TOKEN}; b="',
        "",
        "a=b",
        ";;;===;;;",
        "\x00\x01" * 50,
        "a=1; " * 2_000 + f"{NAME}={TOKEN}",
    ],
)
def test_the_session_cookie_reads_as_aiohttps_parser_reads_it(header: str) -> None:
    mine, theirs = request(header), request(header)
    assert cookie_value(mine, NAME) == theirs.cookies.get(NAME)


def test_no_cookie_header_is_no_cookie() -> None:
    assert cookie_value(request(None), NAME) is None


def test_the_inbox_admits_its_token_and_nothing_else_by_cookie() -> None:
    auth = InboxAuth(TOKEN)
    assert auth.allows(request(f"{NAME}={TOKEN}"))
    assert not auth.allows(request(f"{NAME}={TOKEN}x"))
    assert not auth.allows(request(f"handraise_inbox_9999={TOKEN}"))


def test_the_cookie_name_follows_the_port_the_inbox_was_reached_on() -> None:
    auth = InboxAuth(TOKEN)
    assert auth.allows(request(f"{NAME}={TOKEN}"))
    assert not auth.allows(request(f"{NAME}={TOKEN}", host="127.0.0.1:9999"))
    assert auth.allows(request(f"handraise_inbox_80={TOKEN}", host="localhost"))


def test_hosts_beyond_the_kept_few_are_still_named_right() -> None:
    auth = InboxAuth(TOKEN)
    for port in range(9000, 9040):
        assert auth.allows(request(f"handraise_inbox_{port}={TOKEN}", host=f"127.0.0.1:{port}"))
