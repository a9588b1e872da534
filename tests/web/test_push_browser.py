"""The installable inbox and its notifications in a real Chromium: the manifest and icons as Chromium reads them, the
service worker taking charge of the page, the page's "Turn on notifications" (with the browser's push subscription
stubbed: Chromium's push needs a real push service), and the worker's push and click handlers, against a stand-in of
the server's push endpoints."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from playwright.async_api import Browser, BrowserContext, Page, Worker, expect

from bot.questions.ledger import Ledger
from bot.web import WebInbox
from bot.web.session import SESSION_COOKIE
from tests.web.chromium import inbox_on_a_socket
from tests.web.push_stand_in import ANSWER_TOKEN, PERSON, PushStandIn, sessions, signed_in_inbox

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

ENDPOINT = "http://127.0.0.1:9/push-service/device-1"
FAKE_SUBSCRIPTION = {"endpoint": ENDPOINT, "expirationTime": None, "keys": {"p256dh": "BPub", "auth": "secret"}}


def stub_push_manager(subscription: dict[str, Any]) -> str:
    """A script replacing Chromium's push subscription in the page (Chromium's needs a real push service) with one
    whose `toJSON()` is `subscription`; it records what `subscribe` was given and whether it was unsubscribed."""
    return (
        "(() => {\n  const made = "
        + json.dumps(subscription)
        + """;
  let held = null;
  const subscription = {
    endpoint: made.endpoint,
    options: { applicationServerKey: null },
    toJSON: () => made,
    unsubscribe: async () => { held = null; window.handraiseUnsubscribed = true; return true; },
  };
  PushManager.prototype.subscribe = async function (options) {
    const key = Array.from(options.applicationServerKey);
    window.handraiseSubscribedWith = { userVisibleOnly: options.userVisibleOnly, key };
    held = subscription;
    return subscription;
  };
  PushManager.prototype.getSubscription = async function () { return held; };
})();
"""
    )


STUB_PUSH_MANAGER = stub_push_manager(FAKE_SUBSCRIPTION)
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4 Mobile/15E148 Safari/604.1"
)


@pytest.fixture
async def stand_in() -> PushStandIn:
    return PushStandIn()


@pytest.fixture
def push_inbox(ledger: Ledger) -> WebInbox:
    inbox = signed_in_inbox(ledger)
    inbox.offer_push()
    return inbox


@pytest.fixture
async def base_url(push_inbox: WebInbox, stand_in: PushStandIn, chromium: Browser) -> AsyncIterator[str]:
    async with inbox_on_a_socket(chromium, push_inbox, stand_in.add_routes) as started:
        yield started


async def signed_in(
    chromium: Browser, base_url: str, *, allow: bool = True, user_agent: str | None = None
) -> BrowserContext:
    """A browser context holding alice's session cookie, with notifications allowed (or not) for the inbox."""
    context = await chromium.new_context(user_agent=user_agent) if user_agent else await chromium.new_context()
    context.set_default_timeout(5000)
    await context.add_cookies([{"name": SESSION_COOKIE, "value": sessions().issue(PERSON), "url": base_url}])
    if allow:
        await context.grant_permissions(["notifications"], origin=base_url)
    return context


async def open_inbox(context: BrowserContext, base_url: str, errors: list[str] | None = None) -> Page:
    page = await context.new_page()
    if errors is not None:
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(base_url + "/")
    return page


async def controlling_worker(context: BrowserContext, page: Page) -> Worker:
    """The inbox's service worker, once it controls `page`."""
    await page.wait_for_function("() => navigator.serviceWorker.controller !== null")
    return context.service_workers[0]


@pytest.fixture
async def worker(chromium: Browser, base_url: str) -> Worker:
    """The inbox's service worker, once it controls an inbox page of alice's, notifications allowed."""
    context = await signed_in(chromium, base_url)
    return await controlling_worker(context, await open_inbox(context, base_url))


def notifications(worker: Worker) -> Any:
    return worker.evaluate(
        """self.registration.getNotifications().then((shown) => shown.map((one) => ({
          title: one.title, body: one.body, tag: one.tag, data: one.data, requireInteraction: one.requireInteraction,
          actions: one.actions.map((action) => [action.action, action.title]),
        })))"""
    )


