"""Sign-in with an OpenID Connect provider, through `serve`'s real program and a real local provider (Authlib's server),
driven by an aiohttp client with a cookie jar as a browser would be: the flow, who is refused, forged ID tokens,
state that is not this browser's, tampered cookies, and sessions shared by replicas with one secret."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import aiohttp
import anyio
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, OctKey, RSAKey

from bot.cli import main
from bot.config import parse_config
from bot.program import Running, running
from bot.settings.errors import ConfigError
from bot.web.gate import TokenGate
from bot.web.paging import PAGE_SIZE
from tests.web.helpers import PLAN_REVIEW
from tests.web.oidc_provider import CLIENT_ID, CLIENT_SECRET, Provider, unsigned

pytestmark = pytest.mark.anyio

SESSION_SECRET = "one secret for every replica"


def config_text(provider: Provider, db: Path, *, extra: str = "") -> str:
    return f"""
[server]
listen = "127.0.0.1:0"
[store]
path = "{db}"
[web]
{extra}
[web.sign_in]
issuer = "{provider.issuer}"
client_id = "{CLIENT_ID}"
client_secret_env = "HANDRAISE_OIDC_SECRET"
allowed = ["@example.org", "bob@other.org"]
"""


@asynccontextmanager
async def serving(
    provider: Provider,
    tmp_path: Path,
    name: str = "a",
    secret: str = SESSION_SECRET,
    extra: str = "",
    server_extra: str = "",
) -> AsyncIterator[Running]:
    environ = {"HANDRAISE_OIDC_SECRET": CLIENT_SECRET, "HANDRAISE_SESSION_SECRET": secret}
    named = 'session_secret_env = "HANDRAISE_SESSION_SECRET"\n' if secret else ""
    text = config_text(provider, tmp_path / f"{name}.db", extra=named + extra)
    text = text.replace('listen = "127.0.0.1:0"\n', 'listen = "127.0.0.1:0"\n' + server_extra)
    config = parse_config(text, environ=environ)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in environ.items():
            patch.setenv(key, value)
        async with running(config) as program:
            yield program


@asynccontextmanager
async def browser() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        yield session


@pytest.fixture
async def server(provider: Provider, tmp_path: Path) -> AsyncIterator[Running]:
    async with serving(provider, tmp_path) as program:
        yield program


async def sign_in(session: aiohttp.ClientSession, base_url: str) -> tuple[int, str]:
    async with session.get(base_url + "/") as response:
        return response.status, await response.text()


@asynccontextmanager
async def alice_signed_in(
    provider: Provider, tmp_path: Path, extra: str = ""
) -> AsyncIterator[tuple[Running, aiohttp.ClientSession]]:
    """`serve` with `extra` in its `[web]`, and alice's browser signed in to it."""
    async with serving(provider, tmp_path, extra=extra) as program, browser() as alice:
        await sign_in(alice, program.base_url)
        yield program, alice


async def bob_signs_in(provider: Provider, program: Running, bob: aiohttp.ClientSession) -> None:
    """bob@other.org, allowed by address, signs in with the browser `bob`."""
    provider.person = "bob@other.org"
    await sign_in(bob, program.base_url)


async def test_an_unsigned_visit_goes_to_the_provider_and_comes_back_signed_in(
    server: Running, provider: Provider
) -> None:
    assert server.links["web inbox"] == server.base_url + "/"
    async with browser() as session:
        status, page = await sign_in(session, server.base_url)
        assert status == 200
        assert "Signed in as alice@example.org" in page
        asked = provider.authorize_requests[0]
        assert asked["scope"] == "openid email"
        assert asked["code_challenge_method"] == "S256"
        assert asked["redirect_uri"] == server.base_url + "/auth/callback"
        assert asked["response_type"] == "code"
        # The page's own requests carry the session too.
        async with session.get(server.base_url + "/history") as history:
            assert history.status == 200
            assert "Signed in as alice@example.org" in await history.text()


