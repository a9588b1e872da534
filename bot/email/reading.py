"""Reading a reply: the text the person wrote, without quoted history, forwarded mail, header blocks, signatures or
"Sent from my …" lines.

Built in layers, each for what the one before misses:

1. HTML-only replies become text with `html2text`, which keeps a `<blockquote>` as `>` lines.
2. Lines quoted with `>` are history wherever they are (top-posting, bottom-posting, interleaved).
3. Quote headers ("On … wrote:") in many languages, recognised both by our own patterns (wrapped over up to three
   lines, any language that ends in a "wrote" verb and names a date or an address) and by `mail-parser-reply`'s
   per-language header patterns. A header followed by `>` lines only opens that quote (the reply may continue
   below it); a header followed by unquoted text means everything below it is history.
4. Outlook header blocks (`From:`/`*From:*`/`De :`/`Von:` followed by `Sent:`/`Date:`/`To:`/…), separator lines,
   forwarded-message markers, signature delimiters (`-- `), "Sent from my …" lines and closing blocks
   ("Thanks,\\nAlice") end the new text.
5. What no generic library can do: the bot knows what it sent (`sent`), so runs of lines that repeat it are history
   even when the client marked them in no way at all.
"""

# ruff: noqa: RUF001 (the patterns are in many languages and scripts on purpose)

from __future__ import annotations

import re
import textwrap
import unicodedata
from collections.abc import Iterable
from email import policy
from email.message import Message
from email.parser import BytesHeaderParser, BytesParser
from functools import cache

import html2text
from mailparser_reply.parser import EmailMessage as _ReplyParserMessage

MAX_TEXT_CHARS = 100_000
"""A human answer is short; the rest of a huge mail is history or junk, and regexes should not chew on megabytes."""
MAX_HTML_CHARS = 1_000_000
_MAX_HEADER_LINE = 1_000

# Languages whose header patterns we take from mail-parser-reply. Polish is left out: its "From" pattern accepts a
# single line beginning with "Data:" or "Do:", which would cut ordinary answers.
_LIBRARY_LANGUAGES = ("en", "de", "fr", "es", "it", "nl", "sv", "da", "cs", "ja", "ko", "zh")

_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)

_WROTE_VERB = (
    r"(?:^|[\s,)>])(?:wrote|writes|schrieb|a\s+[ée]crit|escribi[óo]|ha\s+scritto|schreef|escreveu|skrev|kirjoitti|"
    r"napsal(?:\(a\))?|napisa[łl](?:\(a\)|a)?|написал(?:\(а\)|а)?|yazd[ıi]|έγραψε|写道|寫道)"
)
_WROTE = re.compile(_WROTE_VERB + r"\s*:\s*$", re.IGNORECASE)
# German and Dutch put the writer after the verb ("Am … schrieb Bob <bob@x>:"); only trusted after an opener word.
_WROTE_THEN_WHO = re.compile(_WROTE_VERB + r"\s[^:]{1,160}:\s*$", re.IGNORECASE)
_HEADER_OPENER = re.compile(
    r"^(?:On|Am|Le|El|Il|Op|Em|Den|Dne|Dnia|W\s+dniu|P[åa]|В|Στις|\d{1,4}[./\-年])(?:\s|$|[,.])", re.IGNORECASE
)
_DATE_OR_ADDRESS = re.compile(r"\d|@")

_FROM_WORDS = r"From|Von|De|Da|Van|Från|Fra|Od|От|Feladó|Lähettäjä|发件人|寄件者|差出人|보낸\s?사람"
_HEADER_WORDS = (
    r"Sent|Date|To|Subject|Cc|Gesendet|Datum|An|Betreff|Envoy[ée]|À|A|Objet|Enviado|Fecha|Para|Asunto|Inviato|Data|"
    r"Oggetto|Verzonden|Aan|Onderwerp|Skickat|Till|Ämne|Sendt|Til|Emne|Wysłano|Do|Temat|Отправлено|Дата|Кому|Тема|"
    r"Elküldve|Címzett|Tárgy|Lähetetty|Vastaanottaja|Aihe|发送时间|收件人|主题|日期|寄件日期|收件者|主旨|送信日時|宛先|"
    r"件名|날짜|받는\s?사람|제목|Reply-To|Antwort an|Répondre à|Importance|Priorit[yé]"
)
_FROM_LINE = re.compile(rf"^[*_\s]*(?:{_FROM_WORDS})[*_]*\s*:", re.IGNORECASE)
_HEADER_LINE = re.compile(rf"^[*_\s]*(?:{_HEADER_WORDS})[*_]*\s*:", re.IGNORECASE)

