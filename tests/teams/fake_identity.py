"""A local stand-in for the Bot Framework's identity provider on 127.0.0.1:0: an OpenID metadata document whose
`jwks_uri` names its own key set, and tokens signed with a real RSA key through PyJWT, as the Bot Framework signs
the activities it posts. Forgeries (another key, `alg: none`, no signature, HS256 with the public key) are made here
too, so the tests can show that each is refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

APP_ID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
ISSUER = "https://api.botframework.com"
KID = "bf-key-1"


_KEYS: dict[str, rsa.RSAPrivateKey] = {}


def signing_key(name: str = "issuer") -> rsa.RSAPrivateKey:
    """An RSA key per name, made once per test run (making one takes a moment)."""
    if name not in _KEYS:
        _KEYS[name] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return _KEYS[name]


def public_jwk(key: rsa.RSAPrivateKey, kid: str, **extra: Any) -> dict[str, Any]:
    jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    return jwk | {"kid": kid, "use": "sig", "alg": "RS256"} | extra


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class FakeIdentity:
    """The metadata and key set being served, the tokens it signs, and how often each document was fetched."""

    url: str = ""
    keys: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    fetches: dict[str, int] = field(default_factory=lambda: {"metadata": 0, "keys": 0})
    down: bool = False

    @property
    def metadata_url(self) -> str:
        return f"{self.url}/v1/.well-known/openidconfiguration"

    def claims(self, service_url: str, **changes: Any) -> dict[str, Any]:
        now = int(time.time())
        base = {"iss": ISSUER, "aud": APP_ID, "serviceurl": service_url, "nbf": now - 60, "exp": now + 3600}
        return {k: v for k, v in (base | changes).items() if v is not None}

    def token(self, service_url: str, *, kid: str = KID, key: str = "issuer", **changes: Any) -> str:
        """A token as the Bot Framework issues it (signed by the served key), with `changes` to its claims."""
        return jwt.encode(
            self.claims(service_url, **changes), signing_key(key), algorithm="RS256", headers={"kid": kid}
        )

    def header(self, service_url: str, **changes: Any) -> str:
        return "Bearer " + self.token(service_url, **changes)

    def unsigned(self, service_url: str, alg: str = "none") -> str:
        """A token with no signature at all, its header naming `alg`."""
        head = _b64(json.dumps({"alg": alg, "typ": "JWT", "kid": KID}).encode())
        body = _b64(json.dumps(self.claims(service_url)).encode())
        return f"{head}.{body}."

    def hs256_with_public_key(self, service_url: str) -> str:
        """The old confusion attack: HS256 "signed" with the issuer's public key as the secret."""
        public = (
            signing_key()
            .public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": KID}).encode())
        body = _b64(json.dumps(self.claims(service_url)).encode())
        signature = hmac.new(public, f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{_b64(signature)}"

    async def _metadata(self, request: web.Request) -> web.Response:
        self.fetches["metadata"] += 1
        if self.down:
            return web.Response(status=503)
        return web.json_response(
            {
                "issuer": ISSUER,
                "jwks_uri": f"{self.url}/v1/.well-known/keys",
                "id_token_signing_alg_values_supported": ["RS256"],
            }
        )

    async def _keys(self, request: web.Request) -> web.Response:
        self.fetches["keys"] += 1
        if self.down:
            return web.Response(status=503)
        return web.json_response({"keys": self.keys})


@asynccontextmanager
async def fake_identity() -> AsyncIterator[FakeIdentity]:
    """A FakeIdentity serving on a free loopback port; its `metadata_url` is the `openid_metadata_url` to give."""
    fake = FakeIdentity(keys=[public_jwk(signing_key(), KID, endorsements=["msteams"])])
    app = web.Application()
    app.router.add_get("/v1/.well-known/openidconfiguration", fake._metadata)
    app.router.add_get("/v1/.well-known/keys", fake._keys)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    fake.url = f"http://{host}:{port}"
    try:
        yield fake
    finally:
        await runner.cleanup()
