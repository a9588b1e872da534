"""A real OpenID Connect provider for the tests, on this machine, built on Authlib's authorization-server classes:
`AuthorizationServer` with the authorization code grant, PKCE (S256 only, required) and `OpenIDCode` (a nonce
required, never seen before), discovery checked by Authlib's `OpenIDProviderMetadata`, a JWKS, and RS256 ID tokens
that Authlib signs through joserfc. The client authenticates with `client_secret_basic`, and a code works once.

The provider runs in the tests' own event loop (aiohttp), so a test may change who signs in next or forge what the
next token is (`forge`) between two requests without a thread in between. Authlib is framework-neutral: the three
methods a framework integration gives (`create_oauth2_request`, `handle_response`, `send_signal`) are written here
for aiohttp.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

from aiohttp import web
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import AuthorizationServer, ClientMixin, OAuth2Payload, OAuth2Request, grants
from authlib.oauth2.rfc6749.errors import InvalidRequestError
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.core import OpenIDCode, UserInfo
from authlib.oidc.discovery import OpenIDProviderMetadata
from joserfc import jwt
from joserfc.jwk import ECKey, OctKey, RSAKey
from multidict import MultiMapping

from tests.web.local_server import app_served

CLIENT_ID = "handraise-inbox"
CLIENT_SECRET = "provider-client-secret"
KID = "k1"
SCOPES = ["openid", "email"]
CALLBACK_PATH = "/auth/callback"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

Forge = Callable[["Provider", dict[str, Any]], str]


class Client(ClientMixin):
    """The one client registered: handraise's inbox, confidential, code flow only. Its redirect URI is its callback
    on this machine, whatever port the test's `serve` listens on (the port is only known once it runs)."""

    def get_client_id(self) -> str:
        return CLIENT_ID

    def get_default_redirect_uri(self) -> str:
        return ""  # none: the request must name one

    def get_allowed_scope(self, scope: Collection[str] | str) -> str:
        asked = scope.split() if isinstance(scope, str) else scope
        return " ".join(part for part in asked if part in SCOPES)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        parts = urlsplit(redirect_uri)
        return (
            parts.scheme == "http"
            and parts.hostname in LOOPBACK
            and parts.path == CALLBACK_PATH
            and not parts.query
            and not parts.fragment
        )

    def check_client_secret(self, client_secret: str) -> bool:
        return secrets.compare_digest(client_secret.encode(), CLIENT_SECRET.encode())

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return endpoint != "token" or method == "client_secret_basic"

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type == "authorization_code"


@dataclass(frozen=True)
class Code:
    """An authorization code given out, with what the token request must match and the ID token must say."""

    code: str
    email: str
    redirect_uri: str
    scope: str
    nonce: str
    code_challenge: str
    code_challenge_method: str
    auth_time: int

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> str:
        return self.nonce

    def get_auth_time(self) -> int:
        return self.auth_time

    def get_acr(self) -> None:
        return None

    def get_amr(self) -> None:
        return None


class Request(OAuth2Request):
    """An aiohttp request as Authlib reads one: the query and the (already read) form, as Flask's `values` are."""

    def __init__(self, request: web.Request, form: MultiMapping[Any] | None = None) -> None:
        super().__init__(request.method, str(request.url), headers=request.headers)
        self._args: dict[str, str | None] = {key: str(value) for key, value in request.query.items()}
        self._form: dict[str, str] = {key: str(value) for key, value in (form or {}).items()}
        lists: dict[str, list[str]] = {}
        for source in (request.query, form or {}):
            for key, value in source.items():
                lists.setdefault(key, []).append(str(value))
        self.payload = Payload({key: str(value) for key, value in {**self._args, **self._form}.items()}, lists)

    @property
    def args(self) -> dict[str, str | None]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class Payload(OAuth2Payload):
    def __init__(self, data: dict[str, str], lists: dict[str, list[str]]) -> None:
        self._data = data
        self._lists = lists

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> Any:
        return self._lists


class Server(AuthorizationServer):
    """Authlib's authorization server, answered through aiohttp."""

    def __init__(self, provider: Provider) -> None:
        super().__init__(scopes_supported=SCOPES)
        self.provider = provider
        self.client = Client()
        self.register_token_generator("default", BearerTokenGenerator(lambda **_: secrets.token_urlsafe(32)))
        self.register_grant(CodeGrant, [S256Only(required=True), OpenID(provider)])

    def query_client(self, client_id: str) -> Client | None:  # pyright: ignore[reportIncompatibleMethodOverride]
        """None for an unknown client, as Authlib's own integrations answer (its hint says a client always)."""
        return self.client if client_id == CLIENT_ID else None

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        self.provider.tokens_issued += 1

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        assert isinstance(request, OAuth2Request), "the handlers build the request (its form is read asynchronously)"
        return request

    def handle_response(self, status: int, body: Any, headers: Any) -> web.Response:
        text = json.dumps(body) if isinstance(body, dict) else str(body or "")
        response = web.Response(status=status, text=text)
        for name, value in headers:
            response.headers[name] = value
        return response

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        """No listeners: the tests read the provider's state instead."""


class CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic"]  # noqa: RUF012 (Authlib's class attribute)

    @property
    def provider(self) -> Provider:
        return self.server.provider

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        assert request.payload is not None
        data = request.payload.data
        self.provider.codes[code] = Code(
            code=code,
            email=str(request.user),
            redirect_uri=data["redirect_uri"],
            scope=request.scope,
            nonce=data["nonce"],
            code_challenge=data["code_challenge"],
            code_challenge_method=data["code_challenge_method"],
            auth_time=int(time.time()),
        )
        self.provider.nonces.add(data["nonce"])

    def query_authorization_code(self, code: str, client: ClientMixin) -> Code | None:
        return self.provider.codes.get(code) if client.get_client_id() == CLIENT_ID else None

    def delete_authorization_code(self, authorization_code: Code) -> None:
        self.provider.codes.pop(authorization_code.code, None)  # a code works once

    def authenticate_user(self, authorization_code: Code) -> str:
        return authorization_code.email


