"""The suite's OpenID provider (Authlib's server classes) refuses what a real provider refuses, so that a sign-in
test passing against it means the relying party spoke the protocol properly: PKCE S256 only, a nonce, the registered
redirect URI, the client's secret by HTTP Basic, the verifier, and a code used once."""

from __future__ import annotations

import base64
import hashlib
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import aiohttp
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.web.oidc_provider import CLIENT_ID, CLIENT_SECRET, Provider

pytestmark = pytest.mark.anyio

REDIRECT = "http://127.0.0.1:8765/auth/callback"
VERIFIER = "v" * 50
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()
BASIC = aiohttp.encode_basic_auth(CLIENT_ID, CLIENT_SECRET)


def authorization(**changed: str | None) -> dict[str, str]:
    query: dict[str, str | None] = {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": REDIRECT,
        "scope": "openid email",
        "state": "s1",
        "nonce": "n1",
        "code_challenge": CHALLENGE,
        "code_challenge_method": "S256",
    } | changed
    return {key: value for key, value in query.items() if value is not None}


async def authorize(http: aiohttp.ClientSession, provider: Provider, **changed: str | None) -> tuple[int, str]:
    url = f"{provider.issuer}/authorize?{urlencode(authorization(**changed))}"
    async with http.get(url, allow_redirects=False) as reply:
        return reply.status, reply.headers.get("Location", "")


async def code_for(http: aiohttp.ClientSession, provider: Provider, **changed: str | None) -> str:
    status, location = await authorize(http, provider, **changed)
    assert status == 302, location
    back = parse_qs(urlsplit(location).query)
    assert back["state"] == ["s1"]
    return back["code"][0]


async def exchange(
    http: aiohttp.ClientSession, provider: Provider, given: str, auth: str | None = BASIC, **changed: str
) -> tuple[int, dict[str, Any]]:
    form = {"grant_type": "authorization_code", "code": given, "redirect_uri": REDIRECT, "code_verifier": VERIFIER}
    headers = {"Authorization": auth} if auth else {}
    async with http.post(f"{provider.issuer}/token", data=form | changed, headers=headers) as reply:
        return reply.status, await reply.json()


async def test_discovery_names_the_endpoints_and_the_key_verifies_the_id_token(provider: Provider) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{provider.issuer}/.well-known/openid-configuration") as found:
            document = await found.json()
        assert document["issuer"] == provider.issuer
        assert document["code_challenge_methods_supported"] == ["S256"]
        async with http.get(document["jwks_uri"]) as jwks:
            keys = KeySet.import_key_set(await jwks.json())
        status, body = await exchange(http, provider, await code_for(http, provider))
        assert status == 200
        token = jwt.decode(body["id_token"], keys, algorithms=["RS256"])
        assert token.header["kid"] == "k1"
        claims = token.claims
        assert claims["iss"] == provider.issuer and claims["aud"] == [CLIENT_ID] and claims["nonce"] == "n1"
        assert claims["email"] == "alice@example.org" and claims["email_verified"] is True
        assert claims["exp"] > claims["iat"]


@pytest.mark.parametrize(
    "changed",
    [
        {"code_challenge_method": "plain"},
        {"code_challenge_method": None},
        {"code_challenge": None, "code_challenge_method": None},
        {"nonce": None},
        {"client_id": "someone-else"},
        {"redirect_uri": "https://evil.example/auth/callback"},
        {"redirect_uri": "http://127.0.0.1:8765/elsewhere"},
        {"response_type": "token"},
    ],
    ids=["plain", "no method", "no PKCE", "no nonce", "unknown client", "foreign host", "another path", "implicit"],
)
async def test_an_authorization_request_a_real_provider_refuses_is_refused(
    provider: Provider, changed: dict[str, str | None]
) -> None:
    async with aiohttp.ClientSession() as http:
        status, location = await authorize(http, provider, **changed)
        assert status != 302 or "error=" in location
        assert "code=" not in location
        assert not provider.codes


async def test_a_nonce_seen_before_is_refused(provider: Provider) -> None:
    async with aiohttp.ClientSession() as http:
        await code_for(http, provider)
        status, location = await authorize(http, provider)
        assert "code=" not in location and (status != 302 or "error=" in location)


@pytest.mark.parametrize(
    ("auth", "changed"),
    [
        (aiohttp.encode_basic_auth(CLIENT_ID, "wrong"), {}),
        (None, {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}),  # client_secret_post: not registered
        (BASIC, {"code_verifier": "w" * 50}),
        (BASIC, {"code_verifier": ""}),
        (BASIC, {"redirect_uri": "http://127.0.0.1:9999/auth/callback"}),
        (BASIC, {"code": "made-up"}),
    ],
    ids=["wrong secret", "secret in the form", "wrong verifier", "no verifier", "another redirect", "unknown code"],
)
async def test_a_token_request_a_real_provider_refuses_is_refused(
    provider: Provider, auth: str | None, changed: dict[str, str]
) -> None:
    async with aiohttp.ClientSession() as http:
        code = await code_for(http, provider)
        status, body = await exchange(http, provider, code, auth, **changed)
        assert status in (400, 401) and "error" in body and "id_token" not in body
        assert provider.tokens_issued == 0


async def test_a_code_works_once(provider: Provider) -> None:
    async with aiohttp.ClientSession() as http:
        code = await code_for(http, provider)
        assert (await exchange(http, provider, code))[0] == 200
        status, body = await exchange(http, provider, code)
        assert status == 400 and body["error"] == "invalid_grant"
