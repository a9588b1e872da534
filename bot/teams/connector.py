"""The Bot Connector API as the Teams channel uses it: the bot's own token, posting and updating activities, and
reading who a member is.

The token comes from a client-credentials POST to the configured token URL (used exactly as given) and is kept until
shortly before it expires. Every body is measured as sent (UTF-8 JSON) and one over Teams' 28,000 bytes is never
sent: the cards are built to fit, so that would be a bug, raised as one. A 429 waits the `Retry-After` it names and
retries once, never sooner; a 401 fetches a fresh token and retries once. Neither the password nor a token is ever
put in a log line or an error.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp
import anyio
from yarl import URL

from bot.errors import HandraiseError
from bot.teams.errors import TeamsErrorCode

log = logging.getLogger(__name__)

MAX_BODY = 28_000
"""Teams refuses a message body over about 28 KB (counted on the JSON as sent)."""
SCOPE = "https://api.botframework.com/.default"
TOKEN_MARGIN_SECONDS = 300
"""A token is renewed this long before it expires."""
CALL_SECONDS = 10.0
MAX_RETRY_AFTER = 60.0
"""A Retry-After longer than this is not waited: the call fails, saying so."""
MAX_ANSWER = 1 << 20

Sleep = Callable[[float], Awaitable[None]]


class TeamsCallError(HandraiseError):
    """A Bot Connector call or the token request failed: `status` (0 when Teams could not be reached) and what
    Teams said (its error code), never a token."""

    code = TeamsErrorCode.CALL_FAILED

    def __init__(self, what: str, status: int, reason: str) -> None:
        super().__init__(f"{what}: {status or 'unreachable'} {reason}".rstrip())
        self.what = what
        self.status = status
        self.reason = reason


class BodyTooLarge(HandraiseError, ValueError):
    """A body over MAX_BODY was about to be sent; the renderers keep every card within it, so this is a bug."""

    code = TeamsErrorCode.RENDER


@dataclass(frozen=True)
class Member:
    """Who a conversation member is: their Teams id, name, email/UPN and Microsoft Entra object id."""

    id: str
    name: str = ""
    email: str = ""
    upn: str = ""
    aad: str = ""

    @property
    def shown(self) -> str:
        """How an answered card names them: their name, else their email; never a raw id."""
        return self.name or self.email or self.upn or "someone in Teams"

    @property
    def handles(self) -> tuple[str, ...]:
        """Every way a responders list may name them."""
        return tuple(dict.fromkeys(h for h in (self.email, self.upn, self.aad) if h))


def body_bytes(payload: Mapping[str, Any]) -> bytes:
    """The body exactly as it is sent."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def retry_after(value: str | None, now: float | None = None) -> float:
    """Seconds a Retry-After header asks for (a number, or an HTTP date); 1 when absent or unreadable."""
    if not value:
        return 1.0
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return 1.0
    return max(0.0, when - (time.time() if now is None else now))


class BotToken:
    """The bot's token for the Bot Connector, fetched with client credentials and kept until shortly before it
    expires."""

    def __init__(self, token_url: str, app_id: str, password: str, *, clock: Callable[[], float] = time.monotonic):
        self.token_url = token_url
        self.app_id = app_id
        self._password = password
        self.clock = clock
        self._token: str | None = None
        self._until = 0.0
        self._lock = anyio.Lock()

    def __repr__(self) -> str:
        return f"BotToken({self.token_url!r}, app_id={self.app_id!r})"

    def forget(self, token: str) -> None:
        """Teams refused `token`: the next call fetches a new one."""
        if self._token == token:
            self._token = None

    async def get(self, session: aiohttp.ClientSession) -> str:
        """A token valid for a while yet; raises TeamsCallError when none can be had."""
        async with self._lock:
            if self._token is None or self.clock() >= self._until:
                form = {
                    "grant_type": "client_credentials",
                    "client_id": self.app_id,
                    "client_secret": self._password,
                    "scope": SCOPE,
                }
                status, answer = await _request(session, "POST", self.token_url, "get a token", data=form)
                token, lifetime = answer.get("access_token"), answer.get("expires_in")
                if status != 200 or not isinstance(token, str) or not token:
                    reason = str(answer.get("error") or "no access_token")[:100]
                    raise TeamsCallError("get a token", status, reason)
                seconds = float(lifetime) if isinstance(lifetime, int | float | str) and _number(lifetime) else 3600
                self._token, self._until = token, self.clock() + max(seconds - TOKEN_MARGIN_SECONDS, seconds / 2)
            return self._token


