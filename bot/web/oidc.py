"""The OpenID Connect relying party: discovery, the authorization request (code flow, PKCE S256, state, nonce), the
code exchange, and the ID token's checks. joserfc does every JOSE and key operation; nothing here signs or verifies.

The identity is the ID token's `email` (checked `email_verified`), never the userinfo endpoint's word alone.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus, urlencode

import aiohttp
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

ALGORITHMS = ("RS256", "ES256")
"""Asymmetric signatures only: `none` is no signature, and an HMAC key would be the client secret, which the provider
shares with every replica that holds it."""
SCOPE = "openid email"
TIMEOUT = aiohttp.ClientTimeout(total=10)
MAX_DOCUMENT = 1024 * 1024
"""A discovery document, key set or token response larger than this is not the provider's."""


class SignInRefused(Exception):
    """The sign-in cannot go on; the message says why, for the person and the log."""


class ProviderUnreachable(Exception):
    """The provider did not answer as a provider does (down, or its documents unreadable)."""


@dataclass(frozen=True)
class Endpoints:
    """What the discovery document says, of what the code flow uses."""

    issuer: str
    authorization: str
    token: str
    jwks: str


@dataclass(frozen=True)
class Attempt:
    """One sign-in under way, kept in the browser's signed flow cookie so that only that browser can finish it."""

    state: str
    nonce: str
    verifier: str

    @classmethod
    def new(cls) -> Attempt:
        return cls(secrets.token_urlsafe(24), secrets.token_urlsafe(24), secrets.token_urlsafe(48))

    @property
    def challenge(self) -> str:
        """PKCE's S256 code challenge (RFC 7636 §4.2): the verifier's SHA-256, base64url without padding."""
        digest = hashlib.sha256(self.verifier.encode("ascii")).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class RelyingParty:
    """handraise as an OpenID Connect client of `issuer`; the discovery document is fetched once, keys per sign-in
    (sign-ins are rare, and a rotated key is then never missed)."""

    def __init__(self, issuer: str, client_id: str, client_secret: str) -> None:
        self.issuer = issuer
        self.client_id = client_id
        self.client_secret = client_secret
        self._endpoints: Endpoints | None = None

    async def endpoints(self) -> Endpoints:
        if self._endpoints is None:
            url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
            document = await _get_json(url)
            try:
                found = Endpoints(
                    str(document["issuer"]),
                    str(document["authorization_endpoint"]),
                    str(document["token_endpoint"]),
                    str(document["jwks_uri"]),
                )
            except KeyError as missing:
                raise ProviderUnreachable(f"the discovery document at {url} lacks {missing}") from None
            if found.issuer != self.issuer:
                raise ProviderUnreachable(f"the discovery document names issuer {found.issuer!r}, not {self.issuer!r}")
            self._endpoints = found
        return self._endpoints

    async def authorization_url(self, attempt: Attempt, redirect_uri: str) -> str:
        endpoints = await self.endpoints()
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "scope": SCOPE,
            "state": attempt.state,
            "nonce": attempt.nonce,
            "code_challenge": attempt.challenge,
            "code_challenge_method": "S256",
        }
        separator = "&" if "?" in endpoints.authorization else "?"
        return endpoints.authorization + separator + urlencode(query)

    async def finish(self, code: str, attempt: Attempt, redirect_uri: str) -> str:
        """Exchange `code` and check the ID token; the verified email, or SignInRefused saying why not."""
        endpoints = await self.endpoints()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": attempt.verifier,
        }
        # client_secret_basic, the spec's default; RFC 6749 §2.3.1 form-encodes both parts first.
        basic = aiohttp.encode_basic_auth(quote_plus(self.client_id), quote_plus(self.client_secret))
        headers = {"Accept": "application/json", "Authorization": basic}
        try:
            async with (
                aiohttp.ClientSession(timeout=TIMEOUT) as http,
                http.post(endpoints.token, data=form, headers=headers) as reply,
            ):
                body = await _read_json(reply)
                if reply.status != 200:
                    error = body.get("error", reply.status) if isinstance(body, dict) else reply.status
                    raise SignInRefused(f"the provider refused the code ({error})")
        except (aiohttp.ClientError, TimeoutError) as failed:
            raise ProviderUnreachable(f"the token endpoint did not answer: {failed}") from None
        id_token = body.get("id_token") if isinstance(body, dict) else None
        if not isinstance(id_token, str):
            raise SignInRefused("the provider's answer has no ID token")
        keys = await self._keys(endpoints.jwks)
        return self.identity(id_token, keys, attempt.nonce)

    def identity(self, id_token: str, keys: KeySet, nonce: str) -> str:
        """The ID token's verified email, once its signature and claims hold; SignInRefused otherwise."""
        try:
            token = jwt.decode(id_token, keys, algorithms=list(ALGORITHMS))
        except JoseError as bad:
            raise SignInRefused(f"the ID token's signature does not hold ({bad.error})") from None
        except (ValueError, TypeError):
            raise SignInRefused("the ID token is not a JWT") from None
        claims = token.claims
        registry = jwt.JWTClaimsRegistry(
            leeway=60,
            iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": self.client_id},
            exp={"essential": True},
            nonce={"essential": True, "value": nonce},
        )
        try:
            registry.validate(claims)
        except JoseError as bad:
            raise SignInRefused(f"the ID token does not hold: {bad.description or bad.error}") from None
        audience = claims.get("aud")
        if isinstance(audience, list) and len(audience) > 1 and claims.get("azp") != self.client_id:
            raise SignInRefused("the ID token was issued to another client (azp)")
        email = claims.get("email")
        if not isinstance(email, str) or "@" not in email:
            raise SignInRefused("the ID token carries no email; ask for the scope 'openid email'")
        if claims.get("email_verified") is not True:
            raise SignInRefused(f"the provider has not verified {email}")
        return email

    async def _keys(self, url: str) -> KeySet:
        document = await _get_json(url)
        try:
            return KeySet.import_key_set(document)  # pyright: ignore[reportArgumentType]
        except (JoseError, ValueError, TypeError, KeyError) as bad:
            raise ProviderUnreachable(f"the provider's key set at {url} is unreadable ({bad})") from None


async def _get_json(url: str) -> dict[str, Any]:
    try:
        async with aiohttp.ClientSession(timeout=TIMEOUT) as http, http.get(url) as reply:
            if reply.status != 200:
                raise ProviderUnreachable(f"{url} answered {reply.status}")
            body = await _read_json(reply)
    except (aiohttp.ClientError, TimeoutError) as failed:
        raise ProviderUnreachable(f"{url} did not answer: {failed}") from None
    if not isinstance(body, dict):
        raise ProviderUnreachable(f"{url} did not answer a JSON object")
    return body  # pyright: ignore[reportUnknownVariableType]


async def _read_json(reply: aiohttp.ClientResponse) -> object:
    raw = await reply.content.read(MAX_DOCUMENT + 1)
    if len(raw) > MAX_DOCUMENT:
        raise ProviderUnreachable(f"{reply.url} answered more than {MAX_DOCUMENT} bytes")
    try:
        return json.loads(raw)
    except ValueError:
        return None
