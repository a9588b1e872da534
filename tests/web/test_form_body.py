"""The answer form's body as it arrives: URL-encoded UTF-8 (what the inbox's forms send) is read by the inbox itself,
anything else by aiohttp; either way the same answer is recorded, and a body that is not a form records nothing."""

from __future__ import annotations

import aiohttp
import pytest

from bot.store.sqlite.store import Store
from tests.web.helpers import Client, answer, csrf_of, item, web_question

pytestmark = pytest.mark.anyio

URL_ENCODED = "application/x-www-form-urlencoded"


def custom_answer(store: Store, question_id: str) -> str | None:
    record = store.get_question(question_id)
    assert record is not None and record.answer is not None, record
    return record.answer.answers[0].custom


async def test_text_with_the_form_syntax_and_non_ascii_arrives_as_typed(client: Client, store: Store) -> None:
    record = web_question(store, item("why"))
    typed = "a+b & c=d %20 100% — ünïcode ✓"
    response = await answer(client, record.id, [("q0.other", typed)])
    assert response.status == 303
    assert custom_answer(store, record.id) == typed


async def test_a_multipart_form_is_read_too(client: Client, store: Store) -> None:
    record = web_question(store, item("why"))
    form = aiohttp.FormData(quote_fields=False, default_to_multipart=True)
    form.add_field("csrf", csrf_of(await (await client.get("/")).text()))
    form.add_field("q0.other", "sent as multipart ✓")
    response = await client.post(f"/questions/{record.id}/answer", data=form, allow_redirects=False)
    assert response.status == 303
    assert custom_answer(store, record.id) == "sent as multipart ✓"


async def test_a_form_in_another_charset_is_read_in_that_charset(client: Client, store: Store) -> None:
    record = web_question(store, item("why"))
    csrf = csrf_of(await (await client.get("/")).text())
    body = f"csrf={csrf}&q0.other=caf%E9".encode()
    headers = {"Content-Type": f"{URL_ENCODED}; charset=latin-1"}
    response = await client.post(f"/questions/{record.id}/answer", data=body, headers=headers, allow_redirects=False)
    assert response.status == 303
    assert custom_answer(store, record.id) == "café"


async def test_a_body_that_is_not_utf8_is_refused_and_records_nothing(client: Client, store: Store) -> None:
    record = web_question(store, item("why"))
    csrf = csrf_of(await (await client.get("/")).text())
    body = f"csrf={csrf}&q0.other=".encode() + b"\xff\xfe"
    headers = {"Content-Type": URL_ENCODED}
    response = await client.post(f"/questions/{record.id}/answer", data=body, headers=headers, allow_redirects=False)
    assert response.status == 400
    assert "did not come as UTF-8 text" in await response.text()
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert store.get_question(record.id).status == "pending"  # type: ignore[union-attr]


async def test_a_form_of_too_many_fields_is_refused_and_records_nothing(client: Client, store: Store) -> None:
    record = web_question(store, item("why"))
    fields = [("q0.other", "why not"), *[(f"x{n}", "") for n in range(1000)]]
    response = await answer(client, record.id, fields)
    assert response.status == 413
    assert "at most 1000 fields" in await response.text()
    assert store.get_question(record.id).status == "pending"  # type: ignore[union-attr]
