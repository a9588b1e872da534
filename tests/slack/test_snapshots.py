"""Block Kit JSON of representative questions, compared with files under tests/slack/snapshots/.

After an intended change, rewrite them with `HANDRAISE_UPDATE_SNAPSHOTS=1 uv run pytest tests/slack` and review the
diff. The previews in docs/ (paste one into Slack's Block Kit Builder) are the same renders and are checked too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.hooks import claude as claude_hook
from bot.permissions.prompt import question as permission_question
from bot.slack.ids import ModalRef
from bot.slack.modal import render_answer_modal
from bot.slack.render import render_outcome, render_question
from bot.store.records import AgentRef, QuestionRecord
from core import AskUserQuestionItem
from tests.claude import payloads

from .blockkit import check_blocks, check_view
from .records import answered, ended, item, labels, record

SNAPSHOTS = Path(__file__).parent / "snapshots"
DOCS = Path(__file__).parents[2] / "docs"
UPDATE = os.environ.get("HANDRAISE_UPDATE_SNAPSHOTS") == "1"

PLAN = """## Migrate the orders database

1. Put **orders-api** in read-only mode (about 2 minutes of failed writes)
2. Snapshot `orders-db` and restore it on the new cluster
3. Switch the connection string, then leave read-only mode

Rollback: switch the connection string back; the old cluster stays up for 24 hours.
"""


def deploy() -> QuestionRecord:
    return record(
        item(
            "Deploy *v2.4.1* to production now? The canary has been green for 30 minutes.",
            id="deploy",
            header="Production deploy",
            detail="Changes: 14 commits, 2 migrations (both backwards compatible).",
            options=[
                {"label": "Deploy now (Recommended)", "description": "roll out to all regions"},
                {"label": "Wait until tomorrow", "description": "after the morning traffic peak"},
                {"label": "Cancel the release"},
            ],
        )
    )


def region() -> QuestionRecord:
    return record(
        item(
            "Which region should the new cluster go to?",
            id="region",
            options=[
                {"label": name, "description": f"{latency} ms from most users"}
                for name, latency in [
                    ("eu-west-1", 18),
                    ("eu-central-1", 22),
                    ("us-east-1", 85),
                    ("us-west-2", 140),
                    ("ap-south-1", 160),
                    ("ap-northeast-1", 210),
                    ("sa-east-1", 190),
                ]
            ],
        )
    )


def long_labels() -> QuestionRecord:
    return record(item("Which test suite should run again?", id="suite", options=labels(30, width=80)))


def features() -> QuestionRecord:
    return record(
        item(
            "Which feature flags should stay on?",
            id="flags",
            multi_select=True,
            options=["new-checkout", "dark-mode", "search-v2", "beta-banner"],
        )
    )


def free_text() -> QuestionRecord:
    return record(item("What should the release notes say about the outage?", id="notes", header="Release notes"))


def plan_review() -> QuestionRecord:
    return record(
        item(
            "Approve this migration plan?",
            id="plan",
            header="Plan review",
            detail=PLAN,
            options=["Approve", "Reject"],
            intent={"kind": "plan-review", "approve": "Approve"},
        )
    )


def batch() -> QuestionRecord:
    return record(
        item("Which region?", id="region", header="Region", options=["eu-west-1", "us-east-1", "ap-south-1"]),
        item("Which feature flags stay on?", id="flags", options=labels(12), multi_select=True),
        item("Anything the on-call engineer should know?", id="notes"),
    )


MESSAGES: dict[str, Callable[[], QuestionRecord]] = {
    "deploy-buttons": deploy,
    "region-radio": region,
    "long-labels-select": long_labels,
    "flags-checkboxes": features,
    "free-text": free_text,
    "plan-review": plan_review,
    "batch": batch,
}


def outcomes() -> dict[str, QuestionRecord]:
    return {
        "plan-review-approved": answered(plan_review(), [{"id": "plan", "selected": ["Approve"]}]),
        "plan-review-changes": answered(plan_review(), [{"id": "plan", "custom": "Do it on Saturday, not today"}]),
        "batch-answered": answered(
            batch(),
            [
                {"id": "region", "selected": ["us-east-1"]},
                {"id": "flags", "selected": ["Option 2", "Option 5"]},
                {"id": "notes", "selected": [], "custom": "Page me if p99 > 300 ms"},
            ],
        ),
        "deploy-expired": ended(deploy(), "expired", "nobody answered within 2h", "ASK_TIMEOUT"),
        "deploy-cancelled": ended(deploy(), "cancelled", "the agent stopped waiting for this question", "ASK_ABORTED"),
    }


def compare(path: Path, rendered: Any) -> None:
    text = json.dumps(rendered, indent=2, ensure_ascii=False) + "\n"
    if UPDATE or not path.exists():
        path.write_text(text, encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"wrote the missing snapshot {path.name}; check it and run again")
    assert json.loads(path.read_text(encoding="utf-8")) == rendered, f"{path.name} changed"


@pytest.mark.parametrize("name", list(MESSAGES))
def test_question_messages_match_their_snapshots(name: str) -> None:
    message = render_question(MESSAGES[name](), mentions=["U0ALICE", "S0ONCALL"])
    check_blocks(message.blocks)
    compare(SNAPSHOTS / f"{name}.json", {"text": message.text, "blocks": message.blocks})


@pytest.mark.parametrize("name", list(outcomes()))
def test_outcomes_match_their_snapshots(name: str) -> None:
    message = render_outcome(outcomes()[name])
    check_blocks(message.blocks)
    compare(SNAPSHOTS / f"{name}.json", {"text": message.text, "blocks": message.blocks})


def test_the_batch_modal_matches_its_snapshot() -> None:
    view = render_answer_modal(batch(), 2, ModalRef(batch().id, "C0DEPLOY", "1767258000.000100"), chosen={0: [1]})
    check_view(view)
    compare(SNAPSHOTS / "batch-modal.json", view)


def permission_prompt() -> QuestionRecord:
    """What `handraise hook claude` has serve ask when Claude Code wants to run a command (tests/claude/payloads.py):
    the one question of POST /v1/permissions, with Allow, Deny… and Always allow."""
    plan = claude_hook.plan(payloads.BASH, {})
    assert plan is not None and plan.permission is not None
    question = AskUserQuestionItem.model_validate(permission_question(plan.permission))
    return record(question, agent=AgentRef(**plan.agent))


PREVIEWS = {
    "slack-preview-question.json": lambda: render_question(deploy(), mentions=["U0ALICE"]).blocks,
    "slack-preview-plan-review.json": lambda: render_question(plan_review(), mentions=["U0ALICE"]).blocks,
    "slack-preview-batch.json": lambda: render_question(batch(), mentions=["S0ONCALL"]).blocks,
    "slack-preview-answered.json": lambda: render_outcome(outcomes()["plan-review-approved"]).blocks,
    "slack-preview-permission.json": lambda: render_question(permission_prompt(), mentions=["U0ALICE"]).blocks,
}


@pytest.mark.parametrize("name", list(PREVIEWS))
def test_the_docs_previews_are_current(name: str) -> None:
    compare(DOCS / name, {"blocks": PREVIEWS[name]()})
