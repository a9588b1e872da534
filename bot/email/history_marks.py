"""What mail clients write around quoted history, per language: quote headers, header blocks, separator lines,
device footers and closings. Only patterns live here; `reading` decides what to do with a match.

Every pattern is matched against one line (or a few joined), never against the whole mail, and is written without
nested quantifiers over the same characters, so its cost stays linear in the line's length. Lines are cut to
MAX_LINE before matching.
"""

# ruff: noqa: RUF001 (the patterns are in many languages and scripts on purpose)

from __future__ import annotations

import re

MAX_LINE = 1_000
"""No header or footer is longer; longer lines are never history marks (and are not matched at all)."""

COLON = r"[:：]"

# The "wrote" verb of a quote header, per language (Gmail, Apple Mail, Thunderbird, Yahoo, webmails).
_WROTE_WORDS = (
    r"wrote|writes|schrieb|geschrieben|a\s+[ée]crit|escribi[óo]|ha\s+scritto|schreef|geschreven|escreveu|skrev|"
    r"kirjoitti|napsal(?:\(a\)|a)?|napisa[łl](?:\(a\)|a)?|pisze|napisała|написал(?:\(а\)|а)?|написав(?:\(-?ла\))?|"
    r"пишет|пише|yazd[ıi]|έγραψε|a\s+scris|đã\s+viết|menulis|ezt\s+írta(?:\s*\([^)]{0,80}\))?|kirjutas|rašė|"
    r"rakstīja|napísal(?:\(a\))?|je\s+napisal|skrifaði|כתב(?:\s*\(?ה\)?)?|كتب"
)
_CJK_WROTE = r"写道|寫道|작성|のメール|さんは書きました|wrote"
_WROTE_END = rf"(?:{COLON}|\s*-{{2,}})"
WROTE = re.compile(rf"(?:(?:^|[\s,)>\]\"'])(?:{_WROTE_WORDS})|(?:{_CJK_WROTE}))\s*{_WROTE_END}\s*$", re.IGNORECASE)
"""A line (or joined lines) that ends a quote header: "… wrote:", "… 写道：", Zoho's "… wrote ----"."""

WROTE_THEN_WHO = re.compile(
    rf"(?:^|\s)(?:schrieb|schreef|skrev|escreveu)\s[^:：]{{1,160}}(?<!mailto){_WROTE_END}\s*$", re.IGNORECASE
)
"""German, Dutch and Scandinavian clients put the writer after the verb ("Am … schrieb Bob <bob@x>:")."""

HEADER_OPENER = re.compile(
    r"^(?:On|Am|Le|El|Il|Op|Em|Den|Dne|Dnia|W\s+dniu|P[åa]|В|Στις|În|Vào|Pada|Wiadomość|\d{1,4}[./\-年]|"
    r"[^\W\d_]{1,4}\.?,?\s+\d{1,2}[. ])",
    re.IGNORECASE,
)
"""How a quote header begins in many languages (its first line may be all there is before it wraps)."""

DATE_OR_ADDRESS = re.compile(r"\d|@")
MAILTO = re.compile(r"<mailto:[^<>]{0,320}>", re.IGNORECASE)
"""The link Outlook writes after an address in a header ("bot@x<mailto:bot@x>"), dropped before matching."""
TIME = re.compile(r"(?<!\d)(?:[01]?\d|2[0-3])[:.][0-5]\d(?!\d)")
YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
ENDS_WITH_COLON = re.compile(rf"(?<!mailto){COLON}\s*$", re.IGNORECASE)
"""A header's closing colon; "<bot@x<mailto:" at the end of a line is an address wrapped onto the next one."""

