"""The inbox over HTTP: sign-in, the answer form through the real seam, first-answer-wins, and its refusals."""

from __future__ import annotations

import re

import anyio
import pytest

from bot.questions.ledger import Ledger
from bot.store.records import AgentRef, QuestionRecord
from bot.store.sqlite.store import Store
from bot.web import WebInbox
from bot.web.auth import CONTENT_SECURITY_POLICY
from bot.web.settings import WebSettings
from core import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    Context,
    ErrorCode,
    UserQuestionError,
)
from tests.web.helpers import TOKEN, Client, Form, answer, choice, csrf_of, item, plan, start_ask, web_question

pytestmark = pytest.mark.anyio


async def ask_and_answer(
    client: Client, ctx: Context, store: Store, questions: list[AskUserQuestionItem], fields: Form
) -> AskUserQuestionAnswer:
    """Ask through the seam, post `fields` as the answer form, and return what `ask()` returned."""
    result: AskUserQuestionAnswer | None = None
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, *questions)
        [record] = store.list_questions(status="pending", channel="web")
        response = await answer(client, record.id, fields)
        assert response.status == 303, await response.text()
        assert response.headers["Location"] == f"/?answered={record.id}"
        result = await asking.result()
    assert result is not None
    return result


# --- signing in -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/"), ("GET", "/history"), ("GET", "/events"), ("POST", "/questions/x/answer")]
)
async def test_without_the_cookie_every_page_is_401_and_says_where_the_link_is(
    anonymous: Client, method: str, path: str
) -> None:
    response = await anonymous.request(method, path)
    assert response.status == 401
    assert "handraise serve" in await response.text()
    assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY


async def test_the_token_link_sets_a_strict_httponly_cookie_and_redirects_to_the_bare_inbox(anonymous: Client) -> None:
    response = await anonymous.get(f"/?token={TOKEN}", allow_redirects=False)
    assert response.status == 303 and response.headers["Location"] == "/"
    cookie = response.headers["Set-Cookie"]
    assert TOKEN in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert (await anonymous.get("/")).status == 200


async def test_a_wrong_token_signs_nobody_in(anonymous: Client) -> None:
    response = await anonymous.get("/?token=guess", allow_redirects=False)
    assert response.status == 401 and "Set-Cookie" not in response.headers
    assert (await anonymous.get("/")).status == 401


async def test_a_bearer_header_works_instead_of_the_cookie(anonymous: Client) -> None:
    assert (await anonymous.get("/history", headers={"Authorization": f"Bearer {TOKEN}"})).status == 200
    assert (await anonymous.get("/history", headers={"Authorization": "Bearer nope"})).status == 401


async def test_a_post_with_a_wrong_csrf_token_is_403_and_answers_nothing(client: Client, store: Store) -> None:
    record = web_question(store, choice())
    response = await answer(client, record.id, [("q0", "0")], csrf="forged")
    assert response.status == 403
    assert store.get_question(record.id).status == "pending"  # type: ignore[union-attr]


async def test_pages_carry_the_strict_csp_and_load_only_their_own_files(client: Client, store: Store) -> None:
    web_question(store, plan())
    response = await client.get("/")
    assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    page = await response.text()
    assert set(re.findall(r'(?:src|href)="([^"]*)"', page)) <= {
        "/",
        "/history",
        "/static/inbox.css",
        "/static/inbox.js",
        "/manifest.webmanifest",
        "/static/icon-192.png",
    }


async def test_static_files_are_served_and_nothing_else_is(anonymous: Client) -> None:
    script = await anonymous.get("/static/inbox.js")
    assert script.status == 200 and script.content_type == "text/javascript"
    assert (await anonymous.get("/static/inbox.css")).content_type == "text/css"
    assert (await anonymous.get("/static/app.py")).status == 404


def test_url_carries_the_token_and_a_fresh_inbox_gets_a_random_one(ledger: Ledger, inbox: WebInbox) -> None:
    assert inbox.url("http://127.0.0.1:8765") == f"http://127.0.0.1:8765/?token={TOKEN}"
    first, second = WebInbox(ledger, WebSettings()), WebInbox(ledger, WebSettings())
    assert len(first.token) >= 32 and first.token != second.token


# --- form to answer, through the seam ---------------------------------------------------------------------------


async def test_single_choice(client: Client, ctx: Context, store: Store) -> None:
    answer_ = await ask_and_answer(client, ctx, store, [choice()], [("q0", "1"), ("action", "send")])
    assert answer_ == AskUserQuestionAnswer(answers=[AskUserQuestionAnswerItem(id="env", selected=["production"])])


async def test_multi_select_with_other(client: Client, ctx: Context, store: Store) -> None:
    fields = [("q0", "0"), ("q0", "1"), ("q0", "other"), ("q0.other", "eu-west"), ("action", "send")]
    answer_ = await ask_and_answer(client, ctx, store, [choice(multi=True)], fields)
    assert answer_.answers == [
        AskUserQuestionAnswerItem(id="env", selected=["staging", "production"], custom="eu-west")
    ]


async def test_custom_answer_to_a_single_choice(client: Client, ctx: Context, store: Store) -> None:
    answer_ = await ask_and_answer(client, ctx, store, [choice()], [("q0", "other"), ("q0.other", "canary")])
    assert answer_.answers == [AskUserQuestionAnswerItem(id="env", selected=[], custom="canary")]


async def test_skip(client: Client, ctx: Context, store: Store) -> None:
    answer_ = await ask_and_answer(client, ctx, store, [choice(), item("why")], [("action", "skip")])
    assert answer_.answers == [AskUserQuestionAnswerItem(id="env"), AskUserQuestionAnswerItem(id="why")]


