"""The text of an HTML mail body, line by line as the person saw it, with quoted history marked or cut.

Mail clients mark history in their HTML more reliably than in their text: Gmail's `gmail_quote`, Apple Mail's and
Thunderbird's `<blockquote type="cite">`, Outlook's `divRplyFwdMsg` and the border-top header `<div>`, Yahoo's
`yahoo_quoted`, Proton's `protonmail_quote`, Zoho's `zmail_extra`, Thunderbird's forward container. A `<blockquote>`
becomes `>` lines (an answer may sit between two of them); a container that holds only history (and everything
after it) is cut off.

A small renderer on the standard library's streaming HTML parser rather than a Markdown converter: one line per
`<div>` and `<br>` as the person typed them, no Markdown escapes, and a quote depth kept as a counter, so that
thousands of nested `<blockquote>`s cost nothing (a Markdown converter repeats the `>` prefix per level).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

MAX_HTML_CHARS = 1_000_000
"""A human answer is short; the rest of a huge HTML body is history or junk."""

_SKIPPED = frozenset({"head", "style", "script", "title", "template", "noscript", "xml"})
_BLOCKS = frozenset(
    {
        "div",
        "p",
        "ul",
        "ol",
        "li",
        "table",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "pre",
        "hr",
        "blockquote",
        "section",
        "article",
        "header",
        "footer",
        "center",
        "address",
        "dl",
        "dt",
        "dd",
        "body",
    }
)
_VOID = frozenset({"br", "hr", "img", "meta", "link", "input", "col", "area", "base", "wbr", "source"})

_HISTORY_IDS = re.compile(r"^(?:x_)?(?:divRplyFwdMsg|appendonsend|ms-outlook-mobile-signature|stopSpelling)$", re.I)
_HISTORY_CLASSES = re.compile(
    r"(?:^|\s)(?:x_)?(?:moz-forward-container|moz-signature|yahoo_quoted|protonmail_quote|"
    r"protonmail_signature_block|zmail_extra_hr|zmail_extra|gmail_signature|OutlookMessageHeader)(?:\s|$)",
    re.IGNORECASE,
)
# Outlook's header block: `<div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm">`.
_OUTLOOK_HEADER_STYLE = re.compile(r"border-top:\s*solid\s+#(?:E1E1E1|B5C4DF)[^;]{0,20};\s*padding:\s*3\.0pt", re.I)
_SPACES = re.compile(r"[ \t\r\n\f]+")
MAX_TAG_CHARS = 10_000
"""A `<` with no `>` within this many characters is text, not a tag (the standard parser rescans unclosed tags)."""


class _Renderer(HTMLParser):
    def __init__(self, *, cut_history: bool = True) -> None:
        super().__init__(convert_charrefs=True)
        self.cut_history = cut_history
        self.lines: list[str] = []
        self.current: list[str] = []
        self.current_has_text = False
        self.current_quoted = False
        self.quote_depth = 0
        self.skip_depth = 0
        self.pre_depth = 0
        self.lists: list[list[int]] = []  # one entry per open <ul>/<ol>: [next number] or [] for bullets
        self.cut = False

    # --- output -----------------------------------------------------------------------------------------------------

    def _flush(self, *, keep_empty: bool = False) -> None:
        text = "".join(self.current).strip()
        if text or keep_empty:
            quoted = self.current_quoted if text else self.quote_depth > 0
            self.lines.append(("> " + text if text else ">") if quoted else text)
        self.current = []
        self.current_has_text = False

    def _blank(self) -> None:
        self._flush()
        if self.lines and self.lines[-1] not in ("", ">"):
            self.lines.append(">" if self.quote_depth else "")

    def _write(self, text: str) -> None:
        if not self.current_has_text:
            self.current_quoted = self.quote_depth > 0  # a line is quoted when its first text is
            self.current_has_text = not text.isspace() and bool(text)
        self.current.append(text)

    # --- parser events ------------------------------------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.cut:
            return
        if tag in _SKIPPED:
            self.skip_depth += 1
            return
        if self.cut_history and _is_history(attrs):
            self._flush()
            self.cut = True
            return
        if tag == "br":
            self._flush(keep_empty=True)
        elif tag == "p":
            self._blank() if not _is_outlook_paragraph(attrs) else self._flush()
        elif tag in _BLOCKS:
            self._flush()
            self._open_block(tag)
        elif tag in ("td", "th") and self.current:
            self._write(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def _open_block(self, tag: str) -> None:
        if tag == "blockquote":
            self.quote_depth += 1
        elif tag == "pre":
            self.pre_depth += 1
        elif tag == "ul":
            self.lists.append([])
        elif tag == "ol":
            self.lists.append([1])
        elif tag == "li":
            marker = "- "
            if self.lists and self.lists[-1]:
                marker = f"{self.lists[-1][0]}. "
                self.lists[-1][0] += 1
            self._write(marker)

    def handle_endtag(self, tag: str) -> None:
        if self.cut:
            return
        if tag in _SKIPPED:
            self.skip_depth = max(0, self.skip_depth - 1)
            return
        if tag == "p":
            self._blank()
        elif tag in _BLOCKS:
            self._flush()
            if tag == "blockquote":
                self.quote_depth = max(0, self.quote_depth - 1)
            elif tag == "pre":
                self.pre_depth = max(0, self.pre_depth - 1)
            elif tag in ("ul", "ol") and self.lists:
                self.lists.pop()

    def handle_data(self, data: str) -> None:
        if self.cut or self.skip_depth:
            return
        if self.pre_depth:
            first, *rest = data.split("\n")
            self._write(first)
            for line in rest:
                self._flush(keep_empty=True)
                self._write(line)
            return
        self._write(_SPACES.sub(" ", data))

    def text(self) -> str:
        self._flush()
        return "\n".join(self.lines)


def _is_history(attrs: list[tuple[str, str | None]]) -> bool:
    for name, value in attrs:
        if not value:
            continue
        if name == "id" and _HISTORY_IDS.match(value):
            return True
        if name == "class" and _HISTORY_CLASSES.search(value):
            return True
        if name == "style" and _OUTLOOK_HEADER_STYLE.search(value):
            return True
    return False


def _is_outlook_paragraph(attrs: list[tuple[str, str | None]]) -> bool:
    # Word's HTML makes every line a <p class="MsoNormal">; its empty lines are paragraphs holding an &nbsp;.
    return any(name == "class" and value and "msonormal" in value.lower() for name, value in attrs)


def html_to_text(html: str, *, cut_history: bool = True) -> str:
    """Text of an HTML mail body: `<blockquote>` as `>` lines, history containers and what follows them cut off
    (unless `cut_history` is false: the benchmark renders mail for other readers that way).

    Never raises; returns "" for HTML the parser cannot read at all.
    """
    renderer = _Renderer(cut_history=cut_history)
    try:
        renderer.feed(_bounded_tags(html[:MAX_HTML_CHARS]))
        renderer.close()
    except Exception:  # the standard parser is lenient, but a mail is untrusted input: never stop the watcher
        return ""
    return renderer.text()


def _bounded_tags(html: str) -> str:
    """Escape every `<` that no `>` closes within MAX_TAG_CHARS, in one pass.

    Python's HTMLParser (before the fixes of 2025) rescans from an unclosed `<` on every step, which is quadratic on
    input like `<div <div <div …`; a real tag is never that long.
    """
    parts = html.split(">")
    last = len(parts) - 1
    for index, part in enumerate(parts):
        if "<" not in part:
            continue
        head, _, tag = part.rpartition("<")
        head = head.replace("<", "&lt;")
        if index == last and tag[:1].isalpha() and len(tag) <= MAX_TAG_CHARS:
            parts[index] = head  # a tag cut off by the end of the mail: browsers drop it
        elif index < last and len(tag) <= MAX_TAG_CHARS:
            parts[index] = f"{head}<{tag}"
        else:
            parts[index] = f"{head}&lt;{tag}"
    return ">".join(parts)