QUESTION = {
    "id": "q-1",
    "title": "deploy-bot asks",
    "body": "Deploy to production?",
    "actions": [{"action": "0", "title": "Yes"}, {"action": "1", "title": "No"}, {"action": "2", "title": "Later"}],
    "answer_url": "/push/answers/q-1",
    "answer_token": ANSWER_TOKEN,
    "url": "/#card-q-1",
}


# --- installable ----------------------------------------------------------------------------------------------------


async def test_chromium_reads_the_manifest_and_finds_the_inbox_installable(
    chromium: Browser, base_url: str, tmp_path: Any
) -> None:
    context = await signed_in(chromium, base_url)
    page = await open_inbox(context, base_url)
    cdp = await context.new_cdp_session(page)
    manifest = await cdp.send("Page.getAppManifest")
    assert manifest["url"] == base_url + "/manifest.webmanifest"
    assert manifest["errors"] == []
    assert json.loads(manifest["data"])["display"] == "standalone"
    await controlling_worker(context, page)
    # A Playwright context is an incognito profile, where nothing installs; every other check passes.
    found = await cdp.send("Page.getInstallabilityErrors")
    assert [error["errorId"] for error in found["installabilityErrors"]] in ([], ["in-incognito"])
    sizes = await page.evaluate(
        """Promise.all(["/static/icon-192.png", "/static/icon-512.png"].map((src) => new Promise((done, fail) => {
          const image = new Image();
          image.onload = () => done([image.naturalWidth, image.naturalHeight]);
          image.onerror = () => fail(new Error(src));
          image.src = src;
        })))"""
    )
    assert sizes == [[192, 192], [512, 512]]


async def test_the_service_worker_registers_at_the_root_and_controls_the_page(chromium: Browser, base_url: str) -> None:
    context = await signed_in(chromium, base_url)
    errors: list[str] = []
    page = await open_inbox(context, base_url, errors)
    worker = await controlling_worker(context, page)
    assert worker.url == base_url + "/sw.js"
    assert await page.evaluate("navigator.serviceWorker.ready.then((registration) => registration.scope)") == (
        base_url + "/"
    )
    assert errors == []


# --- the page's button ----------------------------------------------------------------------------------------------


async def test_turning_notifications_on_posts_the_subscription_and_off_deletes_it(
    chromium: Browser, base_url: str, stand_in: PushStandIn
) -> None:
    context = await signed_in(chromium, base_url)
    await context.add_init_script(STUB_PUSH_MANAGER)
    errors: list[str] = []
    page = await open_inbox(context, base_url, errors)
    await page.get_by_role("button", name="Turn on notifications").click()
    await expect(page.locator("[data-push-state]")).to_have_text("Notifications are on on this device.")
    [posted] = stand_in.made("POST", "/push/subscriptions")
    assert posted.body == FAKE_SUBSCRIPTION
    assert posted.headers["Content-Type"] == "application/json"
    assert posted.headers["X-CSRF-Token"] == sessions().csrf(PERSON)
    assert await page.evaluate("window.handraiseSubscribedWith.userVisibleOnly") is True
    key = await page.evaluate("window.handraiseSubscribedWith.key")
    assert len(key) == 65 and key[0] == 4  # the server's key, decoded from base64url to the P-256 point
    await expect(page.get_by_role("button", name="Turn on notifications")).to_be_hidden()

    await page.get_by_role("button", name="Turn off notifications").click()
    await expect(page.locator("[data-push-state]")).to_have_text("Notifications are off on this device.")
    [deleted] = stand_in.made("DELETE", "/push/subscriptions")
    assert deleted.body == {"endpoint": ENDPOINT}
    assert deleted.headers["X-CSRF-Token"] == sessions().csrf(PERSON)
    assert await page.evaluate("window.handraiseUnsubscribed") is True
    await expect(page.get_by_role("button", name="Turn on notifications")).to_be_visible()
    assert errors == []