async def test_plan_review_approve(client: Client, ctx: Context, store: Store) -> None:
    answer_ = await ask_and_answer(client, ctx, store, [plan()], [("q0.other", ""), ("q0", "0")])
    assert answer_.answers == [AskUserQuestionAnswerItem(id="plan", selected=["Approve"])]


async def test_plan_review_request_changes(client: Client, ctx: Context, store: Store) -> None:
    fields = [("q0.other", "Backfill at night"), ("q0", "other")]
    answer_ = await ask_and_answer(client, ctx, store, [plan()], fields)
    assert answer_.answers == [AskUserQuestionAnswerItem(id="plan", custom="Backfill at night")]


async def test_several_questions_answered_in_one_submit(client: Client, ctx: Context, store: Store) -> None:
    questions = [plan(), choice("regions", multi=True), item("why")]
    fields = [("q0", "0"), ("q1", "1"), ("q2.other", "tests pass"), ("action", "send")]
    answer_ = await ask_and_answer(client, ctx, store, questions, fields)
    assert answer_.answers == [
        AskUserQuestionAnswerItem(id="plan", selected=["Approve"]),
        AskUserQuestionAnswerItem(id="regions", selected=["production"]),
        AskUserQuestionAnswerItem(id="why", custom="tests pass"),
    ]
    assert store.history(kinds=["answered"])[0].channel == "web"


async def test_after_answering_the_inbox_confirms_and_no_longer_lists_it(client: Client, store: Store) -> None:
    record = web_question(store, choice())
    response = await answer(client, record.id, [("q0", "0")])
    page = await (await client.get(response.headers["Location"])).text()
    assert "Answer sent" in page and "data-question" not in page and "No questions are waiting" in page


# --- refusals keep what was typed ---------------------------------------------------------------------------------


async def test_a_form_that_does_not_fit_is_shown_again_with_the_reason_and_the_text(
    client: Client, store: Store
) -> None:
    record = web_question(store, choice())
    response = await answer(client, record.id, [("q0", "0"), ("q0.other", "my <b>words</b>")])
    assert response.status == 400
    page = await response.text()
    assert "you chose staging and also wrote an answer" in page
    assert ">my &lt;b&gt;words&lt;/b&gt;</textarea>" in page
    assert store.get_question(record.id).status == "pending"  # type: ignore[union-attr]


async def test_a_second_answer_is_told_who_answered_first(client: Client, store: Store, ledger: Ledger) -> None:
    record = web_question(store, choice())
    page = await (await client.get("/")).text()
    await ledger.submit(
        record.id, {"env": AskUserQuestionAnswerItem(id="env", selected=["staging"])}, by="alice", via="slack"
    )
    response = await answer(client, record.id, [("q0", "other"), ("q0.other", "canary")], csrf=csrf_of(page))
    assert response.status == 409
    text = await response.text()
    assert "already answered" in text and "by alice in Slack" in text and ">canary</textarea>" in text
    assert (
        store.history(question_id=record.id, kinds=["duplicate"])[0].detail["attempted"]["answers"][0]["custom"]
        == "canary"
    )


async def test_a_question_cancelled_while_typing_refuses_the_submit(client: Client, ctx: Context, store: Store) -> None:
    async with anyio.create_task_group() as tasks:
        asking = await start_ask(tasks, ctx, plan())
        [record] = store.list_questions(status="pending", channel="web")
        page = await (await client.get("/")).text()
        asking.controller.abort("the agent moved on")
        with pytest.raises(UserQuestionError) as stopped:
            await asking.result()
        assert stopped.value.code == ErrorCode.ASK_ABORTED
        fields = [("q0.other", "change step 2"), ("q0", "other")]
        response = await answer(client, record.id, fields, csrf=csrf_of(page))
        assert response.status == 409
        text = await response.text()
        assert "already cancelled" in text and ">change step 2</textarea>" in text
        assert store.get_question(record.id).status == "cancelled"  # type: ignore[union-attr]


async def test_a_question_not_shown_in_the_inbox_cannot_be_answered_there(client: Client, store: Store) -> None:
    elsewhere = QuestionRecord(questions=[choice()])
    store.create_question(elsewhere)
    store.add_delivery(elsewhere.id, "slack", "C1:1.2", {})
    web_question(store, choice())
    page = await (await client.get("/")).text()
    assert elsewhere.id not in page
    assert (await answer(client, elsewhere.id, [("q0", "0")], csrf=csrf_of(page))).status == 404
    assert (await answer(client, "q_nope", [("q0", "0")], csrf=csrf_of(page))).status == 404
    assert store.get_question(elsewhere.id).status == "pending"  # type: ignore[union-attr]


# --- history ------------------------------------------------------------------------------------------------------


async def test_history_lists_answered_and_cancelled_questions_with_their_audit_log(
    client: Client, store: Store, ledger: Ledger
) -> None:
    answered = web_question(store, choice(), agent=AgentRef(id="deploy-bot"))
    cancelled = web_question(store, plan())
    web_question(store, item("still-open", question="Still open?"))
    await ledger.submit(
        answered.id, {"env": AskUserQuestionAnswerItem(id="env", selected=["production"])}, by="carol", via="email"
    )
    await ledger.resolve(cancelled.id, "cancelled", code="ASK_CANCELLED", message="the agent stopped waiting")
    page = await (await client.get("/history")).text()
    assert "Still open?" not in page
    assert "deploy-bot asks" in page and "by carol in email" in page and "<strong>production</strong>" in page
    assert "Cancelled" in page and "the agent stopped waiting" in page
    assert "Audit log (3)" in page  # asked, delivered, answered