class S256Only(CodeChallenge):
    """PKCE as the issue asks: a challenge always, and only S256 (`plain` would show the verifier to the network)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]  # noqa: RUF012 (Authlib's class attribute)

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge") or data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("PKCE with code_challenge_method S256 is required")
        super().validate_code_challenge(grant, redirect_uri)


class OpenID(OpenIDCode):
    """The ID token: RS256 under the provider's key, `iss` the provider, `aud` the client, the code's nonce, and the
    person's email (verified). A test's `forge` may replace it, from the very claims Authlib put in the honest one."""

    def __init__(self, provider: Provider) -> None:
        super().__init__(require_nonce=True)
        self.provider = provider

    def exists_nonce(self, nonce: str, request: OAuth2Request) -> bool:
        return nonce in self.provider.nonces

    def resolve_client_private_key(self, client: ClientMixin) -> RSAKey:
        return self.provider.key

    def get_client_algorithm(self, client: ClientMixin) -> str:
        return "RS256"

    def get_encode_header(self, client: ClientMixin) -> dict[str, str]:
        return {"alg": "RS256", "kid": KID}

    def get_client_claims(self, client: ClientMixin) -> dict[str, Any]:
        return {"iss": self.provider.issuer, "aud": [client.get_client_id()], "exp": int(time.time()) + 300}

    def generate_user_info(self, user: str, scope: str) -> UserInfo:
        claims = UserInfo(sub=user)
        if "email" in scope.split():
            claims.update(email=user, email_verified=True)
        return claims

    def encode_id_token(self, token: dict[str, Any], request: OAuth2Request) -> str:
        honest = str(cast(Any, super()).encode_id_token(token, request))
        if self.provider.forge is None:
            return honest
        claims = dict(jwt.decode(honest, self.provider.key, algorithms=["RS256"]).claims)
        return self.provider.forge(self.provider, claims)


@dataclass
class Provider:
    """The provider's state: its key, the person signing in next, the codes and nonces it gave out."""

    issuer: str = ""
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": KID}))
    person: str = "alice@example.org"
    forge: Forge | None = None
    """Makes the ID token from the honest claims instead of the honest signature."""
    codes: dict[str, Code] = field(default_factory=dict[str, Code])
    nonces: set[str] = field(default_factory=set[str])
    tokens_issued: int = 0
    authorize_requests: list[dict[str, str]] = field(default_factory=list[dict[str, str]])

    def sign(self, claims: Mapping[str, Any], key: RSAKey | ECKey | OctKey | None = None, alg: str = "RS256") -> str:
        """Signs what a forgery says with joserfc directly: Authlib's server would never issue these tokens."""
        return jwt.encode({"alg": alg, "kid": KID}, dict(claims), key or self.key, algorithms=[alg])

    def metadata(self) -> OpenIDProviderMetadata:
        document = OpenIDProviderMetadata(
            issuer=self.issuer,
            authorization_endpoint=f"{self.issuer}/authorize",
            token_endpoint=f"{self.issuer}/token",
            jwks_uri=f"{self.issuer}/jwks",
            scopes_supported=SCOPES,
            response_types_supported=["code"],
            grant_types_supported=["authorization_code"],
            subject_types_supported=["public"],
            id_token_signing_alg_values_supported=["RS256"],
            token_endpoint_auth_methods_supported=["client_secret_basic"],
            code_challenge_methods_supported=["S256"],
            claims_supported=["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "email", "email_verified"],
        )
        document.validate()
        return document

    async def discovery(self, request: web.Request) -> web.Response:
        return web.json_response(dict(self.metadata()))

    async def jwks(self, request: web.Request) -> web.Response:
        return web.json_response({"keys": [self.key.as_dict(private=False)]})

    async def authorize(self, request: web.Request) -> web.StreamResponse:
        """Signs in `person` at once (no login page: the test says who it is) and redirects back with a code."""
        self.authorize_requests.append(dict(request.query))
        oauth = Request(request)
        try:
            grant = server(request).get_consent_grant(oauth, end_user=self.person)
        except OAuth2Error as error:
            return web.Response(status=400, text=f"{error.error}: {error.description}")
        return cast(web.Response, server(request).create_authorization_response(oauth, self.person, grant))

    async def token(self, request: web.Request) -> web.StreamResponse:
        return cast(web.Response, server(request).create_token_response(Request(request, await request.post())))

    def app(self) -> web.Application:
        app = web.Application()
        app[SERVER] = Server(self)
        app.router.add_get("/.well-known/openid-configuration", self.discovery)
        app.router.add_get("/jwks", self.jwks)
        app.router.add_get("/authorize", self.authorize)
        app.router.add_post("/token", self.token)
        return app


SERVER = web.AppKey("server", Server)


def server(request: web.Request) -> Server:
    return request.app[SERVER]


@asynccontextmanager
async def provider_running() -> AsyncIterator[Provider]:
    provider = Provider()
    async with app_served(provider.app()) as origin:
        provider.issuer = origin
        yield provider


def unsigned(claims: dict[str, Any]) -> str:
    """An `alg: none` token: what an attacker sends when a verifier might accept no signature."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'kid': KID})}.{part(claims)}."