async def test_the_cookies_are_http_only_lax_and_named_without_the_port(server: Running) -> None:
    async with browser() as session:
        async with session.get(server.base_url + "/", allow_redirects=False) as to_provider:
            assert to_provider.status == 303
            flow = to_provider.cookies["handraise_sign_in"]
            assert flow["httponly"] and flow["samesite"] == "Lax" and not flow["secure"]
            location = to_provider.headers["Location"]
        async with session.get(location, allow_redirects=False) as back:
            callback = back.headers["Location"]
        async with session.get(callback, allow_redirects=False) as signed:
            assert signed.status == 303
            cookie = signed.cookies["handraise_session"]
            assert cookie["httponly"] and cookie["samesite"] == "Lax"
            assert int(cookie["max-age"]) == 12 * 3600


async def test_the_token_link_no_longer_opens_the_inbox(server: Running, provider: Provider) -> None:
    inbox: Any = server.installation.channels[0]
    async with browser() as session:
        url = f"{server.base_url}/?token={inbox.token}"
        async with session.get(url, allow_redirects=False) as response:
            assert response.status == 303
            assert response.headers["Location"].startswith(provider.issuer + "/authorize?")
        headers = {"Authorization": f"Bearer {inbox.token}"}
        async with session.get(server.base_url + "/questions/x/card", headers=headers) as card:
            assert card.status == 401


INBOX_ROUTES = [
    ("GET", "/"),
    ("GET", "/history"),
    ("GET", "/?mine=1"),
    ("GET", "/questions/{id}/card"),
    ("GET", "/events"),
    ("GET", "/questions/waiting"),
    ("POST", "/questions/{id}/answer"),
    ("POST", "/questions/approve"),
]


@pytest.mark.parametrize(("method", "path"), INBOX_ROUTES, ids=[f"{m} {p}" for m, p in INBOX_ROUTES])
async def test_no_inbox_route_opens_with_the_token_and_the_api_still_does(
    server: Running, provider: Provider, method: str, path: str
) -> None:
    inbox: Any = server.installation.channels[0]
    async with browser() as session:
        question_id = await ask_unsigned(server, session)
        url = server.base_url + path.format(id=question_id)
        form = {"csrf": TokenGate(inbox.token).csrf, "q0": "0", "action": "send", "id": question_id}
        for headers, query in (({"Authorization": f"Bearer {inbox.token}"}, ""), ({}, f"token={inbox.token}")):
            target = url + ("&" if "?" in url else "?") + query if query else url
            data = form if method == "POST" else None
            async with session.request(method, target, headers=headers, data=data, allow_redirects=False) as reply:
                if method == "GET" and path in ("/", "/history", "/?mine=1"):
                    assert reply.status == 303
                    assert reply.headers["Location"].startswith(provider.issuer + "/authorize?")
                else:
                    assert reply.status == 401
        assert "handraise_session" not in {cookie.key for cookie in session.cookie_jar}
        assert (await outcome(server, session, question_id))["status"] == "pending"


async def ask_unsigned(program: Running, session: aiohttp.ClientSession) -> str:
    body = {"questions": [{"id": "go", "question": "Go?", "options": [{"label": "yes"}, {"label": "no"}]}]}
    async with session.post(program.base_url + "/v1/questions", json=body) as asked:
        assert asked.status in (200, 201, 202)
        return str((await asked.json())["id"])


async def test_over_https_the_cookies_are_secure_and_the_redirect_uri_is_the_public_url(
    provider: Provider, tmp_path: Path
) -> None:
    public = 'public_url = "https://inbox.example.org"\n'
    async with serving(provider, tmp_path, server_extra=public) as program, browser() as session:
        async with session.get(program.base_url + "/history", allow_redirects=False) as to_provider:
            assert to_provider.status == 303
            flow = to_provider.cookies["handraise_sign_in"]
            assert flow["secure"] and flow["httponly"] and flow["samesite"] == "Lax"
            asked = parse_qs(urlsplit(to_provider.headers["Location"]).query)
        assert asked["redirect_uri"] == ["https://inbox.example.org/auth/callback"]


async def test_without_public_url_the_redirect_uri_follows_the_host_the_browser_used(server: Running) -> None:
    port = server.base_url.rsplit(":", 1)[1]
    async with browser() as session:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
            headers = {"Host": host}
            async with session.get(server.base_url + "/", headers=headers, allow_redirects=False) as to_provider:
                asked = parse_qs(urlsplit(to_provider.headers["Location"]).query)
            assert asked["redirect_uri"] == [f"http://{host}/auth/callback"]


