"""A coding agent's permission prompt in the web inbox: the buttons Allow, Deny… and Always allow, and Deny… sends
the reason field. The buttons are read from the page and pressed as a browser does; the answer is read by the hook's
own `decision_of`, so these show what the agent gets."""

from __future__ import annotations

import html
import re

import anyio
import pytest

from bot.permissions.prompt import ALLOW, ALWAYS, DENY, Decision, Permission, decision_of, question
from bot.store.sqlite.store import Store
from core import AskUserQuestionItem, Context
from tests.web.helpers import Client, answer, start_ask, web_question

pytestmark = pytest.mark.anyio

PERMISSION = Permission(
    agent="cursor", project="billing-api", tool="Shell", kind="shell", request="make deploy", detail="make deploy"
)
PROMPT = AskUserQuestionItem.model_validate(question(PERMISSION))
_BUTTON = re.compile(r'<button type="submit" name="q0" value="([^"]+)" class="[^"]*">([^<]*)</button>')


def buttons(page: str) -> dict[str, str]:
    """The answer buttons of the one card on the page: their text → the value they send."""
    return {html.unescape(text): value for value, text in _BUTTON.findall(page)}


async def press(client: Client, ctx: Context, store: Store, label: str, words: str) -> Decision | None:
    """Ask the permission prompt, type `words` in its field, press the button labelled `label`."""
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, PROMPT)
        [record] = store.list_questions(status="pending", channel="web")
        value = buttons(await (await client.get("/")).text())[label]
        response = await answer(client, record.id, [("q0.other", words), ("q0", value)])
        assert response.status == 303, await response.text()
        return decision_of((await asking.result()).to_wire(), None)


async def test_the_card_has_three_answer_buttons_and_a_reason_field(client: Client, store: Store) -> None:
    web_question(store, PROMPT)
    page = await (await client.get("/")).text()
    assert list(buttons(page)) == [ALLOW, DENY, ALWAYS]
    assert buttons(page)[DENY] == "other"
    assert "Request changes" not in page
    assert ">Deny… — say why (optional)</label>" in page


async def test_deny_with_words_is_a_deny_carrying_them(client: Client, ctx: Context, store: Store) -> None:
    decision = await press(client, ctx, store, DENY, "  the deploy window is closed ")
    assert decision == Decision("deny", "the deploy window is closed")


async def test_deny_without_words_is_a_plain_deny(client: Client, ctx: Context, store: Store) -> None:
    assert await press(client, ctx, store, DENY, " ") == Decision("deny", "Denied through handraise.")


async def test_allow_with_a_reason_typed_is_refused_rather_than_guessed(client: Client, store: Store) -> None:
    record = web_question(store, PROMPT)
    response = await answer(client, record.id, [("q0.other", "not now"), ("q0", "0")])
    assert response.status == 400
    assert "or press Deny…" in await response.text()
    assert store.get_question(record.id).status == "pending"  # type: ignore[union-attr]


async def test_always_allow_allows(client: Client, ctx: Context, store: Store) -> None:
    decision = await press(client, ctx, store, ALWAYS, "")
    assert decision is not None and (decision.behavior, decision.always) == ("allow", True)
