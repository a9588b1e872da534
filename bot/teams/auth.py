"""Checking that an activity really comes from the Bot Framework, before anything in it is read.

Every request to `/teams/messages` carries `Authorization: Bearer <JWT>`. The token is checked here with PyJWT:
signed RS256 by a key named by its `kid` in the JWKS that the OpenID metadata document names (`jwks_uri`, never a
hard-coded URL), issued by `https://api.botframework.com`, for this bot (`aud` = the app id), inside its `nbf`/`exp`
window (five minutes of clock skew, as the Bot Framework allows), and for the service URL the activity names (the
`serviceurl` claim). A key that lists `endorsements` must endorse the activity's channel. Anything else is refused.

The keys are cached for a day; a token naming a key not yet known makes one refresh at most every few minutes, so a
rolled key is picked up while forged `kid`s cannot make the bot hammer the metadata endpoint.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio
import jwt
from jwt import PyJWK

from bot.errors import HandraiseError
from bot.teams.errors import TeamsErrorCode

log = logging.getLogger(__name__)

ISSUER = "https://api.botframework.com"
ALGORITHM = "RS256"
LEEWAY_SECONDS = 300
"""Clock skew the Bot Framework's own validation allows."""
KEYS_KEPT_SECONDS = 24 * 3600
REFRESH_AT_MOST_EVERY = 300.0
"""An unknown `kid` refreshes the keys, but no oftener than this."""
FETCH_SECONDS = 2.0
"""Each of the two documents; Teams wants every activity answered within 5 s, the first one too."""
MAX_DOCUMENT = 1 << 20
MAX_TOKEN = 16 * 1024
"""A Bot Framework token is about a kilobyte; a header far larger is not one."""


class Unauthorized(HandraiseError):
    """The request is not from the Bot Framework for this bot; the message says why (for the log, not the caller)."""

    code = TeamsErrorCode.UNAUTHORIZED


class KeysUnavailable(HandraiseError):
    """The signing keys cannot be fetched now, so no token can be checked (the caller answers 503: Teams retries)."""

    code = TeamsErrorCode.KEYS_UNAVAILABLE


@dataclass(frozen=True)
class Claims:
    """What a checked token says: who it is for and the service URL it was issued for."""

    audience: str
    service_url: str
    raw: Mapping[str, Any]


def bearer(header: str | None) -> str:
    """The token in an Authorization header; raises Unauthorized for none, another scheme, or oversize."""
    if not header:
        raise Unauthorized("no Authorization header")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.casefold() != "bearer" or not token:
        raise Unauthorized("the Authorization header is not a bearer token")
    if len(token) > MAX_TOKEN:
        raise Unauthorized("the bearer token is too long to be a Bot Framework token")
    return token


def same_service_url(claimed: str, given: str) -> bool:
    """Whether the token's `serviceurl` claim is the activity's `serviceUrl` (a trailing slash aside)."""
    return bool(claimed) and claimed.rstrip("/") == given.rstrip("/")