async def test_sign_out_is_a_post_only(server: Running) -> None:
    async with browser() as session:
        await sign_in(session, server.base_url)
        async with session.get(server.base_url + "/auth/sign-out") as got:
            assert got.status == 405
        async with session.get(server.base_url + "/history", allow_redirects=False) as still:
            assert still.status == 200


@pytest.mark.parametrize(
    "person", ["mallory@example.org.evil.net", "eve@other.org", "bob@other.org.evil", "alice@sub.example.org"]
)
async def test_a_person_not_allowed_gets_a_403_page_and_no_session(
    server: Running, provider: Provider, person: str
) -> None:
    provider.person = person
    async with browser() as session:
        status, page = await sign_in(session, server.base_url)
        assert status == 403
        assert "is not among the people allowed" in page
        assert "handraise_session" not in {cookie.key for cookie in session.cookie_jar}


async def test_an_address_listed_alone_and_any_case_of_the_domain_are_allowed(
    server: Running, provider: Provider
) -> None:
    for person in ("bob@other.org", "Carol@EXAMPLE.org"):
        provider.person = person
        async with browser() as session:
            status, page = await sign_in(session, server.base_url)
            assert status == 200 and f"Signed in as {person}" in page


def _other_key(provider: Provider, claims: dict[str, Any]) -> str:
    return provider.sign(claims, RSAKey.generate_key(2048, parameters={"kid": "k1"}))


def _header(provider: Provider, claims: dict[str, Any], header: dict[str, Any], key: Any = None) -> str:
    signer = key or provider.key
    return jwt.encode(header, claims, signer, algorithms=[str(header["alg"])])


def _hmac_with_client_secret(provider: Provider, claims: dict[str, Any]) -> str:
    return provider.sign(claims, OctKey.import_key(CLIENT_SECRET.encode() * 2), alg="HS256")


def _with(**changed: Any) -> Any:
    return lambda provider, claims: provider.sign({**claims, **changed})


def _without(name: str) -> Any:
    return lambda provider, claims: provider.sign({k: v for k, v in claims.items() if k != name})


FORGERIES: dict[str, Any] = {
    "another key under the provider's kid": _other_key,
    "alg none": lambda provider, claims: unsigned(claims),
    "HMAC with the client secret": _hmac_with_client_secret,
    "another audience": _with(aud="someone-else"),
    "another issuer": _with(iss="https://accounts.evil.example"),
    "among other audiences, no azp": _with(aud=[CLIENT_ID, "someone-else"]),
    "among other audiences, for another azp": _with(aud=[CLIENT_ID, "someone-else"], azp="someone-else"),
    "expired": _with(exp=1_000_000_000, iat=999_999_000),
    "another nonce": _with(nonce="not-this-browsers"),
    "email not verified": _with(email_verified=False),
    "email_verified as a string": _with(email_verified="true"),
    "no email": _without("email"),
    "no expiry": _without("exp"),
    "a kid the key set lacks": lambda provider, claims: _header(provider, claims, {"alg": "RS256", "kid": "k2"}),
    "no kid, another key": lambda provider, claims: _header(
        provider, claims, {"alg": "RS256"}, RSAKey.generate_key(2048)
    ),
    "ES256 by another key": lambda provider, claims: _header(
        provider, claims, {"alg": "ES256", "kid": "k1"}, ECKey.generate_key("P-256")
    ),
    "RS512 by the provider's key": lambda provider, claims: _header(provider, claims, {"alg": "RS512", "kid": "k1"}),
    "a critical header unknown": lambda provider, claims: _header(
        provider, claims, {"alg": "RS256", "kid": "k1", "crit": ["exp"], "exp": 1}
    ),
    "expiry as a string": _with(exp="9999999999"),
    "not valid before a day from now": lambda provider, claims: provider.sign(
        {**claims, "nbf": int(time.time()) + 86_400}
    ),
    "email as a list": _with(email=["alice@example.org"]),
    "claims not an object": lambda provider, claims: (
        _header(provider, claims, {"alg": "RS256", "kid": "k1"}).split(".")[0] + ".WzFd."
    ),
    "garbage": lambda provider, claims: "not.a.jwt",
    "oversize": lambda provider, claims: "a" * 200_000,
}