async def test_a_refusing_server_is_told_in_words(chromium: Browser, base_url: str, stand_in: PushStandIn) -> None:
    stand_in.subscription_status = 403
    context = await signed_in(chromium, base_url)
    await context.add_init_script(STUB_PUSH_MANAGER)
    page = await open_inbox(context, base_url)
    await page.get_by_role("button", name="Turn on notifications").click()
    await expect(page.locator("[data-push-state]")).to_have_text(
        "The server refused this page's request: reload the inbox and try again."
    )
    await expect(page.get_by_role("button", name="Turn on notifications")).to_be_enabled()
    stand_in.subscription_status = 409  # a refusal the server explains: its words are shown
    await page.get_by_role("button", name="Turn on notifications").click()
    await expect(page.locator("[data-push-state]")).to_have_text(
        "The server refused the subscription (HTTP 409): 5 devices already get notifications."
    )


async def test_a_browser_that_refuses_permission_is_told_how_to_allow_it(chromium: Browser, base_url: str) -> None:
    context = await signed_in(chromium, base_url, allow=False)
    await context.add_init_script(STUB_PUSH_MANAGER)
    await context.add_init_script("Notification.requestPermission = async () => 'denied';")
    page = await open_inbox(context, base_url)
    await page.get_by_role("button", name="Turn on notifications").click()
    await expect(page.locator("[data-push-state]")).to_contain_text("Notifications are blocked for this site")


async def test_ios_safari_in_a_tab_is_told_to_add_the_inbox_to_the_home_screen(
    chromium: Browser, base_url: str
) -> None:
    context = await signed_in(chromium, base_url, user_agent=IPHONE)
    page = await open_inbox(context, base_url)
    state = page.locator("[data-push-state]")
    await expect(state).to_contain_text("Add handraise to your Home Screen first (iOS 16.4+)")
    await expect(page.get_by_role("button", name="Turn on notifications")).to_be_hidden()


async def test_without_push_the_page_offers_nothing_and_logs_no_error(
    chromium: Browser, base_url: str, push_inbox: WebInbox
) -> None:
    push_inbox.offer_push(False)
    context = await signed_in(chromium, base_url)
    errors: list[str] = []
    page = await open_inbox(context, base_url, errors)
    await expect(page.locator("header.top")).to_contain_text("Signed in as alice@example.org")
    assert await page.locator("[data-push]").count() == 0
    assert await page.evaluate("navigator.serviceWorker.getRegistrations().then((found) => found.length)") == 0
    assert errors == []


# --- the worker's handlers ------------------------------------------------------------------------------------------


async def test_a_push_shows_the_question_with_its_first_two_actions(worker: Worker) -> None:
    await worker.evaluate("(question) => self.handraiseOnPush(question)", QUESTION)
    [shown] = await notifications(worker)
    assert (shown["title"], shown["body"], shown["tag"]) == ("deploy-bot asks", "Deploy to production?", "q-1")
    assert shown["actions"] == [["0", "Yes"], ["1", "No"]]
    assert shown["requireInteraction"] is True
    assert shown["data"]["answer_token"] == ANSWER_TOKEN


@pytest.mark.parametrize("garbage", ["not json", None, [1, 2], {"title": "no id"}, {"id": 7}, 12])
async def test_a_push_of_garbage_still_shows_a_generic_notification(worker: Worker, garbage: object) -> None:
    await worker.evaluate("(payload) => self.handraiseOnPush(payload)", garbage)
    [shown] = await notifications(worker)
    assert (shown["title"], shown["actions"], shown["data"]) == ("A question is waiting", [], {"url": "/"})


SHOWING = """(count) => new Promise((done) => {
  // The worker has no event for a notification shown or closed: ask until the count is reached.
  const poll = async () => {
    const shown = await self.registration.getNotifications();
    if (shown.length === count) done();
    else setTimeout(poll, 20);
  };
  poll();
})"""


@pytest.mark.parametrize(
    ("data", "title"), [(json.dumps(QUESTION), "deploy-bot asks"), ("{not json", "A question is waiting")]
)
async def test_the_push_listener_shows_what_the_push_carries(worker: Worker, data: str, title: str) -> None:
    # A synthetic PushEvent reaches the real listener. Its own waitUntil refuses an untrusted event, so the listener's
    # promise is taken here instead and awaited (left to itself, Chromium now and then never showed it).
    await worker.evaluate(
        """(data) => {
          const event = new PushEvent("push", { data });
          let kept = null;
          Object.defineProperty(event, "waitUntil", { value: (promise) => { kept = promise; } });
          self.dispatchEvent(event);
          return kept;
        }""",
        data,
    )
    with anyio.fail_after(5):
        await worker.evaluate(SHOWING, 1)
    [shown] = await notifications(worker)
    assert shown["title"] == title


