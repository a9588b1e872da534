"""docs/tools/telegram_preview.py: the README's Telegram pictures are drawn from the payloads the channel really
sends, and the drawing lets nothing from a message reach the page raw (no browser here)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_preview() -> ModuleType:
    spec = importlib.util.spec_from_file_location("telegram_preview", ROOT / "docs" / "tools" / "telegram_preview.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


preview = load_preview()


@pytest.mark.parametrize("name", sorted(preview.IMAGES))
def test_the_committed_payloads_are_what_the_channel_sends_today(name: str) -> None:
    committed = json.loads((ROOT / "docs" / name).read_text(encoding="utf-8"))
    assert committed == preview.payloads()[name], "run: uv run python docs/tools/telegram_preview.py"


def test_the_picture_shows_the_buttons_of_the_payload() -> None:
    page = preview.message_to_html(preview.payloads()["telegram-preview-plan-review.json"])
    assert page.count('class="button"') == 3 and "✅ Approve" in page


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ('<img src=x onerror="alert(1)">', "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"),
        ("&lt;b&gt;", "&lt;b&gt;"),
        ("<b>bold</i>", "<b>bold&lt;/i&gt;</b>"),
        ('<a href="javascript:alert(1)">x</a>', '<span class="link">x</span>'),
    ],
)
def test_nothing_from_the_message_reaches_the_page_raw(text: str, shown: str) -> None:
    assert preview.telegram_html_to_html(text) == shown


def test_a_button_text_is_escaped() -> None:
    payload = {"text": "q", "reply_markup": {"inline_keyboard": [[{"text": "<b>x</b>", "callback_data": "p:0:0"}]]}}
    assert "&lt;b&gt;x&lt;/b&gt;" in preview.message_to_html(payload)