def _number(value: object) -> bool:
    try:
        float(str(value))
    except ValueError:
        return False
    return True


async def _request(
    session: aiohttp.ClientSession, method: str, url: str | URL, what: str, **kwargs: Any
) -> tuple[int, dict[str, Any]]:
    try:
        async with session.request(method, url, **kwargs) as response:
            raw = await response.content.read(MAX_ANSWER)
            headers = response.headers
            status = response.status
    except (aiohttp.ClientError, TimeoutError) as failure:
        raise TeamsCallError(what, 0, type(failure).__name__) from None
    try:
        answer = json.loads(raw) if raw else {}
    except ValueError:
        answer = {}
    answer = answer if isinstance(answer, dict) else {}
    if status == 429:
        answer["_retry_after"] = headers.get("Retry-After")
    return status, answer


class Connector:
    """The calls the Teams channel makes, each raising TeamsCallError on failure. `sleep` waits out a Retry-After
    (tests pass one that records the wait)."""

    def __init__(self, token: BotToken, *, sleep: Sleep = anyio.sleep, call_seconds: float = CALL_SECONDS) -> None:
        self.token = token
        self.sleep = sleep
        self.call_seconds = call_seconds
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.call_seconds))
        return self._session

    async def post(self, service_url: str, conversation: str, activity: Mapping[str, Any]) -> str:
        """Post `activity` to `conversation` (`…;messageid=<id>` for a reply in that thread); returns its id."""
        url = _conversation_url(service_url, conversation) / "activities"
        answer = await self._call("POST", url, "post a message", activity)
        posted = answer.get("id")
        if not isinstance(posted, str) or not posted:
            raise TeamsCallError("post a message", 200, "no activity id in the answer")
        return posted

    async def update(self, service_url: str, conversation: str, activity_id: str, activity: Mapping[str, Any]) -> None:
        """Replace the activity `activity_id` (a card's new state) in one step."""
        url = _conversation_url(service_url, conversation) / "activities" / activity_id
        await self._call("PUT", url, "update a message", dict(activity) | {"id": activity_id})

    async def member(self, service_url: str, conversation: str, member_id: str) -> Member | None:
        """Who member `member_id` of `conversation` is; None when Teams does not know them there."""
        url = _conversation_url(service_url, conversation) / "members" / member_id
        try:
            answer = await self._call("GET", url, "read a member", None)
        except TeamsCallError as failure:
            if failure.status == 404:
                return None
            raise
        return Member(
            id=str(answer.get("id") or member_id),
            name=_text(answer.get("name")),
            email=_text(answer.get("email")),
            upn=_text(answer.get("userPrincipalName")),
            aad=_text(answer.get("aadObjectId")),
        )

    async def _call(self, method: str, url: URL, what: str, payload: Mapping[str, Any] | None) -> dict[str, Any]:
        body = body_bytes(payload) if payload is not None else None
        if body is not None and len(body) > MAX_BODY:
            raise BodyTooLarge(f"{what}: {len(body)} bytes is over Teams' {MAX_BODY}; nothing was sent")
        headers = {"Content-Type": "application/json; charset=utf-8"} if body is not None else {}
        limited = refused = False
        while True:
            token = await self.token.get(self.session)
            status, answer = await _request(
                self.session, method, url, what, data=body, headers=headers | {"Authorization": f"Bearer {token}"}
            )
            if status in (200, 201, 202):
                return answer
            if status == 429 and not limited:
                limited = True
                wait = retry_after(answer.get("_retry_after"))
                if wait > MAX_RETRY_AFTER:
                    raise TeamsCallError(what, 429, f"rate limited for {wait:g}s")
                log.info("teams: %s rate-limited; retrying after %gs", what, wait)
                await self.sleep(wait)
                continue
            if status == 401 and not refused:
                refused = True
                self.token.forget(token)
                continue
            error = answer.get("error")
            reason = error.get("code") if isinstance(error, dict) else error
            raise TeamsCallError(what, status, str(reason or "")[:200])

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _conversation_url(service_url: str, conversation: str) -> URL:
    return URL(service_url.rstrip("/")) / "v3" / "conversations" / conversation


def _text(value: object) -> str:
    return value[:200] if isinstance(value, str) else ""
