"""docs/tools/slack_preview.py, the HTML drawing of a Slack message behind the README's pictures (no browser here)."""

from __future__ import annotations

import copy
import importlib.util
import json
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PREVIEWS = sorted((ROOT / "docs").glob("slack-preview-*.json"))
PLACEHOLDER = 'class="unsupported"'


def load_preview() -> ModuleType:
    spec = importlib.util.spec_from_file_location("slack_preview", ROOT / "docs" / "tools" / "slack_preview.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


preview = load_preview()


def section(text: str, kind: str = "mrkdwn") -> dict[str, Any]:
    return {"type": "section", "text": {"type": kind, "text": text}}


def page(*blocks: dict[str, Any], **options: Any) -> str:
    return preview.blocks_to_html({"blocks": list(blocks)}, **options)


def body(html: str) -> str:
    """The part of the page drawn from the message (the stylesheet and frame left out)."""
    return html.split('<div class="blocks">', 1)[1]


def md(text: str, **names: str) -> str:
    return preview.mrkdwn_to_html(text, names)


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, as the browser's parser would read them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Tags()
    parser.feed(html)
    parser.close()
    return parser.tags


def assert_inert(html: str) -> None:
    """No script, no element that loads anything, no event handler, links only to http(s) or mailto."""
    for tag, attrs in tags(html):
        assert tag not in ("script", "img", "iframe", "object", "embed", "link", "meta", "form", "input") or (
            tag == "meta" and set(attrs) <= {"charset", "name", "content"}
        ), (tag, attrs)
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, attrs)
            assert name not in ("src", "srcset", "formaction"), (tag, attrs)
            if name == "href":
                assert value is not None and value.startswith(("https://", "http://", "mailto:")), (tag, attrs)


