"""The inbox as an installable app, without a browser: the manifest, the service worker and the icons are served at
their addresses without sign-in, every page links them, and the notification controls appear only for a signed-in
person on a server that sends pushes."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import AsyncIterator
from importlib import resources

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.questions.ledger import Ledger
from bot.web import WebInbox
from bot.web.auth import CONTENT_SECURITY_POLICY
from bot.web.installable import app_manifest
from bot.web.paging import Page
from bot.web.render import render_history, render_inbox, render_message
from bot.web.session import SESSION_COOKIE
from tests.web.helpers import Client
from tests.web.push_stand_in import PERSON, sessions, signed_in_inbox
from tests.web.test_render import Elements

pytestmark = pytest.mark.anyio

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def read_png(data: bytes) -> tuple[int, int, int]:
    """Width, height and colour type of a PNG, checking what a decoder checks: the signature, every chunk's CRC,
    IHDR first and IEND last, and image data that inflates to exactly the rows the header promises.

    Raises ValueError when any of it is wrong."""
    if not data.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG signature")
    at, kinds, image = len(PNG_SIGNATURE), list[bytes](), b""
    header = b""
    while at < len(data):
        if at + 12 > len(data):
            raise ValueError("truncated chunk")
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        if len(body) != length or zlib.crc32(kind + body) != crc:
            raise ValueError(f"bad {kind!r} chunk")
        kinds.append(kind)
        header = body if kind == b"IHDR" else header
        image += body if kind == b"IDAT" else b""
        at += 12 + length
    if not kinds or kinds[0] != b"IHDR" or kinds[-1] != b"IEND":
        raise ValueError("IHDR must come first and IEND last")
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace != 0:
        raise ValueError("only 8-bit, non-interlaced, non-palette images are expected here")
    if len(zlib.decompress(image)) != height * (1 + width * channels):
        raise ValueError("the image data does not fill the image")
    return width, height, colour


@pytest.mark.parametrize("size", [192, 512])
def test_the_icons_are_valid_pngs_of_their_size(size: int) -> None:
    data = (resources.files("bot.web") / "static" / f"icon-{size}.png").read_bytes()
    assert read_png(data)[:2] == (size, size)


@pytest.mark.parametrize(
    "broken",
    [b"", b"GIF89a", PNG_SIGNATURE, PNG_SIGNATURE + b"\x00\x00\x00\x0dIHDR" + b"\x00" * 17],
    ids=["empty", "gif", "signature only", "bad crc"],
)
def test_the_png_check_refuses_broken_files(broken: bytes) -> None:
    with pytest.raises(ValueError):
        read_png(broken)


def test_the_manifest_says_what_installing_needs() -> None:
    manifest = app_manifest()
    assert (manifest["name"], manifest["start_url"], manifest["scope"], manifest["display"]) == (
        "handraise",
        "/",
        "/",
        "standalone",
    )
    assert manifest["short_name"] and manifest["theme_color"] and manifest["background_color"]
    icons = {(icon["src"], icon["sizes"], icon["type"], icon["purpose"]) for icon in manifest["icons"]}
    for size in (192, 512):
        for purpose in ("any", "maskable"):
            assert (f"/static/icon-{size}.png", f"{size}x{size}", "image/png", purpose) in icons


async def test_manifest_worker_and_icons_are_served_without_sign_in(anonymous: Client) -> None:
    manifest = await anonymous.get("/manifest.webmanifest")
    assert manifest.status == 200 and manifest.content_type == "application/manifest+json"
    assert json.loads(await manifest.text()) == app_manifest()
    assert "max-age" in manifest.headers["Cache-Control"]
    worker = await anonymous.get("/sw.js")
    assert worker.status == 200 and worker.content_type == "text/javascript"
    assert worker.headers["Cache-Control"] == "no-cache"  # an update check always sees a new worker
    assert worker.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "showNotification" in await worker.text()
    for size in (192, 512):
        icon = await anonymous.get(f"/static/icon-{size}.png")
        assert icon.status == 200 and icon.content_type == "image/png" and icon.charset is None
        assert read_png(await icon.read())[:2] == (size, size)
        assert "max-age=86400" in icon.headers["Cache-Control"]
    script = await anonymous.get("/static/push.js")
    assert script.status == 200 and script.content_type == "text/javascript"
    assert (await anonymous.get("/static/icon-64.png")).status == 404
    assert (await anonymous.get("/sw.js/../app.py")).status == 404


def test_the_policy_lets_the_page_use_its_manifest_worker_and_icons() -> None:
    for directive in ("manifest-src 'self'", "worker-src 'self'", "img-src 'self'", "connect-src 'self'"):
        assert directive in CONTENT_SECURITY_POLICY


@pytest.mark.parametrize(
    "page",
    [
        render_inbox([], csrf="c", page=Page(waiting=0)),
        render_history([]),
        render_message("Sign in", "Sign in again.", sign_in=True),
    ],
    ids=["inbox", "history", "message"],
)
def test_every_page_links_the_manifest_theme_colour_and_icons(page: str) -> None:
    links = {attrs["rel"]: attrs["href"] for attrs in Elements(page).named("link")}
    assert links["manifest"] == "/manifest.webmanifest"
    assert links["apple-touch-icon"] == "/static/icon-192.png"
    assert links["icon"] == "/static/icon-192.png"
    colours = [attrs["content"] for attrs in Elements(page).named("meta") if attrs.get("name") == "theme-color"]
    assert colours == ["#ffffff", "#1b1e23"]


def test_the_notification_controls_come_only_with_push_and_carry_the_csrf_token() -> None:
    plain = render_inbox([], csrf="c", page=Page(waiting=0))
    assert "data-push" not in plain and "/static/push.js" not in plain
    offered = render_inbox([], csrf='"><script>', page=Page(waiting=0), push=True)
    [section] = Elements(offered).named("section")
    assert section["data-csrf"] == '"><script>' and "hidden" in section
    assert [attrs["src"] for attrs in Elements(offered).named("script")] == ["/static/inbox.js", "/static/push.js"]
    assert "<script>" not in offered.replace('<script src="/static/', "")


@pytest.fixture
async def signed_in(ledger: Ledger) -> AsyncIterator[tuple[WebInbox, Client]]:
    inbox = signed_in_inbox(ledger)
    app = web.Application()
    inbox.add_routes(app)
    async with TestClient(TestServer(app)) as client:
        client.session.cookie_jar.update_cookies({SESSION_COOKIE: sessions().issue(PERSON)})
        yield inbox, client
        await inbox.close()


async def test_a_signed_in_person_is_offered_notifications_once_push_is_on(
    signed_in: tuple[WebInbox, Client],
) -> None:
    inbox, client = signed_in
    page = await (await client.get("/")).text()
    assert "Signed in as alice@example.org" in page and "data-push" not in page
    inbox.offer_push()
    page = await (await client.get("/")).text()
    [section] = Elements(page).named("section")
    assert section["data-csrf"] == sessions().csrf(PERSON)


async def test_the_token_link_inbox_offers_no_notifications(client: Client, inbox: WebInbox) -> None:
    inbox.offer_push()  # there is nobody to push to: the token link knows no people
    page = await (await client.get("/")).text()
    assert "data-push" not in page and "/static/push.js" not in page
