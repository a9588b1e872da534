"""Web Push end to end through `serve` in Chromium: a person signs in at the local OpenID provider, turns
notifications on from the inbox page (the browser's subscription stubbed with a device of the local push service:
Chromium's own push needs a real push service), an agent asks, the push arrives encrypted and signed, the service
worker shows it and answers from its button as that person, and turning notifications off removes the device."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Browser, expect

from bot.program import Running
from tests.web.push.push_service import PushService, unb64
from tests.web.push.rig import CHOICE, ask, outcome
from tests.web.test_push_browser import notifications, stub_push_manager

pytestmark = [pytest.mark.anyio, pytest.mark.browser]


async def kept_endpoints(program: Running) -> list[str]:
    store: Any = program.installation.store
    return [device.endpoint for device in await store.list_push_subscriptions(["alice@example.org"])]


async def test_turn_on_get_a_question_answer_from_its_button_turn_off(
    chromium: Browser, program: Running, push_service: PushService
) -> None:
    phone = push_service.device()
    context = await chromium.new_context()
    context.set_default_timeout(5000)
    await context.grant_permissions(["notifications"], origin=program.base_url)
    await context.add_init_script(stub_push_manager(phone.to_json()))
    page = await context.new_page()
    await page.goto(program.base_url + "/")  # to the provider and back, signed in
    await expect(page.locator("header.top")).to_contain_text("Signed in as alice@example.org")

    await page.get_by_role("button", name="Turn on notifications").click()
    await expect(page.locator("[data-push-state]")).to_have_text("Notifications are on on this device.")
    assert await kept_endpoints(program) == [phone.endpoint]
    subscribed_with = await page.evaluate("window.handraiseSubscribedWith.key")

    question_id = await ask(program, CHOICE)
    [push] = await push_service.wait_for(phone)
    assert push.payload is not None and push.payload["id"] == question_id
    assert bytes(subscribed_with) == unb64(push.key)  # the page subscribed with the key that signs the pushes
    await page.wait_for_function("() => navigator.serviceWorker.controller !== null")
    worker = context.service_workers[0]
    await worker.evaluate("(payload) => self.handraiseOnPush(payload)", push.payload)
    [shown] = await notifications(worker)
    assert shown["body"] == "Deploy to which environment?"
    assert shown["actions"] == [["o0", "staging"], ["o1", "prod"]]

    assert await worker.evaluate("(payload) => self.handraiseOnClick(payload, 'o1')", push.payload) == "answered"
    result = await outcome(program, question_id)
    assert (result["status"], result["resolvedBy"]) == ("answered", "alice@example.org")
    assert result["answer"]["answers"][0]["selected"] == ["prod"]

    await page.get_by_role("button", name="Turn off notifications").click()
    await expect(page.locator("[data-push-state]")).to_have_text("Notifications are off on this device.")
    assert await kept_endpoints(program) == []
    await context.close()
