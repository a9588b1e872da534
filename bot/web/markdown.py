"""The plan under review, as HTML: markdown-it renders it with raw HTML off, nh3 sanitises what comes out.

Two layers on purpose: markdown-it escapes any HTML the agent writes, and nh3 (an allow-list sanitiser) strips
whatever a renderer bug or a future option might let through. Images are dropped: the page loads nothing from
elsewhere, and the Content-Security-Policy would block them anyway. markdown-it is loaded on the first plan shown,
not when `serve` starts (it is a good part of the web inbox's import time).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import nh3

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


@cache
def _renderer() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
        ["table", "strikethrough"]
    )


_TAGS = {
    "a",
    "blockquote",
    "br",
    "code",
    "del",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "li",
    "ol",
    "p",
    "pre",
    "s",
    "strong",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
}
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}


def render_markdown(text: str) -> str:
    """Safe HTML for `text` read as CommonMark (with tables): links only to http, https and mailto."""
    return nh3.clean(
        _renderer().render(text),
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