_SEPARATOR = re.compile(
    r"^(?:_{10,}|-{32,}|={32,}|"
    r"-*\s*(?:Original\s+Message|Forwarded\s+message|Ursprüngliche\s+Nachricht|Weitergeleitete\s+Nachricht|"
    r"Message\s+d'origine|Message\s+transf[ée]r[ée]|Mensaje\s+original|Mensaje\s+reenviado|Messaggio\s+originale|"
    r"Messaggio\s+inoltrato|Oorspronkelijk\s+bericht|Doorgestuurd\s+bericht|Ursprungligt\s+meddelande|"
    r"Vidarebefordrat\s+meddelande|Oprindelig\s+meddelelse|Videresendt\s+meddelelse|Mensagem\s+original|"
    r"Mensagem\s+encaminhada|Исходное\s+сообщение|Пересылаемое\s+сообщение|Wiadomość\s+oryginalna|"
    r"Przekazana\s+wiadomość|原始邮件|转发的邮件)\s*-*|"
    r"Begin\s+forwarded\s+message\s*:|Anfang\s+der\s+weitergeleiteten\s+Nachricht\s*:|"
    r"D[ée]but\s+du\s+message\s+r[ée]exp[ée]di[ée]\s*:|Inicio\s+del\s+mensaje\s+reenviado\s*:)\s*$",
    re.IGNORECASE,
)
_SIGNATURE_DELIMITER = re.compile(r"^--\s*$")
_SENT_FROM = re.compile(
    r"^(?:Sent\s+from\s+(?:my\s|Mail\s|Outlook|Yahoo|Gmail|AOL|Proton)|Sent\s+(?:via|with)\s|Get\s+Outlook\s+for\s|"
    r"Envoy[ée]\s+(?:de\s+mon|depuis)\s|Von\s+meinem\s.{1,40}\sgesendet|Gesendet\s+(?:von|mit|vom)\s|"
    r"Enviado\s+(?:desde|do|de)\s|Inviato\s+da\s|Verzonden\s+(?:vanaf|met)\s|Verstuurd\s+vanaf\s|"
    r"Skickat\s+från\s|Sendt\s+fra\s|Wysłano\s+z\s|Odesláno\s+z\s|Отправлено\s+(?:с|из)\s|从我的.{1,20}发送)",
    re.IGNORECASE,
)
_CLOSING = re.compile(
    r"^(?:thanks(?:\s+(?:again|a\s+lot|so\s+much))?|thank\s+you|many\s+thanks|cheers|best|all\s+the\s+best|"
    r"(?:best|kind|warm|warmest)\s+regards|regards|br|thx|ty|"
    r"mit\s+freundlichen\s+grü(?:ß|ss)en|(?:viele|beste|liebe|herzliche)\s+grü(?:ß|ss)e|grü(?:ß|ss)e|gru(?:ß|ss)|"
    r"mfg|lg|vg|danke|cordialement|bien\s+(?:à\s+vous|cordialement)|merci(?:\s+beaucoup)?|salutations|"
    r"saludos|un\s+saludo|atentamente|gracias|cordiali\s+saluti|saluti|grazie|"
    r"met\s+vriendelijke\s+groet(?:en)?|groeten|bedankt|med\s+vänliga\s+hälsningar|hälsningar|tack|mvh|"
    r"med\s+venlig\s+hilsen|hilsen|s\s+pozdravem|pozdrawiam|с\s+уважением|спасибо)[\s,.!]*$",
    re.IGNORECASE,
)
_CLOSING_TAIL_LINES = 4
_CLOSING_TAIL_WIDTH = 60
_DECORATION = re.compile(r"^[\s*_\-=~#|.·•]*$")
_ECHO_STRIP = re.compile(r"[>*_#|`\u2022·\s]+")
_STRONG_ECHO = 12
_LONE_ECHO = 25