@pytest.mark.parametrize("forge", list(FORGERIES), ids=list(FORGERIES))
async def test_forged_id_tokens_are_refused_with_a_4xx_page(
    server: Running, provider: Provider, forge: str, caplog: pytest.LogCaptureFixture
) -> None:
    provider.forge = FORGERIES[forge]
    async with browser() as session:
        status, page = await sign_in(session, server.base_url)
        assert 400 <= status < 500, page
        assert "You are not signed in" in page and 'href="/auth/sign-in"' in page
        assert "handraise_session" not in {cookie.key for cookie in session.cookie_jar}
    assert any("sign-in refused" in record.getMessage() for record in caplog.records)


async def test_a_state_not_started_by_this_browser_is_refused(server: Running, provider: Provider) -> None:
    async with browser() as victim, browser() as attacker:
        async with attacker.get(server.base_url + "/", allow_redirects=False) as started:
            location = started.headers["Location"]
        async with attacker.get(location, allow_redirects=False) as back:
            callback = back.headers["Location"]
        # The attacker's callback link opened in the victim's browser: no flow of the victim's.
        async with victim.get(callback) as foreign:
            assert foreign.status == 400
            assert "not started in this browser" in await foreign.text()
        # The victim's own flow, with the attacker's state and code.
        async with victim.get(server.base_url + "/", allow_redirects=False):
            pass
        async with victim.get(callback) as mismatched:
            assert mismatched.status == 400
            assert "state does not match" in await mismatched.text()


async def test_a_replayed_callback_is_refused(server: Running) -> None:
    async with browser() as session:
        async with session.get(server.base_url + "/", allow_redirects=False) as started:
            location = started.headers["Location"]
        async with session.get(location, allow_redirects=False) as back:
            callback = back.headers["Location"]
        async with session.get(callback) as first:
            assert first.status == 200
        async with session.get(callback) as again:
            assert again.status == 400


async def test_the_providers_error_and_a_missing_code_are_4xx(server: Running) -> None:
    async with browser() as session:
        async with session.get(server.base_url + "/auth/callback?error=access_denied&state=x") as denied:
            assert denied.status == 400 and "access_denied" in await denied.text()
        async with session.get(server.base_url + "/auth/callback") as bare:
            assert bare.status == 400


async def test_a_tampered_session_cookie_is_not_a_session(server: Running) -> None:
    async with browser() as session:
        await sign_in(session, server.base_url)
        value = next(cookie.value for cookie in session.cookie_jar if cookie.key == "handraise_session")
        for forged in (value[:-2] + ("AA" if not value.endswith("AA") else "BB"), "x", "", "a" * 5_000):
            headers = {"Cookie": f"handraise_session={forged}"}
            url = server.base_url + "/history"
            async with aiohttp.ClientSession() as bare, bare.get(url, headers=headers, allow_redirects=False) as answer:
                assert answer.status == 303


async def test_sign_out_ends_the_session(server: Running) -> None:
    async with browser() as session:
        _, page = await sign_in(session, server.base_url)
        csrf = page.split('action="/auth/sign-out"', 1)[1].split('name="csrf" value="', 1)[1].split('"', 1)[0]
        async with session.post(server.base_url + "/auth/sign-out", data={"csrf": "wrong"}) as refused:
            assert refused.status == 403
        async with session.post(server.base_url + "/auth/sign-out", data={"csrf": csrf}) as out:
            assert out.status == 200 and "signed out" in await out.text()
        async with session.get(server.base_url + "/history", allow_redirects=False) as after:
            assert after.status == 303


