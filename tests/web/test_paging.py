"""The inbox in pages: it says how many questions really wait, and plain links reach the oldest of them."""

from __future__ import annotations

import re

import pytest

from bot.store.records import QuestionRecord
from bot.store.sqlite.store import Store
from bot.web.paging import Page, render_pager
from bot.web.render import Card, render_inbox
from tests.web.helpers import Client, answer, choice, csrf_of, item, web_question

from .test_render import Elements

pytestmark = pytest.mark.anyio


def asked_in_order(store: Store, count: int) -> list[QuestionRecord]:
    """`count` questions on show, oldest first, each saying when it was asked."""
    return [web_question(store, item("go", question=f"Deploy build {n}?")) for n in range(1, count + 1)]


def shown(page: str) -> list[str]:
    return re.findall(r'<span class="text">Deploy build (\d+)\?</span>', page)


def links(page: str) -> dict[str, str]:
    """The pagers' links by their text."""
    pagers = "".join(re.findall(r'<nav class="pages".*?</nav>', page))
    return {text: href for href, text in re.findall(r'<a href="(/[^"]*)"(?: rel="\w+")?>(\w+)</a>', pagers)}


# --- which page --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "number"),
    [(None, 1), ("1", 1), ("2", 2), ("3", 3), ("4", 3), ("0", 1), ("-1", 1), ("2.5", 1), ("", 1), ("abc", 1),
     ("9" * 30, 3), ("\u0662", 1), (" 2", 1)],
)  # fmt: skip
def test_the_page_asked_for_is_clamped_to_those_there_are(requested: str | None, number: int) -> None:
    assert Page.at(250, requested).number == number


def test_a_page_knows_which_questions_it_shows() -> None:
    last = Page.at(250, "3")
    assert (last.count, last.first_shown, last.last_shown) == (3, 201, 250)
    assert Page.at(0, None).count == 1


def test_one_page_needs_no_pager() -> None:
    assert render_pager(Page(waiting=100), "Pages") == ""


def test_the_pager_links_to_newer_older_and_both_ends() -> None:
    middle = render_pager(Page(waiting=2_000, number=7), "Pages")
    assert links(middle) == {"Newest": "/", "Newer": "/?page=6", "Older": "/?page=8", "Oldest": "/?page=20"}
    assert "Page 7 of 20: questions 601 to 700, newest first" in middle
    assert set(links(render_pager(Page(waiting=2_000, number=1), "Pages"))) == {"Older", "Oldest"}
    assert set(links(render_pager(Page(waiting=2_000, number=20), "Pages"))) == {"Newest", "Newer"}


def test_the_count_is_of_every_waiting_question_not_of_the_cards_on_the_page() -> None:
    cards = [Card(QuestionRecord(questions=[choice()])) for _ in range(100)]
    page = render_inbox(cards, csrf="c", page=Page(waiting=2_000))
    assert '<p class="count" data-count>2,000 questions</p>' in page
    assert "<title>(2,000) handraise inbox</title>" in page


def test_forms_on_a_later_page_say_which_page_to_return_to() -> None:
    page = render_inbox([Card(QuestionRecord(questions=[choice()]))], csrf="c", page=Page(waiting=250, number=3))
    hidden = {attrs["name"]: attrs["value"] for attrs in Elements(page).named("input") if attrs["type"] == "hidden"}
    assert hidden["page"] == "3"
    first = render_inbox([Card(QuestionRecord(questions=[choice()]))], csrf="c", page=Page(waiting=250))
    assert 'name="page"' not in first


# --- over HTTP -----------------------------------------------------------------------------------------------------


async def test_with_250_waiting_the_inbox_says_250_and_shows_the_newest_hundred(client: Client, store: Store) -> None:
    asked_in_order(store, 250)
    page = await (await client.get("/")).text()
    assert "250 questions" in page
    assert shown(page) == [str(n) for n in range(250, 150, -1)]
    assert links(page) == {"Older": "/?page=2", "Oldest": "/?page=3"}


async def test_the_oldest_questions_are_on_the_last_page(client: Client, store: Store) -> None:
    asked_in_order(store, 250)
    page = await (await client.get("/?page=3")).text()
    assert shown(page) == [str(n) for n in range(50, 0, -1)]
    assert "250 questions" in page and "Page 3 of 3: questions 201 to 250, newest first" in page


@pytest.mark.parametrize("requested", ["0", "abc", "-3", "9" * 40, "%00", "1e3"])
async def test_any_page_parameter_gives_a_page(client: Client, store: Store, requested: str) -> None:
    asked_in_order(store, 150)
    response = await client.get(f"/?page={requested}")
    assert response.status == 200 and len(shown(await response.text())) in (100, 50)


async def test_an_answer_sent_from_a_later_page_returns_there(client: Client, store: Store) -> None:
    oldest = asked_in_order(store, 250)[0]
    csrf = csrf_of(await (await client.get("/?page=3")).text())
    response = await answer(client, oldest.id, [("q0.other", "ship it"), ("page", "3")], csrf=csrf)
    assert response.status == 303 and response.headers["Location"] == f"/?page=3&answered={oldest.id}"
    page = await (await client.get(response.headers["Location"])).text()
    assert "Answer sent" in page and "249 questions" in page
    assert shown(page) == [str(n) for n in range(50, 1, -1)]


async def test_a_refused_answer_from_a_later_page_shows_that_page_again(client: Client, store: Store) -> None:
    records = asked_in_order(store, 250)
    oldest = web_question(store, choice())  # the newest, in fact: listed first on page 1
    csrf = csrf_of(await (await client.get("/?page=3")).text())
    response = await answer(client, oldest.id, [("q0", "0"), ("q0.other", "both"), ("page", "3")], csrf=csrf)
    assert response.status == 400
    page = await response.text()
    assert "you chose staging and also wrote an answer" in page
    assert shown(page) == [str(n) for n in range(51, 0, -1)] and records[0].id in page
