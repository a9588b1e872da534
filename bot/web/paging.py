"""The inbox in pages: however many questions wait, the page says how many, and links reach the oldest.

Pages hold the newest questions first, so page 1 is where new ones appear live; plain links, so they work without
JavaScript.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

PAGE_SIZE = 100
"""Questions on one page: enough to work through, small enough that the page stays quick with thousands waiting."""


@dataclass(frozen=True)
class Page:
    """Which part of the waiting questions the inbox shows: page `number` (from 1, newest first) of `size` each, out
    of `waiting` in all."""

    waiting: int
    number: int = 1
    size: int = PAGE_SIZE
    mine: bool = False
    """Pages of "Waiting for you" (`?mine=1`): the links between them keep to the person's questions."""

    @classmethod
    def at(cls, waiting: int, requested: str | None, size: int = PAGE_SIZE, *, mine: bool = False) -> Page:
        """The page `?page=` asks for: the first for anything but a number, the last for one beyond it."""
        number = 1
        if requested is not None and requested.isascii() and requested.isdecimal():
            number = int(requested) if len(requested) <= 9 else 10**9
        count = max(1, -(-waiting // size))
        return cls(waiting, min(max(number, 1), count), size, mine)

    @property
    def count(self) -> int:
        return max(1, -(-self.waiting // self.size))

    @property
    def first_shown(self) -> int:
        return (self.number - 1) * self.size + 1

    @property
    def last_shown(self) -> int:
        return min(self.waiting, self.number * self.size)


def page_path(number: int, *, mine: bool = False) -> str:
    if mine:
        return "/?mine=1" if number <= 1 else f"/?mine=1&amp;page={number}"
    return "/" if number <= 1 else f"/?page={number}"


def render_pager(page: Page, label: str) -> str:
    """Links to the other pages, the oldest questions included; nothing when all fit on one."""
    if page.count <= 1:
        return ""
    links: list[str] = []
    if page.number > 1:
        links.append(f'<a href="{page_path(1, mine=page.mine)}">Newest</a>')
        links.append(f'<a href="{page_path(page.number - 1, mine=page.mine)}" rel="prev">Newer</a>')
    links.append(
        f'<span class="page-of" aria-current="page">Page {page.number:,} of {page.count:,}: questions '
        f"{page.first_shown:,} to {page.last_shown:,}, newest first</span>"
    )
    if page.number < page.count:
        links.append(f'<a href="{page_path(page.number + 1, mine=page.mine)}" rel="next">Older</a>')
        links.append(f'<a href="{page_path(page.count, mine=page.mine)}">Oldest</a>')
    return f'<nav class="pages" aria-label="{escape(label)}">{"".join(links)}</nav>'