async def test_a_replica_with_the_same_secret_accepts_the_session_and_one_with_another_does_not(
    server: Running, provider: Provider, tmp_path: Path
) -> None:
    async with browser() as session:
        await sign_in(session, server.base_url)
        async with serving(provider, tmp_path, "b") as same, serving(provider, tmp_path, "c", "another") as other:
            # The cookie jar sends the session to every port of 127.0.0.1, as a browser does.
            async with session.get(same.base_url + "/history", allow_redirects=False) as accepted:
                assert accepted.status == 200
            async with session.get(other.base_url + "/history", allow_redirects=False) as refused:
                assert refused.status == 303


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('issuer = "accounts.google.com"', "is not an issuer URL"),
        ("allowed = []", "nobody could sign in"),
        ('allowed = ["example.org"]', 'neither an address nor "@domain"'),
        ('allowed = ["@"]', 'is not "@domain"'),
        ('client_secret_env = "the secret itself!"', "is not an environment variable name"),
    ],
)
def test_config_mistakes_are_said_clearly(table: str, problem: str) -> None:
    fields = {
        "issuer": 'issuer = "https://accounts.google.com"',
        "client_id": 'client_id = "x"',
        "client_secret_env": 'client_secret_env = "S"',
        "allowed": 'allowed = ["@example.org"]',
    }
    fields[table.split(" ", 1)[0]] = table
    text = "[web.sign_in]\n" + "\n".join(fields.values())
    with pytest.raises(ConfigError) as raised:
        parse_config(text, environ={"S": "x"})
    assert problem in str(raised.value)
    assert "web.sign_in" in str(raised.value)


def test_a_missing_client_secret_stops_the_config() -> None:
    text = '[web.sign_in]\nissuer = "https://id.example.org"\nclient_id = "x"\nclient_secret_env = "S"\n'
    text += 'allowed = ["@example.org"]\n'
    with pytest.raises(ConfigError, match="S is not set"):
        parse_config(text, environ={})


GO = {"id": "go", "question": "Go?", "options": [{"label": "yes"}, {"label": "no"}]}
OPS_TO_OTHER_ORG = '[[web.subscriptions]]\nagents = ["ops-*"]\nresponders = ["@other.org"]\n[[web.subscriptions]]\n'
"""Questions of `ops-*` agents are for @other.org alone; all others for everyone."""
TWO_APPROVALS = "[[web.subscriptions]]\napprovals = 2\n"
RESPONDERS_AT_OTHER_ORG = '[[web.subscriptions]]\nresponders = ["@other.org"]\n'


async def ask(
    program: Running, session: aiohttp.ClientSession, question: dict[str, Any], agent: str | None = None
) -> str:
    """Ask through the agents' API (unchanged by sign-in), and wait until the inbox shows the question."""
    body: dict[str, Any] = {"questions": [question]} | ({"agent": {"id": agent}} if agent else {})
    async with session.post(program.base_url + "/v1/questions", json=body) as asked:
        assert asked.status in (200, 201, 202), await asked.text()
        question_id = str((await asked.json())["id"])
    with anyio.fail_after(10):
        while True:
            async with session.get(f"{program.base_url}/questions/{question_id}/card") as card:
                if card.status == 200:
                    return question_id
            await anyio.sleep(0.02)


async def answer(program: Running, session: aiohttp.ClientSession, question_id: str, option: int, by: str) -> int:
    async with session.get(program.base_url + "/") as inbox:
        page = await inbox.text()
    csrf = page.split('class="answer">', 1)[1].split('name="csrf" value="', 1)[1].split('"', 1)[0]
    form = {"csrf": csrf, "q0": str(option), "action": "send", "by": by}
    url = f"{program.base_url}/questions/{question_id}/answer"
    async with session.post(url, data=form, allow_redirects=False) as reply:
        return reply.status


async def outcome(program: Running, session: aiohttp.ClientSession, question_id: str) -> dict[str, Any]:
    async with session.get(f"{program.base_url}/v1/questions/{question_id}") as reply:
        return await reply.json()


async def test_an_answer_records_the_signed_in_email_whatever_the_form_says(
    server: Running, provider: Provider
) -> None:
    question = {"id": "env", "question": "Which environment?", "options": [{"label": "staging"}, {"label": "prod"}]}
    async with browser() as session:
        await sign_in(session, server.base_url)
        question_id = await ask(server, session, question)
        assert await answer(server, session, question_id, 0, by="the-ceo@example.org") == 303
        result = await outcome(server, session, question_id)
        assert result["status"] == "answered"
        assert result["resolvedBy"] == "alice@example.org"


