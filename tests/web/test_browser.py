"""The inbox in a real headless Chromium (Debian's package) driven by Playwright: live updates, clicks, keyboard."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from playwright.async_api import Browser, ConsoleMessage, Page, expect

from bot.config import parse_config
from bot.program import running
from bot.store.records import AgentRef
from bot.store.sqlite.store import Store
from bot.web import WebInbox
from core import AskUserQuestionAnswerItem, Context
from tests.web.chromium import inbox_on_a_socket
from tests.web.helpers import choice, item, options, plan, start_ask, web_question

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

SCREENSHOT_ENV = "HANDRAISE_SCREENSHOT"
"""Set to a path (e.g. docs/web-inbox.png) to save the realistic inbox screenshot there."""


@pytest.fixture
async def server(inbox: WebInbox, chromium: Browser) -> AsyncIterator[str]:
    async with inbox_on_a_socket(chromium, inbox) as base_url:
        yield base_url


@pytest.fixture
def console() -> list[str]:
    """Errors the page logged: a Content-Security-Policy violation, a script error, a failed load."""
    return []


@pytest.fixture
async def page(chromium: Browser, console: list[str]) -> AsyncIterator[Page]:
    opened = await chromium.new_page(viewport={"width": 1000, "height": 900})
    opened.set_default_timeout(5000)

    def record(message: ConsoleMessage) -> None:
        if message.type == "error":
            console.append(message.text)

    opened.on("console", record)
    opened.on("pageerror", lambda error: console.append(str(error)))
    yield opened
    await opened.close()


async def open_inbox(page: Page, inbox: WebInbox, server: str) -> None:
    await page.goto(inbox.url(server))
    assert page.url == f"{server}/"  # the token left the address bar
    await expect(page.locator("[data-live]")).to_have_text("Live")  # the event stream is connected


async def test_a_question_appears_live_and_clicking_answers_the_agent(
    page: Page, inbox: WebInbox, server: str, ctx: Context, console: list[str]
) -> None:
    await open_inbox(page, inbox, server)
    await expect(page.locator("[data-empty]")).to_be_visible()
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, choice())
        card = page.locator('article[data-status="pending"]')
        await expect(card).to_contain_text("Which environment?")
        await expect(page).to_have_title("(1) handraise inbox")
        await card.get_by_label("production").check()
        await card.get_by_role("button", name="Send answer").click()
        answer = await asking.result()
        assert answer.answers == [AskUserQuestionAnswerItem(id="env", selected=["production"])]
    await expect(page.locator(".notice")).to_contain_text("Answer sent")
    assert console == []


async def test_a_question_cancelled_while_typing_shows_cancelled_and_cannot_be_sent(
    page: Page, inbox: WebInbox, server: str, ctx: Context, console: list[str]
) -> None:
    await open_inbox(page, inbox, server)
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, plan())
        card = page.locator("article[data-question]")
        changes = card.get_by_label("Request changes")
        await changes.fill("Backfill at night, please")
        asking.controller.abort("the agent moved on")
        await expect(card).to_have_attribute("data-status", "cancelled")
        await expect(card.locator("[data-outcome]")).to_contain_text("Cancelled")
        await expect(card.get_by_role("button", name="Approve")).to_be_disabled()
        await expect(card.get_by_role("button", name="Request changes")).to_be_disabled()
        await expect(changes).to_have_value("Backfill at night, please")
        await expect(page).to_have_title("handraise inbox")
    assert console == []


async def test_keyboard_alone_answers_a_question(page: Page, inbox: WebInbox, server: str, ctx: Context) -> None:
    await open_inbox(page, inbox, server)
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, choice(), item("why", question="Why now?"))
        await page.locator("article[data-question]").get_by_label("staging").focus()
        await page.keyboard.press("ArrowDown")  # radio groups move the choice with the arrows
        await page.keyboard.press("Tab")  # the group is one stop: on to the Other text
        await page.keyboard.press("Tab")  # the free-text answer to "Why now?"
        await page.keyboard.type("the window opens at 22:00")
        await page.keyboard.press("Tab")
        await expect(page.get_by_role("button", name="Send answer")).to_be_focused()
        await page.keyboard.press("Enter")
        answer = await asking.result()
        assert answer.answers == [
            AskUserQuestionAnswerItem(id="env", selected=["production"]),
            AskUserQuestionAnswerItem(id="why", custom="the window opens at 22:00"),
        ]


async def test_an_asked_question_in_the_cli_is_answered_in_the_page(page: Page, tmp_path: Path) -> None:
    """The issue's whole path: `handraise serve`'s program, `handraise ask` in a subprocess, a click in Chromium."""
    config = parse_config(f'[server]\nlisten = "127.0.0.1:0"\n[store]\npath = "{tmp_path / "handraise.db"}"\n')
    async with running(config) as program:
        await page.goto(program.links["web inbox"])
        await expect(page.locator("[data-live]")).to_have_text("Live")
        argv = [sys.executable, "-m", "bot.cli", "ask", "Deploy now?", "-o", "yes", "-o", "no", "--server"]
        async with await anyio.open_process([*argv, program.base_url]) as cli:
            card = page.locator('article[data-status="pending"]')
            await expect(card).to_contain_text("Deploy now?", timeout=15_000)
            await card.get_by_label("yes").check()
            await card.get_by_role("button", name="Send answer").click()
            with anyio.fail_after(15):
                assert cli.stdout is not None
                printed = b"".join([chunk async for chunk in cli.stdout])
                assert await cli.wait() == 0
        # Leave before the server stops: an event stream reconnecting while it shuts down can leave a socket behind.
        await page.goto("about:blank")
    assert json.loads(printed) == {"answers": [{"id": "q1", "selected": ["yes"]}]}


async def test_the_oldest_of_many_waiting_questions_is_reached_and_answered_without_javascript(
    chromium: Browser, inbox: WebInbox, server: str, store: Store
) -> None:
    oldest = web_question(store, item("go", question="Deploy build 1?"))
    for number in range(2, 206):
        web_question(store, item("go", question=f"Deploy build {number}?"))
    context = await chromium.new_context(java_script_enabled=False)
    plain = await context.new_page()
    plain.set_default_timeout(5000)
    await plain.goto(inbox.url(server))
    await expect(plain.locator("[data-count]")).to_have_text("205 questions")
    await expect(plain.locator("article[data-question]")).to_have_count(100)
    await plain.get_by_role("navigation", name="Pages", exact=True).get_by_role("link", name="Oldest").click()
    await expect(plain).to_have_url(f"{server}/?page=3")
    card = plain.locator("article", has_text="Deploy build 1?")
    await card.get_by_label("Your answer").fill("ship it")
    await card.get_by_role("button", name="Send answer").click()
    await expect(plain.locator(".notice")).to_contain_text("Answer sent: “Deploy build 1?”")
    await expect(plain).to_have_url(f"{server}/?page=3&answered={oldest.id}")
    await expect(plain.locator("[data-count]")).to_have_text("204 questions")
    await context.close()
    assert store.get_question(oldest.id).answer.answers[0].custom == "ship it"  # type: ignore[union-attr]


async def test_on_a_later_page_a_new_question_counts_but_waits_on_the_first(
    page: Page, inbox: WebInbox, server: str, store: Store, ctx: Context, console: list[str]
) -> None:
    for number in range(1, 151):
        web_question(store, item("go", question=f"Deploy build {number}?"))
    await open_inbox(page, inbox, server)
    await page.get_by_role("navigation", name="Pages", exact=True).get_by_role("link", name="Older").click()
    await expect(page.locator("[data-live]")).to_have_text("Live")
    await expect(page.locator("[data-count]")).to_have_text("150 questions")
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, choice())
        await expect(page.locator("[data-count]")).to_have_text("151 questions")
        await expect(page).to_have_title("(151) handraise inbox")
        await expect(page.locator("article[data-question]")).to_have_count(50)
        asking.controller.abort("moved on")
        await expect(page.locator("[data-count]")).to_have_text("150 questions")
    await page.get_by_role("navigation", name="Pages", exact=True).get_by_role("link", name="Newest").click()
    await expect(page.locator("article[data-question]")).to_have_count(100)
    assert console == []


async def test_the_page_fits_a_phone_screen(chromium: Browser, inbox: WebInbox, server: str, store: Store) -> None:
    web_question(store, plan(), agent=AgentRef(id="migrate-bot"))
    web_question(store, choice(multi=True))
    phone = await chromium.new_page(viewport={"width": 360, "height": 740})
    await phone.goto(inbox.url(server))
    width = await phone.evaluate("document.documentElement.scrollWidth")
    await phone.close()
    assert width <= 360


async def test_screenshot_of_a_realistic_inbox(
    chromium: Browser, inbox: WebInbox, server: str, store: Store, tmp_path: Path
) -> None:
    for record in realistic_questions():
        web_question(store, *record[1], agent=record[0])
    shot = await chromium.new_page(viewport={"width": 960, "height": 900}, device_scale_factor=1)
    await shot.goto(inbox.url(server))
    await expect(shot.locator("[data-live]")).to_have_text("Live")
    rollout = shot.locator("article", has_text="checkout v2.4")
    await rollout.get_by_label("eu-west-1").check()
    await rollout.get_by_label("us-east-1").check()
    target = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path / "web-inbox.png")
    png = await shot.screenshot(path=str(target), full_page=True)
    await shot.close()
    assert png.startswith(b"\x89PNG")


def realistic_questions() -> Iterator[tuple[AgentRef, list]]:  # type: ignore[type-arg]
    """A multi-select and a plan review, oldest first, as agents would ask them."""
    yield (
        AgentRef(id="agent-19c2", name="release-bot", labels={"service": "checkout"}),
        [
            item(
                "regions",
                header="Rollout",
                question="Which regions get checkout v2.4 first?",
                detail="The canary has been clean for 24 hours: error rate 0.02%, p99 latency unchanged.",
                options=[
                    {"label": "eu-west-1", "description": "Lowest traffic at this hour"},
                    {"label": "us-east-1", "description": "Largest region; fastest signal"},
                    {"label": "ap-south-1"},
                ],
                multi_select=True,
            ),
            item(
                "notify",
                header="Notify",
                question="Who should hear about it?",
                options=options("#releases", "#checkout-oncall"),
            ),
        ],
    )
    yield (
        AgentRef(id="agent-7f3a", name="migrate-bot", labels={"team": "data"}),
        [
            item(
                "plan",
                header="Plan review",
                question="Run the users-table migration on production tonight?",
                detail=(
                    "## Plan\n\n"
                    "1. Add the nullable column `email_verified` to `users`\n"
                    "2. Backfill it in batches of **10 000** rows (about 40 minutes)\n"
                    "3. Switch the signup service to write it, then make it `NOT NULL`\n\n"
                    "| step | lock | rollback |\n|---|---|---|\n"
                    "| 1 | none | drop column |\n| 2 | row | re-run |\n| 3 | brief | revert deploy |\n\n"
                    "Runs at 22:00 UTC, when traffic is lowest."
                ),
                options=[
                    {"label": "Approve", "description": "Run it tonight as planned"},
                    {"label": "Postpone", "description": "Keep the plan; wait until Monday"},
                ],
                intent={"kind": "plan-review", "approve": "Approve"},
            )
        ],
    )
