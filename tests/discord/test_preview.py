"""docs/tools/discord_preview.py: the docs' Discord pictures are drawn from the bodies the channel really sends, and
the drawing lets nothing from a message reach the page raw (no browser here)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_preview() -> ModuleType:
    spec = importlib.util.spec_from_file_location("discord_preview", ROOT / "docs" / "tools" / "discord_preview.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


preview = load_preview()


@pytest.mark.parametrize("name", sorted(preview.IMAGES))
def test_the_committed_payloads_are_what_the_channel_sends_today(name: str) -> None:
    committed = json.loads((ROOT / "docs" / name).read_text(encoding="utf-8"))
    assert committed == preview.payloads()[name], "run: uv run python docs/tools/discord_preview.py"


def test_the_picture_shows_the_controls_of_the_payload() -> None:
    page = preview.message_to_html(preview.payloads()["discord-preview-plan-review.json"])
    assert page.count('class="button ') == 2 and "Request changes…" in page


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;<br>"),
        ('<img src=x onerror="alert(1)">', "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;<br>"),
        ("**<b>x</b>**", "<b>&lt;b&gt;x&lt;/b&gt;</b><br>"),
        ("\\*not bold\\*", "*not bold*<br>"),
        ("> <i>quoted</i>", "<blockquote>&lt;i&gt;quoted&lt;/i&gt;</blockquote>"),
    ],
)
def test_nothing_from_the_message_reaches_the_page_raw(text: str, shown: str) -> None:
    assert preview.discord_markdown_to_html(text) == shown


def test_a_button_label_is_escaped() -> None:
    payload = {"content": "q", "components": [{"type": 1, "components": [{"type": 2, "label": "<b>x</b>"}]}]}
    assert "&lt;b&gt;x&lt;/b&gt;" in preview.message_to_html(payload)