_FROM_WORDS = (
    r"From|Von|De|De\s+la|Da|Van|Från|Fra|Od|От|Від(?:\s+кого)?|Kimden|Gönderen|Από|Feladó|Lähettäjä|Frá|Nuo|No|"
    r"发件人|發件人|寄件者|差出人|보낸\s?사람"
)
_OTHER_HEADER_WORDS = (
    r"Sent|Date|To|Subject|Cc|Bcc|Reply-To|Gesendet|Datum|An|Betreff|Antwort\s+an|Envoy[ée]|À|A|Objet|Cc\s*/\s*Cci|"
    r"Copie\s+à|Répondre\s+à|Enviad[oa](?:\s+em)?|Fecha|Para|Asunto|Assunto|Inviato|Data|Oggetto|Verzonden|Aan|"
    r"Onderwerp|Skickat|Till|Ämne|Kopia|Sendt|Til|Emne|Wysłano|Wysłane|Do|Temat|DW|Odesláno|Komu|Předmět|Kopie|"
    r"Отправлено|Дата|Кому|Тема|Копия|Надіслано|Копія|Gönderildi|Tarih|Kime|Konu|Bilgi|Στάλθηκε|Ημερομηνία|Προς|Θέμα|"
    r"Κοιν|Trimis|Către|Subiect|Elküldve|Dátum|Címzett|Tárgy|Másolatot\s+kap|Lähetetty|Päivämäärä|Vastaanottaja|Aihe|"
    r"Kopio|发送时间|發送時間|收件人|抄送|主题|主題|日期|寄件日期|收件者|副本|主旨|送信日時|宛先|件名|日付|날짜|보낸\s?날짜|"
    r"받는\s?사람|참조|제목|Importance|Priorit[yé]|Wichtigkeit"
)
_LABEL_END = rf"[*_]*\s*{COLON}"
FROM_LINE = re.compile(rf"^[*_\s]*(?:{_FROM_WORDS}){_LABEL_END}", re.IGNORECASE)
HEADER_LINE = re.compile(rf"^[*_\s]*(?:{_FROM_WORDS}|{_OTHER_HEADER_WORDS}){_LABEL_END}", re.IGNORECASE)
"""A line of an Outlook-style header block ("From: …", "Von: …", "发件人：…", "*Sent:* …")."""

_SEPARATOR_PHRASES = (
    r"Original\s+Message|Forwarded\s+Message|Ursprüngliche\s+Nachricht|Originalnachricht|Weitergeleitete\s+Nachricht|"
    r"Message\s+d'origine|Message\s+original|Message\s+transf[ée]r[ée]|Mensaje\s+original|Mensaje\s+reenviado|"
    r"Messaggio\s+originale|Messaggio\s+inoltrato|Mensagem\s+original|Mensagem\s+encaminhada|"
    r"Oorspronkelijk\s+bericht|Origineel\s+bericht|Doorgestuurd\s+bericht|Ursprungligt\s+meddelande|"
    r"Vidarebefordrat\s+meddelande|Oprindelig\s+meddelelse|Videresendt\s+meddelelse|Opprinnelig\s+melding|"
    r"Videresendt\s+melding|Alkuperäinen\s+viesti|Välitetty\s+viesti|Wiadomość\s+oryginalna|"
    r"Oryginalna\s+wiadomość|Przekazana\s+wiadomość|Wiadomość\s+przekazana(?:\s+dalej)?|Původní\s+(?:e-mail|zpráva)|"
    r"Přeposlaná\s+zpráva|Pôvodná\s+správa|Исходное\s+сообщение|Пересылаемое\s+сообщение|"
    r"Пересланное\s+сообщение|Оригінальне\s+повідомлення|Переслане\s+повідомлення|Вихідне\s+повідомлення|"
    r"Orijinal\s+ileti|Özgün\s+ileti|Yönlendirilen\s+ileti|Iletilen\s+ileti|Αρχικό\s+μήνυμα|"
    r"Προωθημένο\s+μήνυμα|Mesaj\s+original|Mesaj\s+redirecționat|Eredeti\s+üzenet|Továbbított\s+üzenet|"
    r"原始邮件|原始郵件|转发的邮件|轉寄的郵件|원본\s*메일|전달된\s*메일|元のメッセージ|転送されたメッセージ"
)
SEPARATOR = re.compile(
    rf"^(?:_{{10,}}|-{{32,}}|={{32,}}|[-=_*~\s]*(?:{_SEPARATOR_PHRASES})[-=_*~\s]*|"
    r"(?:Begin\s+forwarded\s+message|Anfang\s+der\s+weitergeleiteten\s+Nachricht|"
    r"D[ée]but\s+du\s+message\s+r[ée]exp[ée]di[ée]|Inicio\s+del\s+mensaje\s+reenviado|"
    r"Inizio\s+messaggio\s+inoltrato|Início\s+da\s+mensagem\s+reencaminhada|Begin\s+doorgestuurd\s+bericht|"
    r"Vidarebefordrat\s+brev|Начало\s+переадресованного\s+сообщения|転送されたメッセージ)\s*[:：]?)\s*$",
    re.IGNORECASE,
)
"""A line after which everything is history: "-----Original Message-----", "Begin forwarded message:", …"""

SIGNATURE_DELIMITER = re.compile(r"^--\s*$")

