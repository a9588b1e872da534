"""Taking an incoming mail apart without letting it hurt the watcher: parsing with bounds, and finding its bodies."""

from __future__ import annotations

import re
from email import policy
from email.message import Message
from email.parser import BytesHeaderParser, BytesParser

from bot.email.html_text import MAX_HTML_CHARS

MAX_MIME_DEPTH = 10
MAX_MIME_PARTS = 200
MAX_MAIL_BYTES = 25 * 1024 * 1024
_CONTENT_TYPE_LINE = re.compile(rb"^content-type:", re.IGNORECASE | re.MULTILINE)


def parse_mail(raw: bytes) -> Message:
    """Parse an incoming mail without letting it hurt the watcher; never raises.

    The standard parser recurses once per MIME level, so a mail with hundreds of parts (a MIME bomb) is parsed for
    its headers only, as is one the parser chokes on. Mail past MAX_MAIL_BYTES is cut (no answer is that long).
    """
    raw = raw[:MAX_MAIL_BYTES]
    headers_only = BytesHeaderParser(policy=policy.default)
    if len(_CONTENT_TYPE_LINE.findall(raw, 0, MAX_MAIL_BYTES)) > MAX_MIME_PARTS:
        return headers_only.parsebytes(raw)
    try:
        return BytesParser(policy=policy.default).parsebytes(raw)
    except Exception:  # RecursionError included: the parser recursed too deep
        try:
            return headers_only.parsebytes(raw)
        except Exception:
            return Message(policy=policy.default)


def reply_bodies(message: Message) -> tuple[str, str | None]:
    """The first text/plain and text/html bodies of a mail that are not attachments: `(text, html)`.

    Walks at most MAX_MIME_DEPTH levels and MAX_MIME_PARTS parts (a MIME bomb is not read to its end), decodes with
    the declared charset and falls back to UTF-8 with replacement for a missing or bogus one. Never raises.
    """
    found: dict[str, str] = {}
    stack: list[tuple[Message, int]] = [(message, 0)]
    seen = 0
    while stack and seen < MAX_MIME_PARTS and len(found) < 2:
        part, depth = stack.pop()
        seen += 1
        try:
            if part.is_multipart():
                children = part.get_payload()
                if depth < MAX_MIME_DEPTH and isinstance(children, list):
                    stack.extend((child, depth + 1) for child in reversed(children) if isinstance(child, Message))
                continue
            kind = part.get_content_type()
            if kind not in ("text/plain", "text/html") or kind in found or _is_attachment(part):
                continue
            found[kind] = _decode(part)
        except Exception:  # one unreadable part must not hide the others
            continue
    return found.get("text/plain", ""), found.get("text/html")


def _is_attachment(part: Message) -> bool:
    try:
        return (part.get_content_disposition() or "") == "attachment"
    except Exception:
        return False


def _decode(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        raw = part.get_payload()
        return raw if isinstance(raw, str) else ""
    payload = payload[: MAX_HTML_CHARS * 4]
    charset = "utf-8"
    try:
        charset = part.get_content_charset() or "utf-8"
        return payload.decode(charset, errors="replace")
    except (LookupError, UnicodeError, ValueError, TypeError):
        return payload.decode("utf-8", errors="replace")
