"""A real OpenID Connect provider for the tests, on this machine: discovery, JWKS, an authorization endpoint that
signs in whoever the test says, and a token endpoint that checks the code, PKCE verifier and client secret and
issues an ID token signed by joserfc with an RS256 key. Each test may forge what it issues (`id_token`)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from aiohttp.test_utils import TestServer
from joserfc import jwt
from joserfc.jwk import ECKey, OctKey, RSAKey

CLIENT_ID = "handraise-inbox"
CLIENT_SECRET = "provider-client-secret"


@dataclass
class Grant:
    email: str
    nonce: str
    challenge: str
    redirect_uri: str


Forge = Callable[["Provider", dict[str, Any]], str]


@dataclass
class Provider:
    """The provider's state: its key, the person signing in next, the codes it gave out."""

    issuer: str = ""
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "k1"}))
    person: str = "alice@example.org"
    extra: dict[str, Any] = field(default_factory=dict[str, Any])
    """Claims to add to or override in the next ID tokens (`{"email_verified": False}`)."""
    forge: Forge | None = None
    """Makes the ID token from the claims instead of the honest signature."""
    grants: dict[str, Grant] = field(default_factory=dict[str, Grant])
    authorize_requests: list[dict[str, str]] = field(default_factory=list[dict[str, str]])

    def claims(self, grant: Grant) -> dict[str, Any]:
        now = int(time.time())
        return {
            "iss": self.issuer,
            "sub": grant.email,
            "aud": CLIENT_ID,
            "iat": now,
            "exp": now + 300,
            "nonce": grant.nonce,
            "email": grant.email,
            "email_verified": True,
            **self.extra,
        }

    def sign(self, claims: dict[str, Any], key: RSAKey | ECKey | OctKey | None = None, alg: str = "RS256") -> str:
        return jwt.encode({"alg": alg, "kid": "k1"}, claims, key or self.key, algorithms=[alg])

    async def discovery(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks",
                "response_types_supported": ["code"],
                "id_token_signing_alg_values_supported": ["RS256"],
            }
        )

    async def jwks(self, request: web.Request) -> web.Response:
        return web.json_response({"keys": [self.key.as_dict(private=False)]})

    async def authorize(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        self.authorize_requests.append(query)
        if query.get("client_id") != CLIENT_ID or query.get("code_challenge_method") != "S256":
            return web.Response(status=400, text="bad request")
        code = secrets.token_urlsafe(16)
        self.grants[code] = Grant(self.person, query["nonce"], query["code_challenge"], query["redirect_uri"])
        back = urlencode({"code": code, "state": query["state"]})
        raise web.HTTPFound(f"{query['redirect_uri']}?{back}")

    async def token(self, request: web.Request) -> web.Response:
        form = await request.post()
        expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if request.headers.get("Authorization") != expected:
            return web.json_response({"error": "invalid_client"}, status=401)
        grant = self.grants.pop(str(form.get("code", "")), None)  # a code works once
        if grant is None or form.get("redirect_uri") != grant.redirect_uri:
            return web.json_response({"error": "invalid_grant"}, status=400)
        verifier = str(form.get("code_verifier", ""))
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if digest != grant.challenge:
            return web.json_response({"error": "invalid_grant", "error_description": "PKCE"}, status=400)
        claims = self.claims(grant)
        id_token = self.forge(self, claims) if self.forge else self.sign(claims)
        return web.json_response({"access_token": "at", "token_type": "Bearer", "id_token": id_token})

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self.discovery)
        app.router.add_get("/jwks", self.jwks)
        app.router.add_get("/authorize", self.authorize)
        app.router.add_post("/token", self.token)
        return app


@asynccontextmanager
async def provider_running() -> AsyncIterator[Provider]:
    provider = Provider()
    server = TestServer(provider.app(), host="127.0.0.1")
    await server.start_server()
    try:
        provider.issuer = str(server.make_url("")).rstrip("/")
        yield provider
    finally:
        await server.close()


def unsigned(claims: dict[str, Any]) -> str:
    """An `alg: none` token: what an attacker sends when a verifier might accept no signature."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'kid': 'k1'})}.{part(claims)}."