def walk(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object inside `value`, depth first."""
    if isinstance(value, dict):
        yield value
        for child in value.values():
            yield from walk(child)
    elif isinstance(value, list):
        for child in value:
            yield from walk(child)


# --- the four previews in docs/ --------------------------------------------------------------------------------------


def test_the_previews_are_there() -> None:
    assert {path.name for path in PREVIEWS} >= {
        "slack-preview-question.json",
        "slack-preview-plan-review.json",
        "slack-preview-batch.json",
        "slack-preview-answered.json",
    }
    for source in preview.IMAGES:
        assert (ROOT / "docs" / source).exists()


@pytest.mark.parametrize("path", PREVIEWS, ids=lambda path: path.stem)
def test_every_block_and_element_of_the_previews_is_drawn(path: Path) -> None:
    message = json.loads(path.read_text(encoding="utf-8"))
    kept = copy.deepcopy(message)
    html = preview.blocks_to_html(message)
    assert html == preview.blocks_to_html(message), "the rendering is not deterministic"
    assert message == kept, "the rendering changed its input"

    assert PLACEHOLDER not in html
    for block in message["blocks"]:
        assert block["type"] in preview.BLOCKS
        assert PLACEHOLDER not in preview.block_to_html(block)
        for element in block.get("elements", []) + [block[key] for key in ("accessory", "element") if key in block]:
            if element["type"] not in ("mrkdwn", "plain_text"):
                assert element["type"] in preview.ELEMENTS
                assert PLACEHOLDER not in preview.element_to_html(element)

    shown = copy.deepcopy(message)  # a closed menu shows its placeholder or choice, not its options
    for obj in walk(shown):
        if str(obj.get("type", "")).endswith("select"):
            obj.pop("options")
    for obj in walk(shown):  # every other label, option, placeholder and header is on the page
        if obj.get("type") == "plain_text":
            assert preview.plain_to_html(obj) in html, obj["text"]
    assert_inert(html)


def test_the_previews_draw_what_handraise_posts() -> None:
    plan = preview.blocks_to_html(json.loads((ROOT / "docs" / "slack-preview-plan-review.json").read_text()))
    assert '<span class="button primary">Approve</span>' in plan
    assert '<span class="button">Reject</span>' in plan
    assert '<code class="inline">orders-db</code>' in plan
    assert '<span class="mention">@alice</span>' in plan
    assert '<span class="name">handraise</span><span class="badge">APP</span>' in plan

    answered = preview.blocks_to_html(json.loads((ROOT / "docs" / "slack-preview-answered.json").read_text()))
    assert preview.EMOJI["white_check_mark"] + " <b>Answered</b> by" in answered
    assert "Jan 1, 2026 at 9:05 AM" in answered
    assert "button" not in body(answered)

    batch = preview.blocks_to_html(json.loads((ROOT / "docs" / "slack-preview-batch.json").read_text()))
    assert batch.count('<span class="radio">') == 3
    assert '<span class="select multi"><span class="placeholder">Choose any…</span>' in batch
    assert "Option 12" not in batch, "a closed menu shows its placeholder, not its options"
    assert '<span class="mention">@oncall</span>' in batch


def test_an_unknown_block_or_element_shows_the_placeholder() -> None:
    assert PLACEHOLDER in page({"type": "video", "title": {"type": "plain_text", "text": "x"}})
    assert PLACEHOLDER in page({"type": "actions", "elements": [{"type": "workflow_button"}]})
    assert PLACEHOLDER in page({"type": "context", "elements": [{"type": "image", "image_url": "https://x.test/a"}]})


# --- the other block types -------------------------------------------------------------------------------------------


def test_section_fields_and_accessory() -> None:
    html = page(
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": "Pick one"},
            "fields": [{"type": "mrkdwn", "text": "*Region*\neu-west-1"}, {"type": "plain_text", "text": "1 < 2"}],
            "accessory": {
                "type": "static_select",
                "action_id": "a",
                "placeholder": {"type": "plain_text", "text": "Choose"},
                "options": [{"text": {"type": "plain_text", "text": "One"}, "value": "1"}],
            },
        },
        {"type": "divider"},
    )
    assert PLACEHOLDER not in html
    assert '<div class="field"><b>Region</b><br>eu-west-1</div><div class="field">1 &lt; 2</div>' in html
    assert '<div class="accessory"><span class="select"><span class="placeholder">Choose</span>' in html
    assert '<hr class="block divider">' in html


def test_choices_selects_and_inputs_show_their_initial_values() -> None:
    one = {"text": {"type": "plain_text", "text": "One"}, "value": "1"}
    two = {
        "text": {"type": "plain_text", "text": "Two"},
        "value": "2",
        "description": {"type": "plain_text", "text": "d"},
    }
    html = page(
        {
            "type": "actions",
            "elements": [
                {"type": "checkboxes", "action_id": "c", "options": [one, two], "initial_options": [two]},
                {"type": "radio_buttons", "action_id": "r", "options": [one, two], "initial_option": one},
                {"type": "static_select", "action_id": "s", "options": [one, two], "initial_option": two},
                {"type": "multi_static_select", "action_id": "m", "options": [one, two], "initial_options": [one, two]},
                {"type": "button", "action_id": "b", "text": {"type": "plain_text", "text": "Stop"}, "style": "danger"},
            ],
        },
        {
            "type": "input",
            "optional": True,
            "label": {"type": "plain_text", "text": "Why?"},
            "hint": {"type": "plain_text", "text": "A line or two"},
            "element": {"type": "plain_text_input", "action_id": "t", "multiline": True},
        },
    )
    assert PLACEHOLDER not in html
    assert html.count('<span class="checkbox on">') == 1 and html.count('<span class="checkbox">') == 1
    assert html.count('<span class="radio on">') == 1 and html.count('<span class="radio">') == 1
    assert '<span class="option-description">d</span>' in html
    assert '<span class="select"><span class="value">Two</span>' in html
    assert '<span class="token">One</span><span class="token">Two</span>' in html
    assert '<span class="button danger">Stop</span>' in html
    assert 'Why? <span class="optional">(optional)</span>' in html
    assert '<div class="text-input multiline">' in html and '<div class="hint">A line or two</div>' in html


def test_a_message_without_blocks_shows_its_text() -> None:
    html = preview.blocks_to_html({"text": "Deploy *now*?"})
    assert "Deploy <b>now</b>?" in html


# --- hostile text ----------------------------------------------------------------------------------------------------

HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "'><svg onload=alert(1)>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "<javascript:alert(1)|click me>",
    '<https://x.test/"onmouseover="alert(1)|y>',
    "*<img src=x onerror=alert(1)>*",
    "`<script>`",
    "```\n</pre><script>alert(1)</script>\n```",
    "<@U0ALICE|<b onclick=alert(1)>>",
    "</div></div><iframe src=https://x.test>",
]


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("kind", ["mrkdwn", "plain_text"])
def test_hostile_text_stays_text(text: str, kind: str) -> None:
    html = page(
        {"type": "header", "text": {"type": "plain_text", "text": text}},
        section(text, kind),
        {"type": "section", "fields": [{"type": kind, "text": text}]},
        {"type": "context", "elements": [{"type": kind, "text": text}]},
        {
            "type": "actions",
            "elements": [{"type": "button", "action_id": "b", "text": {"type": "plain_text", "text": text}}],
        },
        names={"U0ALICE": text},
        app_name=text,
        channel=text,
        time=text,
    )
    assert_inert(html)
    drawn = body(html)
    for raw in ("<script", "<img", "<svg onload", "<iframe", "<b onclick", '"onmouseover'):
        assert raw not in drawn


def test_hostile_section_text_is_shown_escaped() -> None:
    drawn = body(page(section('<script>alert(1)</script> "><img src=x onerror=alert(1)>')))
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in drawn
    plain = body(page(section('<script>"x"</script>', "plain_text")))
    assert "&lt;script&gt;&quot;x&quot;&lt;/script&gt;" in plain


def test_links_only_to_web_and_mail() -> None:
    assert md("<javascript:alert(1)|click>") == "&lt;javascript:alert(1)|click&gt;"
    assert md("<data:text/html,x|y>") == "&lt;data:text/html,x|y&gt;"
    assert md("<mailto:ops@example.com|mail us>") == '<a href="mailto:ops@example.com">mail us</a>'


# --- mrkdwn ----------------------------------------------------------------------------------------------------------


def test_mrkdwn_emphasis() -> None:
    assert md("*bold* and _italic_ and ~gone~") == "<b>bold</b> and <i>italic</i> and <s>gone</s>"
    assert md("*Answered* by _someone_.") == "<b>Answered</b> by <i>someone</i>."
    assert md("*bold _and italic_*") == "<b>bold <i>and italic</i></b>"
    assert md("2*3*4 and snake_case_name and * not * and *") == "2*3*4 and snake_case_name and * not * and *"
    assert md("*two\nlines*") == "*two<br>lines*"


def test_mrkdwn_code() -> None:
    assert md("run `make *all*` now") == 'run <code class="inline">make *all*</code> now'
    assert md("a `&lt;b&gt; &amp;` c") == 'a <code class="inline">&lt;b&gt; &amp;</code> c'
    assert md("Before\n```\nx = *1*\n<y>\n```\nAfter") == 'Before<pre class="code">x = *1*\n&lt;y&gt;</pre>After'


def test_mrkdwn_links_mentions_and_dates() -> None:
    assert md("<https://example.com/a?b=1&amp;c=2|the *docs*>") == (
        '<a href="https://example.com/a?b=1&amp;c=2">the *docs*</a>'
    )
    assert md("see <https://example.com>") == 'see <a href="https://example.com">https://example.com</a>'
    assert md("<@U0ALICE>") == '<span class="mention">@alice</span>'
    assert md("<@U024BE7LH>") == '<span class="mention">@U024BE7LH</span>'
    assert md("<@U024BE7LH>", U024BE7LH="Bob & Co") == '<span class="mention">@Bob &amp; Co</span>'
    assert md("<@U024BE7LH|bob>") == '<span class="mention">@bob</span>'
    assert md("<!subteam^S0ONCALL>") == '<span class="mention">@oncall</span>'
    assert md("<#C0DEPLOY>") == '<span class="mention">#deploy</span>'
    assert md("<!here>") == '<span class="mention broadcast">@here</span>'
    assert md("<!date^1767258300^{date_short_pretty} at {time}|2026-01-01 09:05 UTC>") == "Jan 1, 2026 at 9:05 AM"
    assert md("<!date^1767258300^{date_long}|x>") == "Thursday, January 1st, 2026"
    assert md("<!date^1767258300^{ago}|2026-01-01 09:05 UTC>") == "2026-01-01 09:05 UTC"


def test_mrkdwn_entities_newlines_quotes_and_emoji() -> None:
    assert md("a &lt; b &amp;&amp; c &gt; d") == "a &lt; b &amp;&amp; c &gt; d"
    assert md("&amp;lt; is how you write &lt;") == "&amp;lt; is how you write &lt;"
    assert md("&quot;quoted&quot; & 'single'") == "&amp;quot;quoted&amp;quot; &amp; &#x27;single&#x27;"
    assert md("one\ntwo\n\nthree") == 'one<br>two<span class="paragraph-break"></span>three'
    assert md("&gt; quoted\n&gt; more\nafter") == "<blockquote>quoted<br>more</blockquote>after"
    assert md(":white_check_mark: done :not_an_emoji:") == preview.EMOJI["white_check_mark"] + " done :not_an_emoji:"
