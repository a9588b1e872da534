"""Reading a posted form's body, cheaply for the inbox's own URL-encoded forms and through aiohttp for anything
else, refusing a body that is not a form."""

from __future__ import annotations

from aiohttp import web
from yarl import query_to_pairs

URL_ENCODED = "application/x-www-form-urlencoded"
MAX_FORM_FIELDS = 1000
"""Fields one posted form may hold (aiohttp's own limit): an answer form has a few per question."""


class UnreadableBody(Exception):
    """A posted body that is not a form: not UTF-8, or too many fields. `status` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read_form(request: web.Request) -> dict[str, list[str]]:
    """The posted form: each field's text values, in order.

    The inbox's own forms are URL-encoded UTF-8: their body is split here by the parser aiohttp's `post()` uses, with
    its limit on fields, but without the two multidicts `post()` builds that this would then copy (every answer pays
    for them). Anything else (multipart, another charset) goes through `post()`. Raises UnreadableBody.
    """
    if request.content_type != URL_ENCODED or request.charset not in (None, "utf-8"):
        posted = await request.post()
        return {key: [value for value in posted.getall(key) if isinstance(value, str)] for key in set(posted.keys())}
    try:
        text = (await request.read()).rstrip().decode()
    except UnicodeDecodeError:
        raise UnreadableBody(400, "the form did not come as UTF-8 text; reload the inbox and answer again") from None
    try:
        pairs = query_to_pairs(text, max_fields=MAX_FORM_FIELDS)
    except ValueError:
        raise UnreadableBody(413, f"a form holds at most {MAX_FORM_FIELDS} fields") from None
    form: dict[str, list[str]] = {}
    for name, value in pairs:
        form.setdefault(name, []).append(value)
    return form