async def test_two_approvals_need_two_different_people(provider: Provider, tmp_path: Path) -> None:
    async with alice_signed_in(provider, tmp_path, TWO_APPROVALS) as (program, alice), browser() as bob:
        question_id = await ask(program, alice, PLAN_REVIEW)
        assert await answer(program, alice, question_id, 0, by="") == 303
        assert await answer(program, alice, question_id, 0, by="someone-else@example.org") == 303
        assert (await outcome(program, alice, question_id))["status"] == "pending"
        await bob_signs_in(provider, program, bob)
        assert await answer(program, bob, question_id, 0, by="") == 303
        result = await outcome(program, alice, question_id)
        assert result["status"] == "answered"
        assert result["approvedBy"] == ["alice@example.org", "bob@other.org"]
        # What `handraise history --json` prints: each approval, and the answer, under the person's email.
        events = await program.installation.ledger.store.history(question_id=question_id)
        actors = [(event.kind, event.actor) for event in events if event.kind in ("approved", "answered")]
        assert actors == [
            ("approved", "alice@example.org"),
            ("approved", "bob@other.org"),
            ("answered", "alice@example.org, bob@other.org"),
        ]


async def test_responders_by_email_and_domain_limit_who_may_answer(provider: Provider, tmp_path: Path) -> None:
    async with alice_signed_in(provider, tmp_path, RESPONDERS_AT_OTHER_ORG) as (program, alice), browser() as bob:
        question_id = await ask(program, alice, GO)
        assert await answer(program, alice, question_id, 0, by="bob@other.org") == 403
        await bob_signs_in(provider, program, bob)
        assert await answer(program, bob, question_id, 0, by="") == 303
        assert (await outcome(program, bob, question_id))["resolvedBy"] == "bob@other.org"


async def test_without_a_session_secret_one_is_kept_in_the_store_and_outlives_a_restart(
    provider: Provider, tmp_path: Path
) -> None:
    async with browser() as session:
        async with serving(provider, tmp_path, "solo", secret="") as first:
            await sign_in(session, first.base_url)
        assert not (tmp_path / "solo.db.session-secret").exists()  # nothing beside the store any more
        async with (
            serving(provider, tmp_path, "solo", secret="") as again,
            session.get(again.base_url + "/history", allow_redirects=False) as accepted,
        ):
            assert accepted.status == 200
        # Another store made its own key: the cookie of the first one opens nothing there.
        async with (
            serving(provider, tmp_path, "other", secret="") as elsewhere,
            session.get(elsewhere.base_url + "/history", allow_redirects=False) as refused,
        ):
            assert refused.status == 303
        # Removing the kept key (as docs/team-inbox.md says) ends every session at the next start.
        with sqlite3.connect(tmp_path / "solo.db") as raw:
            raw.execute("DELETE FROM kept_values WHERE name = 'web.session_secret'")
        async with (
            serving(provider, tmp_path, "solo", secret="") as renewed,
            session.get(renewed.base_url + "/history", allow_redirects=False) as ended,
        ):
            assert ended.status == 303


async def test_waiting_for_you_lists_the_persons_questions_first_and_alone(provider: Provider, tmp_path: Path) -> None:
    extra = (
        '[[web.subscriptions]]\nagents = ["ops-*"]\nresponders = ["@other.org"]\n'
        '[[web.subscriptions]]\nagentless = true\nresponders = ["@example.org"]\n'
    )
    async with alice_signed_in(provider, tmp_path, extra) as (program, alice):
        first = await ask(program, alice, GO)
        theirs = await ask(program, alice, GO, agent="ops-1")
        last = await ask(program, alice, GO)

        async def listed(path: str) -> list[str]:
            async with alice.get(program.base_url + path) as page:
                html = await page.text()
            return [part.split('"', 1)[0] for part in html.split('data-question="')[1:]]

        assert await listed("/") == [first, last, theirs]
        assert await listed("/?mine=1") == [first, last]
        async with alice.get(program.base_url + "/") as page:
            assert '<a href="/?mine=1">Waiting for you</a>' in await page.text()


