"""Who may use the inbox: whoever holds the token printed at start-up, as a cookie or a bearer header.

Like a notebook server: `?token=` on the first visit becomes an HttpOnly, SameSite=Strict cookie, and the address bar
loses the token. Forms also carry a CSRF token derived from the session token, so even a browser that ignores
SameSite cannot be made to answer by another site.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from aiohttp import web

from bot.web.forms import FormData, first

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; form-action 'self'; "
    "manifest-src 'self'; worker-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
COOKIE_NAMES_KEPT = 16
"""Cookie names remembered by the Host they were reached by: one or two in practice, and Host is the client's to say."""
_PLAIN = re.compile(r"[A-Za-z0-9_\-.~+/=]*")
"""A cookie value read as it stands: the characters of a token (`secrets.token_urlsafe`, base64)."""
COOKIE_MAX_AGE = 30 * 24 * 3600
"""A month: the token changes when handraise restarts without a fixed one, which ends the session sooner."""


def secured(response: web.StreamResponse) -> web.StreamResponse:
    """Add the headers every inbox response carries (call before a stream is prepared)."""
    response.headers.update(SECURITY_HEADERS)
    return response


def redirect(location: str) -> web.Response:
    """A 303 to `location` that carries the inbox's headers, made with them (rather than `secured` afterwards)."""
    return web.Response(status=303, headers={**SECURITY_HEADERS, "Location": location})


class InboxAuth:
    """Checks requests against one session token."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("the web inbox token must not be empty")
        self.token = token
        self.csrf = hmac.new(token.encode(), b"handraise web inbox csrf", hashlib.sha256).hexdigest()
        self._cookie_names: dict[tuple[str, str], str] = {}

    @staticmethod
    def cookie_name(request: web.Request) -> str:
        # Cookies ignore ports: two handraise servers on one host would overwrite each other's under a shared name.
        return f"handraise_inbox_{request.url.port or 80}"

    def allows(self, request: web.Request) -> bool:
        """Whether the request carries the session cookie or `Authorization: Bearer <token>`."""
        if "Cookie" in request.headers:  # else no cookie name to work out: an API client or a script with the header
            cookie = cookie_value(request, self._cookie_name(request))
            if cookie is not None and _same(cookie, self.token):
                return True
        header = request.headers.get("Authorization", "")
        return header.startswith("Bearer ") and _same(header.removeprefix("Bearer "), self.token)

    def login(self, request: web.Request, given: str) -> web.StreamResponse | None:
        """For `?token=`: a redirect to `/` that sets the cookie, or None when the token is wrong."""
        if not _same(given, self.token):
            return None
        response = redirect("/")
        response.set_cookie(
            self.cookie_name(request),
            self.token,
            max_age=COOKIE_MAX_AGE,
            path="/",
            httponly=True,
            samesite="Strict",
        )
        return response

    def csrf_ok(self, form: FormData) -> bool:
        return _same(first(form, "csrf") or "", self.csrf)

    def _cookie_name(self, request: web.Request) -> str:
        """`cookie_name`, remembered by the Host header it depends on (building the request's URL costs ~3 µs)."""
        reached = (request.scheme, request.host)
        name = self._cookie_names.get(reached)
        if name is None:
            name = self.cookie_name(request)
            if len(self._cookie_names) < COOKIE_NAMES_KEPT:
                self._cookie_names[reached] = name
        return name


def cookie_value(request: web.Request, name: str) -> str | None:
    """The value of cookie `name`, as `request.cookies` would give it, without parsing every cookie (aiohttp's parser
    costs ~8 µs a request). A header with quotes, with the name more than once, or a value of anything but the
    characters a token is made of goes to that parser."""
    header = request.headers.get("Cookie")
    if header is None or name not in header:
        return None
    wanted = name + "="
    if '"' not in header and header.count(name) == 1:
        for part in header.split(";"):
            part = part.strip()
            if part.startswith(wanted) and _PLAIN.fullmatch(value := part[len(wanted) :].strip()):
                return value
    return request.cookies.get(name)


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())