def new_text(text: str, *, html: str | None = None, sent: str | None = None) -> str:
    """The new text of a reply: what the person wrote, without quoted history and the like.

    `text` is the reply's text/plain body (may be empty); `html` its text/html body, used when the text is empty.
    `sent` is the plain text the bot sent in that thread: lines that repeat it are history. Never raises.
    """
    body = text if text.strip() else html_to_text(html) if html else ""
    lines = _normalise(body[:MAX_TEXT_CHARS])
    lines = _strip_history(lines)
    if sent:
        lines = _drop_echo(lines, sent)
    lines = _drop_closing(lines)
    return _tidy(lines)


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


def html_to_text(html: str) -> str:
    """Text of an HTML mail body, with `<blockquote>` kept as `>` lines; never raises."""
    converter = html2text.HTML2Text()
    converter.body_width = 0
    converter.ignore_links = True
    converter.ignore_images = True
    converter.ignore_emphasis = True
    converter.ignore_tables = True
    converter.unicode_snob = True
    converter.ul_item_mark = "-"
    converter.single_line_break = False
    try:
        converted = converter.handle(html[:MAX_HTML_CHARS])
    except Exception:  # html2text is lenient, but a mail is untrusted input: never let it stop the watcher
        return ""
    return _unescape_markdown(converted)


def _unescape_markdown(text: str) -> str:
    # html2text escapes what Markdown would read as syntax ("1\\. ", "\\- ", "\\+ ", "\\\\"); a reply is not Markdown.
    text = re.sub(r"^(\s*(?:>\s*)*\d+)\\\.", r"\1.", text, flags=re.MULTILINE)
    text = re.sub(r"^(\s*(?:>\s*)*)\\([-+])", r"\1\2", text, flags=re.MULTILINE)
    return re.sub(r"\\([\\`*_{}\[\]()#+\-.!])", r"\1", text)


def _normalise(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_INVISIBLE)
    text = text.replace("\u00a0", " ").replace("\u202f", " ")
    return [line.rstrip() for line in text.split("\n")]


def _is_quoted(line: str) -> bool:
    return line.lstrip().startswith(">")


def _strip_history(lines: list[str]) -> list[str]:
    """Drop `>` lines and quote headers that open them; stop at the first mark of history that runs to the end."""
    library = _library_headers(lines)
    kept: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if _is_quoted(line):
            index += 1
            continue
        if (
            _SEPARATOR.match(stripped)
            or _SIGNATURE_DELIMITER.match(line)
            or _SENT_FROM.match(stripped)
            or _header_block_at(lines, index)
        ):
            break
        span = _wrote_header_span(lines, index) or library.get(index, 0)
        if span:
            after = _next_content(lines, index + span)
            if after is not None and _is_quoted(lines[after]):
                index += span  # the header opens a `>` quote; a bottom-posted answer may follow it
                continue
            break
        kept.append(line)
        index += 1
    return kept


def _next_content(lines: list[str], start: int) -> int | None:
    return next((i for i in range(start, len(lines)) if lines[i].strip()), None)


def _wrote_header_span(lines: list[str], index: int) -> int:
    """How many lines (1-3) the "On <date>, <who> wrote:" header starting at `index` spans; 0 if there is none."""
    first = lines[index].strip()
    if not first or len(first) > _MAX_HEADER_LINE:
        return 0
    joined = first
    for span in range(1, 4):
        if span > 1:
            if index + span - 1 >= len(lines) or not _HEADER_OPENER.match(first):
                return 0
            following = lines[index + span - 1].strip()
            if not following or _is_quoted(following) or len(following) > _MAX_HEADER_LINE:
                return 0
            joined = f"{joined} {following}"
        verb = _WROTE.search(joined) or (_HEADER_OPENER.match(first) and _WROTE_THEN_WHO.search(joined))
        if verb and _DATE_OR_ADDRESS.search(joined):
            return span
    return 0