async def test_the_click_listener_closes_the_notification_and_answers_its_action(
    worker: Worker, stand_in: PushStandIn
) -> None:
    await worker.evaluate("(question) => self.handraiseOnPush(question)", QUESTION)
    await worker.evaluate(
        """async () => {
          const [notification] = await self.registration.getNotifications();
          self.addEventListener("error", (event) => event.preventDefault());
          try {
            self.dispatchEvent(new NotificationEvent("notificationclick", { notification, action: "0" }));
          } catch {}
        }"""
    )
    with anyio.fail_after(5):
        await worker.evaluate(SHOWING, 0)  # the listener closed it
    with anyio.fail_after(5):
        await stand_in.answered.wait()
    [answered] = stand_in.made("POST", "/push/answers/q-1")
    assert answered.body == {"action": "0"}
    assert answered.headers["Authorization"] == f"Bearer {ANSWER_TOKEN}"


async def test_an_action_answers_with_the_bearer_token_and_no_cookie(worker: Worker, stand_in: PushStandIn) -> None:
    done = await worker.evaluate("(question) => self.handraiseOnClick(question, '1')", QUESTION)
    assert done == "answered"
    [answered] = stand_in.made("POST", "/push/answers/q-1")
    assert answered.headers["Authorization"] == f"Bearer {ANSWER_TOKEN}"
    assert answered.headers["Content-Type"] == "application/json"
    assert answered.body == {"action": "1"}
    assert "Cookie" not in answered.headers and "X-CSRF-Token" not in answered.headers


OPEN_WINDOW_STUB = """() => {
  self.handraiseOpened = [];
  self.clients.matchAll = async () => [];
  self.clients.openWindow = async (url) => { self.handraiseOpened.push(url); return null; };
}"""


async def test_a_refused_answer_opens_the_question_instead(
    worker: Worker, base_url: str, stand_in: PushStandIn
) -> None:
    stand_in.answer_status = 409  # answered elsewhere, or the token used already
    await worker.evaluate(OPEN_WINDOW_STUB)
    assert await worker.evaluate("(question) => self.handraiseOnClick(question, '0')", QUESTION) == "opened"
    assert await worker.evaluate("self.handraiseOpened") == [base_url + "/#card-q-1"]
    assert len(stand_in.made("POST", "/push/answers/q-1")) == 1


async def test_a_click_on_the_body_opens_the_question_and_sends_no_answer(
    worker: Worker, base_url: str, stand_in: PushStandIn
) -> None:
    await worker.evaluate(OPEN_WINDOW_STUB)
    assert await worker.evaluate("(question) => self.handraiseOnClick(question, '')", QUESTION) == "opened"
    # An action the notification did not offer is a body click too; a foreign page is never opened.
    foreign = {**QUESTION, "url": "https://evil.example/phish"}
    assert await worker.evaluate("(question) => self.handraiseOnClick(question, 'approve')", foreign) == "opened"
    assert await worker.evaluate("self.handraiseOpened") == [base_url + "/#card-q-1", base_url + "/"]
    assert stand_in.made("POST", "/push/answers/q-1") == []


async def test_an_answer_url_on_another_server_gets_no_token(worker: Worker, stand_in: PushStandIn) -> None:
    await worker.evaluate(OPEN_WINDOW_STUB)
    elsewhere = {**QUESTION, "answer_url": "https://evil.example/collect"}
    assert await worker.evaluate("(question) => self.handraiseOnClick(question, '0')", elsewhere) == "opened"
    assert stand_in.calls == []


async def test_a_body_click_focuses_an_open_inbox_tab(worker: Worker, base_url: str) -> None:
    # Focusing needs the click's user activation, which a test cannot give: the attempt is what is checked.
    focused = await worker.evaluate(
        """async (question) => {
          const [tab] = await self.clients.matchAll({ type: "window" });
          let asked = null;
          self.clients.matchAll = async () => [{ url: tab.url, focus: async () => { asked = tab.url; } }];
          return [await self.handraiseOnClick(question, ""), asked];
        }""",
        QUESTION,
    )
    assert focused == ["focused", base_url + "/"]
