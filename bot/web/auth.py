"""Who may use the inbox: whoever holds the token printed at start-up, as a cookie or a bearer header.

Like a notebook server: `?token=` on the first visit becomes an HttpOnly, SameSite=Strict cookie, and the address bar
loses the token. Forms also carry a CSRF token derived from the session token, so even a browser that ignores
SameSite cannot be made to answer by another site.
"""

from __future__ import annotations

import hashlib
import hmac

from aiohttp import web

from bot.web.forms import FormData, first

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
COOKIE_MAX_AGE = 30 * 24 * 3600
"""A month: the token changes when handraise restarts without a fixed one, which ends the session sooner."""


def secured(response: web.StreamResponse) -> web.StreamResponse:
    """Add the headers every inbox response carries (call before a stream is prepared)."""
    response.headers.update(SECURITY_HEADERS)
    return response


class InboxAuth:
    """Checks requests against one session token."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("the web inbox token must not be empty")
        self.token = token
        self.csrf = hmac.new(token.encode(), b"handraise web inbox csrf", hashlib.sha256).hexdigest()

    @staticmethod
    def cookie_name(request: web.Request) -> str:
        # Cookies ignore ports: two handraise servers on one host would overwrite each other's under a shared name.
        return f"handraise_inbox_{request.url.port or 80}"

    def allows(self, request: web.Request) -> bool:
        """Whether the request carries the session cookie or `Authorization: Bearer <token>`."""
        cookie = request.cookies.get(self.cookie_name(request))
        if cookie is not None and _same(cookie, self.token):
            return True
        header = request.headers.get("Authorization", "")
        return header.startswith("Bearer ") and _same(header.removeprefix("Bearer "), self.token)

    def login(self, request: web.Request, given: str) -> web.StreamResponse | None:
        """For `?token=`: a redirect to `/` that sets the cookie, or None when the token is wrong."""
        if not _same(given, self.token):
            return None
        response = web.Response(status=303, headers={"Location": "/"})
        response.set_cookie(
            self.cookie_name(request),
            self.token,
            max_age=COOKIE_MAX_AGE,
            path="/",
            httponly=True,
            samesite="Strict",
        )
        return secured(response)

    def csrf_ok(self, form: FormData) -> bool:
        return _same(first(form, "csrf") or "", self.csrf)


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())