async def test_bulk_approval_approves_each_selected_plan_under_the_persons_name(server: Running) -> None:
    async with browser() as alice:
        await sign_in(alice, server.base_url)
        plans = [await ask(server, alice, PLAN_REVIEW | {"id": f"plan{n}"}) for n in range(3)]
        plain = await ask(server, alice, GO)
        async with alice.get(server.base_url + "/") as inbox:
            page = await inbox.text()
        form = page.split('action="/questions/approve"', 1)[1].split("</form>", 1)[0]
        assert all(f'value="{plan}"' in form for plan in plans) and f'value="{plain}"' not in form
        csrf = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        chosen = [("csrf", csrf), ("id", plans[0]), ("id", plans[2]), ("id", plain), ("id", "no-such-question")]
        async with alice.post(server.base_url + "/questions/approve", data=chosen) as approved:
            assert approved.status == 200
            assert "Approved 2 selected question(s) as alice@example.org" in await approved.text()
        for plan, status in zip(plans, ["answered", "pending", "answered"], strict=True):
            result = await outcome(server, alice, plan)
            assert result["status"] == status
            if status == "answered":
                assert result["resolvedBy"] == "alice@example.org"
        assert (await outcome(server, alice, plain))["status"] == "pending"
        events = await server.installation.ledger.store.history(question_id=plans[0])
        assert [event.actor for event in events if event.kind == "answered"] == ["alice@example.org"]
        async with alice.post(server.base_url + "/questions/approve", data=[("csrf", "forged"), ("id", plans[1])]) as r:
            assert r.status == 403
        assert (await outcome(server, alice, plans[1]))["status"] == "pending"


async def test_waiting_for_you_and_person_first_span_every_page(provider: Provider, tmp_path: Path) -> None:
    yes_no = [{"label": "yes"}, {"label": "no"}]
    async with alice_signed_in(provider, tmp_path, OPS_TO_OTHER_ORG) as (program, alice):
        store = program.installation.ledger.store
        for n in range(PAGE_SIZE + 1):  # hers, the oldest: all but one would sit on page 2 newest first
            body = {"questions": [{"id": f"q{n}", "question": f"Deploy build {n}?", "options": yes_no}]}
            async with alice.post(program.base_url + "/v1/questions", json=body) as asked:
                assert asked.status in (200, 201, 202)
        question = {"id": "ops", "question": "Restart the cache?", "options": yes_no}
        others = [await ask(program, alice, question, agent=f"ops-{n}") for n in range(2)]
        with anyio.fail_after(10):
            while await store.count_questions("pending", channel="web") < PAGE_SIZE + 3:
                await anyio.sleep(0.02)
        hers = [
            r.id for r in await store.list_questions(status="pending", channel="web", limit=500, newest_first=False)
        ]
        hers = [question_id for question_id in hers if question_id not in others]

        async def listed(path: str) -> tuple[list[str], str]:
            async with alice.get(program.base_url + path) as page:
                html = await page.text()
            return [part.split('"', 1)[0] for part in html.split('data-question="')[1:]], html

        first, html = await listed("/")
        assert first == hers[:PAGE_SIZE] and '<a href="/?page=2" rel="next">' in html
        assert (await listed("/?page=2"))[0] == [hers[PAGE_SIZE], *reversed(others)]
        mine, html = await listed("/?mine=1")
        assert mine == hers[:PAGE_SIZE] and '<a href="/?mine=1&amp;page=2" rel="next">' in html
        mine, html = await listed("/?mine=1&page=2")
        assert mine == [hers[PAGE_SIZE]] and '<a href="/?mine=1" rel="prev">' in html
        assert '<a href="/?mine=1">Newest</a>' in html


async def test_the_live_count_of_waiting_for_you_is_the_persons(provider: Provider, tmp_path: Path) -> None:
    async with alice_signed_in(provider, tmp_path, OPS_TO_OTHER_ORG) as (program, alice):
        await ask(program, alice, GO)
        await ask(program, alice, GO, agent="ops-1")
        async with alice.get(program.base_url + "/questions/waiting") as counted:
            assert counted.status == 200 and counted.headers["Cache-Control"] == "no-store"
            assert await counted.json() == {"waiting": 2, "mine": 1}
        async with alice.get(program.base_url + "/?mine=1") as page:
            html = await page.text()
        assert '<p class="count" data-count>1 question</p>' in html and "data-mine-only" in html
        async with (
            aiohttp.ClientSession() as stranger,
            stranger.get(program.base_url + "/questions/waiting", allow_redirects=False) as refused,
        ):
            assert refused.status == 401  # as the card fragments: a script's fetch, not a page to redirect


