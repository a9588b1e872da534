"""Sign-in in Chromium: `serve`'s program against the local OpenID provider (Authlib's server), as people use it:
sign in, answer, approve with two people, sign out; a refused person, every forged ID token, a foreign state and a
replayed callback get pages that say why; the session on a second replica; "Waiting for you" and its live count."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from tests.web.helpers import PLAN_REVIEW
from tests.web.oidc_provider import Provider, unsigned
from tests.web.test_sign_in import (
    FORGERIES,
    GO,
    OPS_TO_OTHER_ORG,
    TWO_APPROVALS,
    alice_signed_in,
    answer,
    ask,
    browser,
    outcome,
    serving,
)

pytestmark = [pytest.mark.anyio, pytest.mark.browser]


async def new_page(chromium: Browser) -> Page:
    context = await chromium.new_context()
    page = await context.new_page()
    page.set_default_timeout(5000)
    return page


async def test_sign_in_answer_and_sign_out_in_chromium(chromium: Browser, provider: Provider, tmp_path: Path) -> None:
    question = {"id": "env", "question": "Which environment?", "options": [{"label": "staging"}, {"label": "prod"}]}
    async with serving(provider, tmp_path) as program, browser() as agent:
        page = await new_page(chromium)
        await page.goto(program.base_url + "/")
        await expect(page.locator("header.top")).to_contain_text("Signed in as alice@example.org")
        assert page.url == program.base_url + "/"
        await expect(page.locator("[data-live]")).to_have_text("Live")  # the event stream is connected
        async with agent.post(program.base_url + "/v1/questions", json={"questions": [question]}) as asked:
            question_id = str((await asked.json())["id"])
        card = page.locator(f'article[data-question="{question_id}"]')  # the live page shows it
        await card.get_by_label("prod").check()
        await card.get_by_role("button", name="Send answer").click()
        await expect(page.locator(".notice")).to_contain_text("Answer sent")
        assert (await outcome(program, agent, question_id))["resolvedBy"] == "alice@example.org"
        await page.get_by_role("button", name="Sign out").click()
        await expect(page.locator("main")).to_contain_text("You are signed out")
        await page.close()


async def test_two_people_approve_a_plan_in_two_browsers(chromium: Browser, provider: Provider, tmp_path: Path) -> None:
    async with serving(provider, tmp_path, extra=TWO_APPROVALS) as program, browser() as agent:
        alice = await new_page(chromium)
        await alice.goto(program.base_url + "/")
        await expect(alice.locator("[data-live]")).to_have_text("Live")  # the event stream is connected
        async with agent.post(program.base_url + "/v1/questions", json={"questions": [PLAN_REVIEW]}) as asked:
            question_id = str((await asked.json())["id"])
        provider.person = "bob@other.org"
        bob = await new_page(chromium)
        await bob.goto(program.base_url + "/")
        await expect(bob.locator("header.top")).to_contain_text("Signed in as bob@other.org")
        for page in (alice, bob):
            await page.locator(f'article[data-question="{question_id}"]').get_by_role("button", name="Approve").click()
            await expect(page.locator(".notice")).to_be_visible()  # the POST is done, its redirect shown
        result = await outcome(program, agent, question_id)
        assert result["status"] == "answered"
        assert result["approvedBy"] == ["alice@example.org", "bob@other.org"]
        await alice.close()
        await bob.close()


async def test_a_refused_person_and_a_forged_token_see_why(
    chromium: Browser, provider: Provider, tmp_path: Path
) -> None:
    async with serving(provider, tmp_path) as program:
        provider.person = "mallory@example.org.evil.net"
        page = await new_page(chromium)
        response = await page.goto(program.base_url + "/")
        assert response is not None and response.status == 403
        await expect(page.locator("main")).to_contain_text("is not among the people allowed")
        provider.person = "alice@example.org"
        provider.forge = lambda provider, claims: unsigned(claims)
        response = await page.goto(program.base_url + "/auth/sign-in")
        assert response is not None and response.status == 401
        await expect(page.get_by_role("link", name="Sign in")).to_be_visible()
        await page.close()


@pytest.mark.parametrize("forge", list(FORGERIES), ids=list(FORGERIES))
async def test_forged_id_tokens_are_refused_in_chromium(
    chromium: Browser, provider: Provider, tmp_path: Path, forge: str
) -> None:
    provider.forge = FORGERIES[forge]
    async with serving(provider, tmp_path) as program:
        page = await new_page(chromium)
        response = await page.goto(program.base_url + "/")
        assert response is not None and 400 <= response.status < 500
        await expect(page.locator("main")).to_contain_text("You are not signed in")
        assert not [cookie for cookie in await page.context.cookies() if cookie.get("name") == "handraise_session"]
        await page.close()


async def test_a_foreign_state_a_replayed_callback_and_a_second_replica_in_chromium(
    chromium: Browser, provider: Provider, tmp_path: Path
) -> None:
    async with (
        serving(provider, tmp_path) as program,
        serving(provider, tmp_path, "b") as same,
        serving(provider, tmp_path, "c", "another secret") as other,
        browser() as attacker,
    ):
        async with attacker.get(program.base_url + "/", allow_redirects=False) as started:
            location = started.headers["Location"]
        async with attacker.get(location, allow_redirects=False) as back:
            callback = back.headers["Location"]
        page = await new_page(chromium)
        response = await page.goto(callback)  # the attacker's sign-in, finished in the victim's browser
        assert response is not None and response.status == 400
        await expect(page.locator("main")).to_contain_text("not started in this browser")
        callbacks: list[str] = []
        page.on("request", lambda request: callbacks.append(request.url) if "/auth/callback?" in request.url else None)
        await page.goto(program.base_url + "/")
        await expect(page.locator("header.top")).to_contain_text("Signed in as alice@example.org")
        # Her own callback, replayed after she signed in (its code used, its flow ended): refused, still signed in.
        assert len(callbacks) == 1
        replayed = await page.goto(callbacks[0])
        assert replayed is not None and replayed.status == 400
        await expect(page.locator("main")).to_contain_text("You are not signed in")
        await page.goto(program.base_url + "/")
        await expect(page.locator("header.top")).to_contain_text("Signed in as alice@example.org")
        asked = len(provider.authorize_requests)
        await page.goto(same.base_url + "/history")  # the same secret: the same session, no trip to the provider
        await expect(page.locator("header.top")).to_contain_text("Signed in as alice@example.org")
        assert len(provider.authorize_requests) == asked
        await page.goto(other.base_url + "/history")  # another secret: back to the provider
        assert len(provider.authorize_requests) == asked + 1
        await page.close()


async def test_waiting_for_you_and_approve_selected_in_chromium(
    chromium: Browser, provider: Provider, tmp_path: Path
) -> None:
    # alice's session signed in: `ask` waits until her inbox shows each question
    async with alice_signed_in(provider, tmp_path, OPS_TO_OTHER_ORG) as (program, agent):
        page = await new_page(chromium)
        first = await ask(program, agent, GO)
        theirs = await ask(program, agent, GO, agent="ops-1")
        plans = [await ask(program, agent, PLAN_REVIEW | {"id": f"plan{n}"}) for n in range(3)]
        await page.goto(program.base_url + "/")
        cards = page.locator("article[data-question]")
        listed = await cards.evaluate_all("cards => cards.map(c => c.dataset.question)")
        assert listed == [first, *plans, theirs]  # hers first, oldest first; then the rest
        await page.get_by_role("link", name="Waiting for you").click()
        await expect(page.locator("article[data-question]")).to_have_count(4)
        assert page.url == program.base_url + "/?mine=1"
        await expect(page.locator(f'article[data-question="{theirs}"]')).to_have_count(0)

        await page.goto(program.base_url + "/")
        bulk = page.locator("form.bulk")
        for plan in (plans[0], plans[2]):
            await bulk.locator(f'input[name="id"][value="{plan}"]').check()
        await bulk.get_by_role("button", name="Approve selected").click()
        await expect(page.locator(".notice")).to_contain_text("Approved 2 selected question(s) as alice@example.org")
        for plan, status in zip(plans, ["answered", "pending", "answered"], strict=True):
            result = await outcome(program, agent, plan)
            assert result["status"] == status
            if status == "answered":
                assert result["resolvedBy"] == "alice@example.org"
        # What `handraise history --json` prints: the approval under her email, once per selected question.
        for plan in (plans[0], plans[2]):
            events = await program.installation.ledger.store.history(question_id=plan)
            assert [event.actor for event in events if event.kind == "answered"] == ["alice@example.org"]
        await page.close()


async def test_waiting_for_you_counts_only_the_persons_questions_as_they_come_and_go(
    chromium: Browser, provider: Provider, tmp_path: Path
) -> None:
    async with alice_signed_in(provider, tmp_path, OPS_TO_OTHER_ORG) as (program, agent):
        hers = await ask(program, agent, GO)
        await ask(program, agent, GO, agent="ops-1")
        page = await new_page(chromium)
        await page.goto(program.base_url + "/?mine=1")
        count = page.locator("[data-count]")
        await expect(count).to_have_text("1 question")
        await expect(page.locator("[data-live]")).to_have_text("Live")

        # Someone else's question: the stream says 3 wait, the page still says hers, and does not show it.
        theirs = await ask(program, agent, GO, agent="ops-2")
        await expect(page).to_have_title("(1) handraise inbox")
        # Hers: counted and shown after her older one (oldest first).
        newer = await ask(program, agent, GO)
        await expect(count).to_have_text("2 questions")
        cards = page.locator("article[data-question]")
        await expect(cards).to_have_count(2)
        assert await cards.evaluate_all("cards => cards.map(c => c.dataset.question)") == [hers, newer]
        await expect(page.locator(f'article[data-question="{theirs}"]')).to_have_count(0)
        assert "1 question" not in await page.locator("[data-count]").inner_text()  # not overwritten by the total

        # One of hers answered elsewhere: the count goes down; someone else's answered: it stays.
        assert await answer(program, agent, hers, 0, by="") == 303
        await expect(count).to_have_text("1 question")
        await expect(page.locator(f'article[data-question="{hers}"]')).to_have_attribute("data-status", "answered")
        await page.reload()
        await expect(count).to_have_text("1 question")
        await page.close()


async def test_a_new_question_takes_its_place_among_the_persons_own_or_the_rest_in_chromium(
    chromium: Browser, provider: Provider, tmp_path: Path
) -> None:
    async with alice_signed_in(provider, tmp_path, OPS_TO_OTHER_ORG) as (program, agent):
        hers = await ask(program, agent, GO)
        theirs = await ask(program, agent, GO, agent="ops-1")
        page = await new_page(chromium)
        await page.goto(program.base_url + "/")
        await expect(page.locator("[data-live]")).to_have_text("Live")
        cards = page.locator("article[data-question]")
        other = await ask(program, agent, GO, agent="ops-2")  # the newest of the rest: first of them
        await expect(cards).to_have_count(3)
        newer = await ask(program, agent, GO)  # the newest of hers: last of hers, before the rest
        await expect(cards).to_have_count(4)
        await expect(page.locator("[data-count]")).to_have_text("4 questions")
        listed = await cards.evaluate_all("cards => cards.map(c => c.dataset.question)")
        assert listed == [hers, newer, other, theirs]
        await page.reload()  # what the server renders is the same order
        assert await cards.evaluate_all("cards => cards.map(c => c.dataset.question)") == listed
        await page.close()
