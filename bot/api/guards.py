"""Who may talk to the HTTP server at all: its own host names only, and no other web site through the person's browser.

With the default loopback API and no token, two attacks come through an ordinary web page the person visits:
- DNS rebinding: the page's own name (`evil.example`) is re-pointed at 127.0.0.1, so its script reads and cancels
  questions as a same-origin caller. The browser still sends `Host: evil.example`, so every route answers only to
  our own names (421 HOST_NOT_ALLOWED).
- Cross-site requests: a form or `fetch` from another origin may POST without a CORS preflight when the body is
  `text/plain`. The API's state-changing calls demand `Content-Type: application/json` (which a page can only send
  after a preflight we never grant) and every `/v1` call refuses a foreign `Origin` or `Sec-Fetch-Site`.
Agents (curl, `handraise ask`, SDKs) send none of those browser headers and are unaffected.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

from bot.api.capacity import WaitingCap, is_long_poll
from bot.api.routes import BearerAuth, error_response, store_unavailable
from bot.settings.tables import ServerSettings
from bot.store.errors import StoreUnavailable

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SIGNED_PATHS = frozenset({"/slack/events"})
"""Routes whose callers prove themselves by signature (Slack's HMAC over body and time) rather than by where they
connect: they answer to any Host, so Slack reaches them through whatever proxy or tunnel name it was given, and a
rebinding page gains nothing there without the signing secret."""
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
REMEMBERED_HOSTS = 64


def is_api(request: web.Request) -> bool:
    return request.path == "/v1" or request.path.startswith("/v1/")


class OwnHosts:
    """The host names this server answers to: the listen address, `localhost`, loopback literals, `public_url`'s host.

    Listening on every interface (0.0.0.0 or ::) also admits any IP literal and the machine's own name: people reach
    it by the machine's address, and an address, unlike a name, cannot be re-pointed by a rebinding page.
    """

    def __init__(self, settings: ServerSettings) -> None:
        listen = settings.host.lower()
        self.any_address = listen in WILDCARDS
        self.names = {"localhost", listen}
        if self.any_address:
            self.names.add(socket.gethostname().lower())
        self._seen: dict[str, bool] = {}
        self.public_origin: str | None = None
        if settings.public_url is not None:
            public = urlsplit(settings.public_url)
            self.names.add((public.hostname or "").lower())
            self.public_origin = f"{public.scheme}://{public.netloc}".lower()

    def allows(self, host_header: str) -> bool:
        """Whether `host_header` names this server. The first `REMEMBERED_HOSTS` headers seen are remembered with the
        answer: a server is reached by a handful of spellings of its name, and every request asks."""
        known = self._seen.get(host_header)
        if known is None:
            known = self._allows(host_header)
            if len(self._seen) < REMEMBERED_HOSTS:  # a client inventing names gets them checked, not remembered
                self._seen[host_header] = known
        return known

    def _allows(self, host_header: str) -> bool:
        name = host_name(host_header)
        if name in self.names:
            return True
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return False
        return address.is_loopback or self.any_address

    def allows_origin(self, origin: str, host_header: str) -> bool:
        """Whether a browser's `Origin` is this very server (as reached through `host_header`) or its public URL."""
        origin = origin.lower()
        host = host_header.strip().lower()
        return origin in (f"http://{host}", f"https://{host}") or origin == self.public_origin


def host_name(host_header: str) -> str:
    """`Host` without its port or a final dot, lower-cased: "[::1]:8765" → "::1", "LocalHost.:80" → "localhost"."""
    host = host_header.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[1:end] if end > 0 else host
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        host = name
    return host.rstrip(".")


def request_guards(hosts: OwnHosts, auth: BearerAuth, cap: WaitingCap) -> Middleware:
    """Every request's guards as one middleware: one coroutine frame per request instead of one per guard.

    In the order they apply, outermost first: a store that cannot write answers 503 on every path; Host on every
    route (421); /v1's methods a path does not take (405, in JSON, before anything else is checked); the same-origin
    rules on /v1 (403, 415); /v1's unknown paths answer in JSON (404);
    the API token on /v1 and /mcp (401); and the cap on waiting long-polls (503).
    """

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = host_refusal(hosts, request)
        if refused is not None:
            return refused
        api = is_api(request)
        try:
            if api and isinstance(request.match_info.http_exception, web.HTTPMethodNotAllowed):
                # A method the path does not take is refused as such before anything about its body (405, not 415).
                raise request.match_info.http_exception
            refused = (cross_site_refusal(hosts, request) if api else None) or auth.refusal(request)
            if refused is not None:
                return refused
            if is_long_poll(request):
                return await cap.admit(request, handler)
            return await handler(request)
        except web.HTTPMethodNotAllowed as refused_method:
            if not api:
                raise
            return method_not_allowed(request, refused_method)
        except web.HTTPNotFound:
            if not api:
                raise
            return error_response(404, "NOT_FOUND", f"there is no API endpoint {request.path[:200]}; see /openapi.json")
        except StoreUnavailable as down:
            return store_unavailable(down)

    return middleware


def host_refusal(hosts: OwnHosts, request: web.Request) -> web.Response | None:
    """421 HOST_NOT_ALLOWED for a request whose `Host` is not one of ours (see the module docstring), else None."""
    given = request.headers.get("Host")
    # A request without Host (HTTP/1.0 tools) cannot come from a browser, which always sends one.
    if given is None or request.path in SIGNED_PATHS or hosts.allows(given):
        return None
    shown = host_name(given)[:100]
    return error_response(
        421,
        "HOST_NOT_ALLOWED",
        f'this server does not answer to the host name "{shown}"; reach it as localhost or by its listen '
        "address, or set [server] public_url to the URL you reach it by",
    )


def cross_site_refusal(hosts: OwnHosts, request: web.Request) -> web.Response | None:
    """On /v1: 403 CROSS_SITE for other sites and, on calls that change state, 415 for bodies not declared JSON."""
    fetch_site = request.headers.get("Sec-Fetch-Site", "").lower()
    origin = request.headers.get("Origin")
    foreign_origin = origin is not None and not hosts.allows_origin(origin, request.headers.get("Host", ""))
    if fetch_site in ("cross-site", "same-site") or foreign_origin:
        return error_response(
            403,
            "CROSS_SITE",
            "the API does not answer requests made by another web site; call it from the agent's own process",
        )
    # A bodiless DELETE stays plain (curl -X DELETE): no page can send one without a preflight we never grant.
    declares_body = request.method == "POST" or request.body_exists
    if request.method in STATE_CHANGING and declares_body and request.content_type != "application/json":
        return error_response(
            415,
            "UNSUPPORTED_MEDIA_TYPE",
            f"{request.method} {request.path} needs the header 'Content-Type: application/json'",
        )
    return None


def method_not_allowed(request: web.Request, refused: web.HTTPMethodNotAllowed) -> web.Response:
    """/v1's 405 in the API's JSON error shape rather than aiohttp's plain text."""
    allowed = ", ".join(sorted(refused.allowed_methods))
    response = error_response(
        405, "METHOD_NOT_ALLOWED", f"{request.method} is not allowed on {request.path[:200]}; use {allowed}"
    )
    response.headers["Allow"] = allowed
    return response