async def test_bulk_approval_lists_only_the_plans_the_person_may_approve(provider: Provider, tmp_path: Path) -> None:
    async with alice_signed_in(provider, tmp_path, OPS_TO_OTHER_ORG) as (program, alice):
        hers = await ask(program, alice, PLAN_REVIEW | {"id": "plan-a"})
        theirs = await ask(program, alice, PLAN_REVIEW | {"id": "plan-b"}, agent="ops-1")
        async with alice.get(program.base_url + "/") as inbox:
            page = await inbox.text()
        form = page.split('action="/questions/approve"', 1)[1].split("</form>", 1)[0]
        assert f'value="{hers}"' in form and f'value="{theirs}"' not in form
        csrf = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        # Posted anyway (a hand-made form): refused by the responders check, as on its card.
        async with alice.post(program.base_url + "/questions/approve", data=[("csrf", csrf), ("id", theirs)]) as r:
            assert r.status == 200 and "Approved 0 selected" in await r.text()
        assert (await outcome(program, alice, theirs))["status"] == "pending"


async def test_handraise_history_json_shows_each_persons_email_as_actor(
    provider: Provider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with alice_signed_in(provider, tmp_path, TWO_APPROVALS) as (program, alice), browser() as bob:
        question_id = await ask(program, alice, PLAN_REVIEW)
        assert await answer(program, alice, question_id, 0, by="mallory@example.org") == 303
        await bob_signs_in(provider, program, bob)
        assert await answer(program, bob, question_id, 0, by="") == 303
        config = tmp_path / "handraise.toml"
        config.write_text(config_text(provider, tmp_path / "a.db"))
        capsys.readouterr()
        assert await anyio.to_thread.run_sync(main, ["history", "--config", str(config), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    actors = [(line["kind"], line.get("actor")) for line in lines if line["kind"] in ("approved", "answered")]
    assert actors == [
        ("approved", "alice@example.org"),
        ("approved", "bob@other.org"),
        ("answered", "alice@example.org, bob@other.org"),
    ]


HOSTILE_CALLBACKS = {
    "a code the provider never gave": lambda state: {"state": state, "code": "made-up"},
    "an empty code": lambda state: {"state": state, "code": ""},
    "a code of odd characters": lambda state: {"state": state, "code": "\u202e<script>\x00%"},
    "a long code": lambda state: {"state": state, "code": "c" * 4_000},
    "a long state": lambda state: {"state": "s" * 4_000, "code": "c"},
    "an error with markup": lambda state: {"state": state, "error": "<b>" + "x" * 500},
}


@pytest.mark.parametrize("query", list(HOSTILE_CALLBACKS), ids=list(HOSTILE_CALLBACKS))
async def test_a_hostile_callback_gets_a_4xx_page_and_no_session(server: Running, query: str) -> None:
    async with browser() as session:
        async with session.get(server.base_url + "/", allow_redirects=False) as started:
            state = parse_qs(urlsplit(started.headers["Location"]).query)["state"][0]
        url = server.base_url + "/auth/callback?" + urlencode(HOSTILE_CALLBACKS[query](state))
        async with session.get(url, allow_redirects=False) as back:
            page = await back.text()
            assert 400 <= back.status < 500, page
            assert "<b>" not in page and "<script>" not in page
        assert "handraise_session" not in {cookie.key for cookie in session.cookie_jar}


async def test_a_code_the_provider_no_longer_honours_is_refused_with_a_4xx(server: Running, provider: Provider) -> None:
    async with browser() as session:
        async with session.get(server.base_url + "/", allow_redirects=False) as started:
            location = started.headers["Location"]
        async with session.get(location, allow_redirects=False) as back:
            callback = back.headers["Location"]
        provider.codes.clear()  # expired at the provider before the browser came back
        async with session.get(callback) as refused:
            assert refused.status == 401
            assert "the provider refused the code (invalid_grant)" in await refused.text()