class SigningKeys:
    """The Bot Framework's signing keys by `kid`, fetched through the OpenID metadata document and cached."""

    def __init__(self, metadata_url: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.metadata_url = metadata_url
        self.clock = clock
        self._keys: dict[str, PyJWK] = {}
        self._endorsements: dict[str, frozenset[str] | None] = {}
        self._fetched_at: float | None = None
        self._lock = anyio.Lock()
        self._session: aiohttp.ClientSession | None = None

    async def key(self, kid: str) -> tuple[PyJWK, frozenset[str] | None]:
        """The key named `kid` and the channels it endorses (None: any). Raises Unauthorized for a key the
        issuer does not publish, KeysUnavailable when the keys cannot be fetched."""
        now = self.clock()
        stale = self._fetched_at is None or now - self._fetched_at > KEYS_KEPT_SECONDS
        unknown = kid not in self._keys
        if stale or (unknown and now - (self._fetched_at or 0.0) > REFRESH_AT_MOST_EVERY):
            async with self._lock:
                if self._fetched_at is None or self._fetched_at < now:
                    await self._refresh()
        if kid not in self._keys:
            raise Unauthorized(f"the token is signed by a key ({kid[:40]!r}) the issuer does not publish")
        return self._keys[kid], self._endorsements[kid]

    async def prefetch(self) -> None:
        """Fetch the keys before the first activity needs them; a failure is logged (the first activity retries)."""
        try:
            async with self._lock:
                await self._refresh()
        except KeysUnavailable as failure:
            log.warning("teams: cannot fetch the signing keys yet: %s", failure)

    async def _refresh(self) -> None:
        metadata = await self._fetch_json(self.metadata_url)
        jwks_uri = metadata.get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            raise KeysUnavailable(f"the OpenID metadata at {self.metadata_url} names no jwks_uri")
        document = await self._fetch_json(jwks_uri)
        entries = document.get("keys")
        if not isinstance(entries, list):
            raise KeysUnavailable(f"the key set at {jwks_uri} has no keys")
        keys: dict[str, PyJWK] = {}
        endorsements: dict[str, frozenset[str] | None] = {}
        for entry in entries:
            kid = entry.get("kid") if isinstance(entry, dict) else None
            if not isinstance(kid, str) or entry.get("kty") != "RSA":
                continue
            try:
                keys[kid] = PyJWK({k: v for k, v in entry.items() if k != "endorsements"}, algorithm=ALGORITHM)
            except (jwt.PyJWKError, ValueError, TypeError) as problem:
                log.warning("teams: skipping signing key %r: %s", kid[:40], problem)
                continue
            endorsed = entry.get("endorsements")
            endorsements[kid] = frozenset(str(channel) for channel in endorsed) if isinstance(endorsed, list) else None
        self._keys, self._endorsements = keys, endorsements
        self._fetched_at = self.clock()

    async def _fetch_json(self, url: str) -> dict[str, Any]:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=FETCH_SECONDS))
        try:
            async with self._session.get(url) as response:
                body = await response.content.read(MAX_DOCUMENT + 1)
                if response.status != 200 or len(body) > MAX_DOCUMENT:
                    raise KeysUnavailable(f"{url} answered {response.status}")
        except (aiohttp.ClientError, TimeoutError) as failure:
            raise KeysUnavailable(f"cannot fetch {url}: {type(failure).__name__}") from None
        try:
            document = json.loads(body)
        except ValueError:
            raise KeysUnavailable(f"{url} did not answer JSON") from None
        if not isinstance(document, dict):
            raise KeysUnavailable(f"{url} did not answer a JSON object")
        return document

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class TokenCheck:
    """Checks the bearer tokens of incoming activities for the bot `app_id`."""

    def __init__(self, app_id: str, keys: SigningKeys) -> None:
        self.app_id = app_id
        self.keys = keys

    async def verify(self, header: str | None, *, service_url: str, channel_id: str | None) -> Claims:
        """The token's claims, once every check holds. Raises Unauthorized, or KeysUnavailable."""
        token = bearer(header)
        try:
            head = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise Unauthorized("the bearer token is not a JWT") from None
        if head.get("alg") != ALGORITHM:
            raise Unauthorized(f"the token is not signed with {ALGORITHM} (alg {str(head.get('alg'))[:20]!r})")
        kid = head.get("kid")
        if not isinstance(kid, str) or not kid:
            raise Unauthorized("the token names no signing key (kid)")
        key, endorsed = await self.keys.key(kid)
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[ALGORITHM],
                audience=self.app_id,
                issuer=ISSUER,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "nbf", "iss", "aud"]},
            )
        except jwt.InvalidTokenError as problem:
            raise Unauthorized(f"the token does not hold: {type(problem).__name__}: {problem}") from None
        claimed = claims.get("serviceurl")
        if not isinstance(claimed, str) or not same_service_url(claimed, service_url):
            raise Unauthorized("the token was issued for another service URL than the activity names")
        if endorsed is not None and (channel_id is None or channel_id not in endorsed):
            raise Unauthorized(f"the signing key does not endorse the channel {str(channel_id)[:20]!r}")
        return Claims(audience=self.app_id, service_url=claimed, raw=claims)
