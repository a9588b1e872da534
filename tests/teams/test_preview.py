"""docs/teams-preview-*.json are the cards the channel sends today (docs/tools/teams_preview.py writes them)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_preview() -> ModuleType:
    spec = importlib.util.spec_from_file_location("teams_preview", ROOT / "docs" / "tools" / "teams_preview.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


preview = load_preview()


@pytest.mark.parametrize("name", sorted(preview.cards()))
def test_the_committed_cards_are_what_the_channel_sends_today(name: str) -> None:
    committed = json.loads((ROOT / "docs" / name).read_text(encoding="utf-8"))
    assert committed == preview.cards()[name], "run: uv run python docs/tools/teams_preview.py"


def test_the_multi_select_preview_is_a_choice_set_with_submit() -> None:
    card = preview.cards()["teams-preview-multi-select.json"]
    (field,) = [item for item in card["body"] if item["type"] == "Input.ChoiceSet"]
    assert field["isMultiSelect"] is True and [a["title"] for a in card["actions"]] == ["Submit", "Other…"]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ('<img src=x onerror="alert(1)">', "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"),
        ("**bold** and `code`", "<b>bold</b> and <code>code</code>"),
        ("**<b>**", "<b>&lt;b&gt;</b>"),
    ],
)
def test_nothing_from_a_card_reaches_the_page_raw(text: str, shown: str) -> None:
    assert preview.inline(text) == shown


def test_the_picture_shows_the_actions_of_the_card() -> None:
    page = preview.card_to_html(preview.cards()["teams-preview-plan-review.json"])
    assert page.count('<span class="action') == 2 and "Request changes…" in page
