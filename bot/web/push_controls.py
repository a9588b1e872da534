"""The inbox's "Turn on notifications" controls, shown to a signed-in person when the server sends Web Push.

The section starts hidden: static/push.js shows it once it knows what this browser can do (the buttons, or why not,
e.g. iOS's "add to the Home Screen first"), so a page without the script shows nothing that cannot work.
"""

from __future__ import annotations

from html import escape

PUSH_SCRIPT = "/static/push.js"


def render_push_controls(csrf: str) -> str:
    """The controls; `csrf` goes with the page's subscription requests in an `X-CSRF-Token` header."""
    return (
        f'<section class="push" data-push data-csrf="{escape(csrf)}" aria-label="Notifications on this device" hidden>'
        '<p class="hint" data-push-state role="status"></p>'
        '<button type="button" class="secondary" data-push-on hidden>Turn on notifications</button>'
        '<button type="button" class="quiet" data-push-off hidden>Turn off notifications</button></section>'
    )
