"""A coding agent's permission prompt by mail: the mail says how to deny with a reason, and a reply "Deny" or
"Deny: because…" is read as the hook expects. The answer is read by the hook's own `decision_of`: what the agent
gets."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import anyio
import pytest

from bot.email.parse import read_answer
from bot.permissions.prompt import DENY, Decision, Permission, decision_of, question
from core import AskUserQuestionAnswer, AskUserQuestionItem

from .rig import EmailRig, body_of, reply_to

pytestmark = pytest.mark.anyio

PERMISSION = Permission(
    agent="claude", project="billing-api", tool="Bash", kind="shell", request="make release", detail="make release"
)
PROMPT = AskUserQuestionItem.model_validate(question(PERMISSION))
QUOTE = "\n\nOn Tue, 2 Dec 2026 bot@example.org wrote:\n> Allow Bash?"
DENIED = Decision("deny", "Denied by alice@example.org through handraise.")


async def replied(tmp_path: Path, text: str) -> Decision | None:
    """Ask the prompt by mail, reply `text`; the hook's decision."""
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, PROMPT)
        mail = await rig.question_mail()
        assert await rig.channel.handle(reply_to(mail, text + QUOTE))
    (answer,) = rig.outcome
    assert isinstance(answer, AskUserQuestionAnswer), answer
    record = await rig.ledger.store.get_question(rig.question_id())
    assert record is not None
    return decision_of(answer.to_wire(), record.answered_by)


@pytest.mark.parametrize(
    ("text", "decision"),
    [
        ("Deny: not before the release review", Decision("deny", "not before the release review")),
        ("deny - the cache is shared", Decision("deny", "the cache is shared")),
        ("Deny…\n\nthe tests fail on main\nfix them first", Decision("deny", "the tests fail on main\nfix them first")),
        ("Deny", DENIED),
        ("DENY.", DENIED),
        ("Deny:", DENIED),
        ("2", DENIED),
        ("please wait for Bob", Decision("deny", "please wait for Bob")),
        ("1", Decision("allow", "Allowed by alice@example.org through handraise.")),
    ],
)
async def test_a_reply_denies_with_or_without_a_reason(tmp_path: Path, text: str, decision: Decision) -> None:
    assert await replied(tmp_path, text) == decision


async def test_the_mail_says_how_to_deny_with_a_reason(tmp_path: Path) -> None:
    rig = EmailRig(tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.ask, PROMPT)
        await rig.question_mail()
        group.cancel_scope.cancel()
    mail = rig.sender.sent[0]
    text = " ".join(body_of(mail).split())
    assert 'To deny with your reason, reply "Deny: " followed by it' in text
    assert '"Deny" alone is enough without one' in text
    assert "Reply APPROVE" not in text
    html_part = mail.get_body(("html",))
    assert html_part is not None
    page = unquote(str(html_part.get_content()))
    assert "body=Deny: " in page and "body=1" in page and "body=2" not in page


def test_a_plan_review_without_a_reject_option_reads_deny_as_before() -> None:
    plain = PROMPT.model_copy(update={"intent": PROMPT.intent.model_copy(update={"reject": None})})  # type: ignore[union-attr]
    assert read_answer(plain, "Deny: not now").custom == "Deny: not now"
    assert read_answer(plain, "Deny").selected == [DENY]