def _header_block_at(lines: list[str], index: int) -> bool:
    """An Outlook-style block: a From line followed (within the next four lines) by another header line."""
    if not _FROM_LINE.match(lines[index]):
        return False
    following = [line for line in lines[index + 1 : index + 5] if line.strip()]
    return any(_HEADER_LINE.match(line) for line in following[:3])


@cache
def _library_pattern() -> re.Pattern[str]:
    return _ReplyParserMessage(text="", languages=list(_LIBRARY_LANGUAGES)).HEADER_REGEX


def _library_headers(lines: list[str]) -> dict[int, int]:
    """Header lines found by mail-parser-reply's patterns: {first line: number of lines}, unquoted ones only.

    It matches on stripped lines; overlong lines are cut first (no header is that long, and its patterns
    backtrack on them).
    """
    shortened = [line.strip()[:_MAX_HEADER_LINE] for line in lines]
    text = "\n".join(shortened)
    found: dict[int, int] = {}
    try:
        matches = list(_library_pattern().finditer(text))
    except Exception:
        return found
    for match in matches:
        start = match.start() + (len(match.group()) - len(match.group().lstrip("\n")))
        first = text.count("\n", 0, start)
        if first >= len(shortened) or _is_quoted(shortened[first]) or not shortened[first]:
            continue
        span = match.group().strip("\n").count("\n") + 1
        found.setdefault(first, span)
    return found


def _echo_key(line: str) -> str:
    return " ".join(_ECHO_STRIP.sub(" ", unicodedata.normalize("NFKC", line)).split()).casefold()


def _drop_echo(lines: list[str], sent: str) -> list[str]:
    """Remove runs of lines that repeat what the bot sent: history quoted without any marker.

    A run starts and ends on a "strong" line (long enough not to be a coincidence, found in the sent text, even
    re-wrapped); short lines in between count when they equal a sent line. A run needs two strong lines, or one long
    one, so that an answer like "2" or "Postgres" is never mistaken for an echo.
    """
    sent_lines = {key for line in sent.splitlines() if (key := _echo_key(line))}
    blob = " ".join(_echo_key(line) for line in sent.splitlines())
    keys = [_echo_key(line) for line in lines]

    def strong(key: str) -> bool:
        return len(key) >= _STRONG_ECHO and (key in sent_lines or key in blob)

    def weak(key: str) -> bool:
        return not key or key in sent_lines

    drop: set[int] = set()
    index = 0
    while index < len(lines):
        if not strong(keys[index]):
            index += 1
            continue
        end = last_strong = index
        strong_count, longest = 0, 0
        while end < len(lines) and (strong(keys[end]) or weak(keys[end])):
            if strong(keys[end]):
                last_strong = end
                strong_count += 1
                longest = max(longest, len(keys[end]))
            end += 1
        if strong_count >= 2 or longest >= _LONE_ECHO:
            drop.update(range(index, last_strong + 1))
        index = last_strong + 1
    return [line for i, line in enumerate(lines) if i not in drop]


def _drop_closing(lines: list[str]) -> list[str]:
    """Cut a closing ("Thanks,", "Best regards,") followed only by a few short lines (a name, a title)."""
    content = [i for i, line in enumerate(lines) if line.strip()]
    for position, index in enumerate(content[1:], start=1):
        if not _CLOSING.match(lines[index].strip()):
            continue
        tail = content[position + 1 :]
        if len(tail) <= _CLOSING_TAIL_LINES and all(len(lines[i].strip()) <= _CLOSING_TAIL_WIDTH for i in tail):
            return lines[:index]
    return lines


def _tidy(lines: Iterable[str]) -> str:
    kept = list(lines)
    while kept and _DECORATION.match(kept[-1]):
        kept.pop()
    while kept and _DECORATION.match(kept[0]):
        kept.pop(0)
    text = textwrap.dedent("\n".join(kept))
    return re.sub(r"\n{3,}", "\n\n", text).strip()
