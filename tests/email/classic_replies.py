"""The first replies written for the reader, as real mail clients write them: (name, text, html, expected new text).

Each reply answers the mail in `samples.SENT` (one question) or `samples.SENT_THREE` (three questions) and quotes it
the way its client does. They are short enough to go through the live Dovecot test one by one; the larger corpus with
languages and clients is in `corpus/`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .samples import SENT, SENT_THREE, quoted, wrapped

GMAIL_HEADER = "On Tue, Dec 2, 2026 at 10:15 AM handraise <bot+abcdefghijklmnopqrst@example.org> wrote:"
OUTLOOK_CLASSIC = (
    "From: handraise <bot@example.org>\n"
    "Sent: Tuesday, December 2, 2026 10:15 AM\n"
    "To: Alice Example <alice@example.org>\n"
    "Subject: [handraise] Database [#abcdefghijklmnopqrst]"
)
OUTLOOK_STARRED = (
    "*From:* handraise <bot@example.org>\n"
    "*Sent:* Tuesday, December 2, 2026 10:15 AM\n"
    "*To:* Alice Example <alice@example.org>\n"
    "*Subject:* [handraise] Database [#abcdefghijklmnopqrst]"
)
OUTLOOK_MAC = (
    "From: handraise <bot@example.org>\n"
    "Date: Tuesday, 2 December 2026 at 10:15\n"
    "To: Alice Example <alice@example.org>\n"
    "Subject: [handraise] Database [#abcdefghijklmnopqrst]"
)
SENT_HTML = "".join(f"<div>{line or '<br>'}</div>" for line in SENT.splitlines())


@dataclass(frozen=True)
class Reply:
    name: str
    text: str
    expected: str
    html: str | None = None
    sent: str = SENT
    client: str = "various"
    language: str = "en"
    features: tuple[str, ...] = ()
    miss: str | None = None
    """Why the reader is known to get this reply wrong (the corpus test then expects it to fail)."""


CORPUS: list[Reply] = [
    Reply("gmail top-posted", f"2\n\n{GMAIL_HEADER}\n\n{quoted(SENT)}\n", "2"),
    Reply(
        "gmail with the header wrapped over two lines",
        "Postgres please\n\nOn Tue, Dec 2, 2026 at 10:15 AM handraise <\nbot+abcdefghijklmnopqrst@example.org> wrote:"
        f"\n\n{quoted(SENT)}\n",
        "Postgres please",
    ),
    Reply(
        "outlook classic with Original Message",
        f"Let's go with SQLite.\n\n-----Original Message-----\n{OUTLOOK_CLASSIC}\n\n{SENT}",
        "Let's go with SQLite.",
    ),
    Reply(
        "outlook web with an underscore line",
        f"1\r\n\r\n________________________________\r\n{OUTLOOK_CLASSIC}\r\n\r\n{SENT}".replace("\n", "\r\n"),
        "1",
    ),
    Reply("outlook with starred headers", f"option 2\n\n{OUTLOOK_STARRED}\n\n{SENT}", "option 2"),
    Reply("outlook for mac with From and Date", f"#3\n\n{OUTLOOK_MAC}\n\n{SENT}", "#3"),
    Reply(
        "apple mail",
        f"SQLite, it is simplest.\n\n> On 2 Dec 2026, at 10:15, handraise <bot@example.org> wrote:\n>\n{quoted(SENT)}",
        "SQLite, it is simplest.",
    ),
    Reply(
        "apple mail with an unquoted header",
        f"Postgres\n\nOn 2 Dec 2026, at 10:15, handraise <bot@example.org> wrote:\n\n{quoted(SENT)}",
        "Postgres",
    ),
    Reply(
        "ios sent from my iphone",
        f"2\n\nSent from my iPhone\n\n> On Dec 2, 2026, at 10:15 AM, handraise <bot@example.org> wrote:\n>\n"
        f"{quoted(SENT)}",
        "2",
    ),
    Reply("android and outlook mobile footers", "1\n\nGet Outlook for Android\n", "1"),
    Reply(
        "german gmail",
        f"Ja, Nummer 2.\n\nAm Di., 2. Dez. 2026 um 10:15 Uhr schrieb handraise <bot@example.org>:\n\n{quoted(SENT)}",
        "Ja, Nummer 2.",
    ),
    Reply(
        "german outlook",
        "1\n\nVon: handraise <bot@example.org>\nGesendet: Dienstag, 2. Dezember 2026 10:15\nAn: Alice\n"
        f"Betreff: [handraise] Database\n\n{SENT}",
        "1",
    ),
    Reply("german iphone", f"Postgres\n\nVon meinem iPhone gesendet\n\n{quoted(SENT)}", "Postgres"),
    Reply(
        "french gmail",
        f"Je prends la 2.\n\nLe mar. 2 déc. 2026 à 10:15, handraise <bot@example.org> a écrit :\n\n{quoted(SENT)}",
        "Je prends la 2.",
    ),
    Reply(
        "french outlook",
        "MySQL\n\nDe : handraise <bot@example.org>\nEnvoyé : mardi 2 décembre 2026 10:15\nÀ : Alice\n"
        f"Objet : [handraise] Database\n\n{SENT}",
        "MySQL",
    ),
    Reply(
        "spanish gmail",
        f"La 1.\n\nEl mar, 2 dic 2026 a las 10:15, handraise (<bot@example.org>) escribió:\n\n{quoted(SENT)}",
        "La 1.",
    ),
    Reply(
        "dutch gmail",
        f"2\n\nOp di 2 dec. 2026 om 10:15 schreef handraise <bot@example.org>:\n\n{quoted(SENT)}",
        "2",
    ),
    Reply(
        "italian gmail",
        f"SQLite\n\nIl giorno mar 2 dic 2026 alle ore 10:15 handraise <bot@example.org> ha scritto:\n\n{quoted(SENT)}",
        "SQLite",
    ),
    Reply(
        "japanese gmail",
        f"2\n\n2026年12月2日(火) 10:15 handraise <bot@example.org>:\n\n{quoted(SENT)}",
        "2",
    ),
    Reply(
        "yahoo",
        "Postgres\n\nOn Tuesday, December 2, 2026 at 10:15:00 AM GMT+1, handraise <bot@example.org> wrote:\n\n"
        f"{quoted(SENT)}",
        "Postgres",
    ),
    Reply("thunderbird", f"3\n\nOn 02/12/2026 10:15, handraise wrote:\n{quoted(SENT)}", "3"),
    Reply("bottom-posted", f"{GMAIL_HEADER}\n{quoted(SENT)}\n\nSQLite\n", "SQLite"),
    Reply(
        "interleaved",
        "> Which database should the new service use?\nPostgres, as usual.\n> Or write your own answer.\nThanks!",
        "Postgres, as usual.",
    ),
    Reply(
        "forwarded with a comment",
        f"Can you take this one?\n\n---------- Forwarded message ---------\n{OUTLOOK_CLASSIC}\n\n{SENT}",
        "Can you take this one?",
    ),
    Reply("apple forwarded", f"FYI\n\nBegin forwarded message:\n\n{OUTLOOK_CLASSIC}\n\n{SENT}", "FYI"),
    Reply("quoted tail without a header", f"1\n\n{quoted(SENT)}", "1"),
    Reply("nested quotes", f"2\n\n{GMAIL_HEADER}\n{quoted(quoted(SENT))}", "2"),
    Reply(
        "signature delimiter", "Postgres\n\n-- \nAlice Example\nStaff Engineer, Example Ltd\n+1 555 0100", "Postgres"
    ),
    Reply(
        "the `- x` list pitfall",
        f"My picks:\n- Auth\n- Billing\n\n{GMAIL_HEADER}\n{quoted(SENT_THREE)}",
        "My picks:\n- Auth\n- Billing",
        sent=SENT_THREE,
    ),
    Reply("closing and name", "2\n\nThanks,\nAlice", "2"),
    Reply("closing, name and title", "SQLite\n\nBest regards,\nAlice Example\nStaff Engineer\nExample Ltd", "SQLite"),
    Reply("german closing", "Die 2 bitte.\n\nViele Grüße\nAnna", "Die 2 bitte."),
    Reply("thanks first is kept", "Thanks, go with 2", "Thanks, go with 2"),
    Reply(
        "a long answer keeps its paragraphs",
        "We should use Postgres.\n\nAlso set up backups first,\nbefore the migration.\n\n"
        "On Tue, 2 Dec 2026, bot@example.org wrote:\n> old",
        "We should use Postgres.\n\nAlso set up backups first,\nbefore the migration.",
    ),
    Reply("history quoted without any mark", f"1\n\n{SENT}", "1"),
    Reply("history quoted unmarked and re-wrapped", f"Postgres\n\n{wrapped(SENT, 50)}", "Postgres"),
    Reply(
        "several answers, top-posted",
        f"1: 2\n2: auth, billing\n3: approve\n\n{GMAIL_HEADER}\n{quoted(SENT_THREE)}",
        "1: 2\n2: auth, billing\n3: approve",
        sent=SENT_THREE,
    ),
    Reply("nothing but the quote", f"{GMAIL_HEADER}\n{quoted(SENT)}", ""),
    Reply(
        "html only, gmail",
        "",
        "SQLite",
        html=(
            '<div dir="ltr">SQLite</div><br><div class="gmail_quote"><div dir="ltr" class="gmail_attr">'
            "On Tue, Dec 2, 2026 at 10:15 AM handraise &lt;bot@example.org&gt; wrote:<br></div>"
            f'<blockquote class="gmail_quote" style="margin:0 0 0 .8ex">{SENT_HTML}</blockquote></div>'
        ),
    ),
    Reply(
        "html only, outlook web",
        "",
        "Go with option 1.",
        html=(
            "<html><body><div>Go with option 1.</div><div><br></div>"
            '<hr style="display:inline-block;width:98%"><div id="divRplyFwdMsg" dir="ltr">'
            "<b>From:</b> handraise &lt;bot@example.org&gt;<br><b>Sent:</b> Tuesday, December 2, 2026 10:15 AM<br>"
            "<b>To:</b> Alice Example &lt;alice@example.org&gt;<br><b>Subject:</b> [handraise] Database</div>"
            f"<div>{SENT_HTML}</div></body></html>"
        ),
    ),
    Reply(
        "html only, apple mail",
        "",
        "1. Postgres",
        html=(
            '<html><body><div>1. Postgres</div><div><br><blockquote type="cite"><div>On 2 Dec 2026, at 10:15,'
            f" handraise &lt;bot@example.org&gt; wrote:</div>{SENT_HTML}</blockquote></div></body></html>"
        ),
    ),
    Reply(
        "html list of picks",
        "",
        "- Auth\n- Export",
        html="<ul><li>Auth</li><li>Export</li></ul><blockquote>old</blockquote>",
        sent=SENT_THREE,
    ),
]
_LANGUAGES = {"german": "de", "french": "fr", "spanish": "es", "dutch": "nl", "italian": "it", "japanese": "ja"}
CORPUS = [replace(reply, language=_LANGUAGES.get(reply.name.split()[0], "en")) for reply in CORPUS]