DEVICE_FOOTER = re.compile(
    r"^(?:Sent\s+from\s+(?:(?:my|a|an)\s[^.,;:!?]{1,40}$|Mail\s|Outlook|Yahoo|Gmail|AOL|Proton)|Sent\s+(?:via|with)\s|"
    r"(?:Get|Hent|Skaffa|Obtenir|Obtener|Scarica|Baixe|Obter|Pobierz|Download)\s+Outlook\s|"
    r"Outlook\s+für\s+\S+\s+herunterladen|Envoy[ée]\s+(?:de\s+mon|depuis)\s|Von\s+meinem\s.{1,40}\sgesendet|"
    r"Gesendet\s+(?:von|mit|vom)\s|Enviado\s+(?:desde|do|de)\s|Inviato\s+da[li]?\s|Inviato\s+dal\s|"
    r"Verzonden\s+(?:vanaf|met)\s|Verstuurd\s+vanaf\s|Skickat\s+från\s|Sendt\s+fra\s|Lähetetty\s+\S+\s+laitteesta|"
    r"Wysłan[eo]\s+z\s|Odesláno\s+z\s|Отправлено\s+(?:с|из)\s|Надіслано\s+з\s|\S*['’]?(?:dan|den)\s+gönderildi|"
    r"从我的.{1,20}发送|发自我的|從我的.{1,20}傳送|(?:iPhone|iPad|Android|Galaxy|スマートフォン)から送信$|"
    r"(?:iPhone|iPad|Android|Galaxy)에서\s*보냄$)",
    re.IGNORECASE,
)
"""A "Sent from my iPhone" line, in many languages: the answer is above it."""

CLOSING = re.compile(
    r"^(?:thanks(?:\s+(?:again|a\s+lot|so\s+much))?|thank\s+you|many\s+thanks|cheers|best|all\s+the\s+best|"
    r"(?:best|kind|warm|warmest)\s+regards|regards|br|thx|ty|"
    r"mit\s+freundlichen\s+grü(?:ß|ss)en|(?:viele|beste|liebe|herzliche)\s+grü(?:ß|ss)e|grü(?:ß|ss)e|gru(?:ß|ss)|"
    r"mfg|lg|vg|danke|cordialement|bien\s+(?:à\s+vous|cordialement)|merci(?:\s+beaucoup)?|salutations|bises|"
    r"saludos|un\s+saludo|atentamente|gracias|cordiali\s+saluti|distinti\s+saluti|saluti|grazie|"
    r"atenciosamente|abraços|obrigad[oa]|met\s+vriendelijke\s+groet(?:en)?|groeten|groetjes|bedankt|"
    r"med\s+vänliga\s+hälsningar|vänliga\s+hälsningar|hälsningar|tack|mvh|med\s+venlig\s+hilsen|hilsen|"
    r"venlig\s+hilsen|kh|kærlig\s+hilsen|de\s+bedste\s+hilsner|vh|"
    r"terveisin|ystävällisin\s+terveisin|üdvözlettel|s\s+pozdravem|díky|děkuji|pozdrawiam|dzięki|"
    r"z\s+poważaniem|с\s+уважением|спасибо|з\s+повагою|дякую|saygılarımla|teşekkürler|"
    r"με\s+εκτίμηση|ευχαριστώ|cu\s+stimă|mulțumesc|(?:以上、?\s*)?よろしくお願い(?:いた)?します|谢谢|祝好|此致|감사합니다)"
    r"[\s,.!。！]*$",
    re.IGNORECASE,
)
"""A closing line ("Thanks,", "Viele Grüße"): a name and a title may follow it, then nothing of the answer."""

DECORATION = re.compile(r"^[\s*_\-=~#|.·•━─═┈┄+]*$")
RULE = re.compile(r"^\s*([*_\-=~#·•━─═┈┄+])(?:\s?\1)+\s*$")
"""A line drawn with one repeated symbol ("━━━━", "~~~~", "* * *", "__")."""

SIGN_OFF = re.compile(r"^(?:[-/~]|[–—]\s?)[^\W\d_][\w.'’-]*(?:\s[^\W\d_][\w.'’-]*){0,3}$")
"""A name signed with a dash or slash under the answer ("-Abhishek", "— Tim", "/John"); a hyphen with a space
after it is a list item ("- Billing"), not a signature."""

CONTACT = re.compile(
    r"(?:\+?\d[\d ()./-]{6,}\d|[\w.+-]+@[\w-]+\.[\w.-]+|https?://|www\.|\w\.(?:com|org|net|io|de|fr)\b|\s[|·]\s)",
    re.IGNORECASE,
)
"""Something a signature block carries: a phone number, an address, a web site, "Title | Company"."""
