"""Another web site, in a real Chromium, cannot create, read or cancel questions: neither from its own origin (forms,
`fetch`) nor by DNS rebinding (its name re-pointed at 127.0.0.1, simulated with Chromium's host resolver rules)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from playwright.async_api import Browser, Page, Route

from bot.program import Running
from bot.program import running as start_program
from tests.bot.program_rig import config_for
from tests.web.chromium import chromium_running

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

EVIL = "evil.example"
WITHOUT_PNA = ",".join(
    ["LocalNetworkAccessChecks", "BlockInsecurePrivateNetworkRequests", "PrivateNetworkAccessSendPreflights"]
)
"""Chromium's own guard for loopback (Private/Local Network Access) is off, as in browsers that lack it: what stops
the attacks here must be the server."""
ASK = {"questions": [{"id": "q1", "question": "Planted by a web page?"}]}


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Chromium that resolves the attacker's host name to this machine, its loopback guard off."""
    more = (f"--host-resolver-rules=MAP {EVIL} 127.0.0.1", f"--disable-features={WITHOUT_PNA}")
    async with chromium_running(*more, why="the cross-site tests drive a real Chromium") as launched:
        yield launched


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    opened = await browser.new_page()
    opened.set_default_timeout(10_000)
    yield opened
    await opened.close()


@pytest.fixture
async def program(tmp_path: Path) -> AsyncIterator[Running]:
    """The whole program (API, inbox, store) as `handraise serve` runs it, on 127.0.0.1 and a free port."""
    async with start_program(config_for(tmp_path)) as started:
        yield started


@dataclass
class Attacker:
    """A second server on another loopback port, the origin of the hostile pages."""

    url: str
    pages: dict[str, str] = field(default_factory=dict[str, str])


@pytest.fixture
async def attacker() -> AsyncIterator[Attacker]:
    pages: dict[str, str] = {}

    async def serve_page(request: web.Request) -> web.Response:
        return web.Response(text=pages.get(request.match_info["name"], ""), content_type="text/html")

    app = web.Application()
    app.router.add_get("/{name}", serve_page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = next(address[1] for address in runner.addresses if isinstance(address, tuple))
    yield Attacker(f"http://127.0.0.1:{port}", pages)
    await runner.cleanup()


async def agent_asks(program: Running) -> str:
    """A question asked the legitimate way, by an agent's process; returns its id."""
    async with aiohttp.ClientSession() as session, session.post(f"{program.base_url}/v1/questions", json=ASK) as reply:
        assert reply.status == 202
        return str((await reply.json())["id"])


def attempts(target: str, question_id: str) -> str:
    """A script that tries everything a page may, and reports for each whether the browser let it through."""
    body = json.dumps(json.dumps(ASK))
    return f"""async () => {{
        const target = {json.dumps(target)};
        const result = {{}};
        const attempt = async (name, url, options) => {{
            try {{
                const reply = await fetch(url, options);
                result[name] = reply.type === "opaque" ? "opaque" : reply.status + " " + await reply.text();
            }} catch (error) {{
                result[name] = "blocked";
            }}
        }};
        await attempt("post text/plain", target + "/v1/questions",
            {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}}, body: {body}}});
        await attempt("post json", target + "/v1/questions",
            {{method: "POST", headers: {{"Content-Type": "application/json"}}, body: {body}}});
        await attempt("list", target + "/v1/questions", {{}});
        await attempt("read", target + "/v1/questions/{question_id}", {{}});
        await attempt("cancel", target + "/v1/questions/{question_id}", {{method: "DELETE"}});
        return result;
    }}"""


async def test_a_page_on_another_origin_cannot_create_read_or_cancel_questions(
    page: Page, program: Running, attacker: Attacker
) -> None:
    question_id = await agent_asks(program)
    attacker.pages["page"] = "<!doctype html><title>cute cats</title>"
    await page.goto(f"{attacker.url}/page")
    result = await page.evaluate(attempts(program.base_url, question_id))
    store = program.installation.store
    assert await store.count_questions() == 1
    record = await store.get_question(question_id)
    assert record is not None and record.status == "pending"
    # A no-cors request is sent but its reply is opaque; the others never get past CORS.
    assert result == {
        "post text/plain": "opaque",
        "post json": "blocked",
        "list": "blocked",
        "read": "blocked",
        "cancel": "blocked",
    }


async def test_a_form_on_another_origin_cannot_create_a_question(
    page: Page, program: Running, attacker: Attacker
) -> None:
    # enctype=text/plain sends `name=value`: with this name and value the body is JSON the API once accepted.
    name = json.dumps('{"questions": [{"id": "f", "question": "Planted by a form?", "pad": "')[1:-1]
    attacker.pages["form"] = f"""<!doctype html>
        <form method="post" enctype="text/plain" action="{program.base_url}/v1/questions">
          <input name="{name.replace('"', "&quot;")}" value='"}}]}}'>
        </form>
        <script>document.forms[0].submit()</script>"""
    async with page.expect_response(f"{program.base_url}/v1/questions") as answered:
        await page.goto(f"{attacker.url}/form")
    response = await answered.value
    assert await program.installation.store.count_questions() == 0
    assert response.status == 403
    assert (await response.json())["error"]["code"] == "CROSS_SITE"


async def test_a_rebinding_name_is_refused(page: Page, program: Running) -> None:
    port = program.base_url.rsplit(":", 1)[1]
    for path in ("/", "/v1/questions", "/healthz"):
        response = await page.goto(f"http://{EVIL}:{port}{path}")
        assert response is not None and response.status == 421
        assert (await response.json())["error"]["code"] == "HOST_NOT_ALLOWED"


async def test_a_rebound_page_cannot_ask_or_read_as_a_same_origin_caller(page: Page, program: Running) -> None:
    """The attack itself: the page was served under the attacker's name and port, then the name points at us."""
    question_id = await agent_asks(program)
    port = program.base_url.rsplit(":", 1)[1]
    rebound = f"http://{EVIL}:{port}"

    async def first_answer(route: Route) -> None:
        await route.fulfill(body="<!doctype html><title>cute cats</title>", content_type="text/html")

    await page.route(f"{rebound}/cats", first_answer)
    await page.goto(f"{rebound}/cats")
    result = await page.evaluate(attempts(rebound, question_id))
    assert await program.installation.store.count_questions() == 1
    record = await program.installation.store.get_question(question_id)
    assert record is not None and record.status == "pending"
    # Same-origin now, so nothing stops the requests in the browser: they all reach the server, which refuses them.
    assert {outcome.split(" ", 1)[0] for outcome in result.values()} == {"421"}, result
