"""Wire-safe types of the seam. Python names are snake_case; JSON on the wire uses the design's camelCase."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from core.abort import AbortSignal

if TYPE_CHECKING:
    from core.agents import Agent


class WireModel(BaseModel):
    """Frozen, camelCase on the wire, accepts either spelling on input, ignores unknown keys."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    def to_wire(self) -> dict[str, Any]:
        """JSON-ready dict in the wire's camelCase, without absent optional fields."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class AskUserQuestionOption(WireModel):
    label: str
    description: str | None = None


class AskUserQuestionIntent(WireModel):
    """A presentation hint: this question is a known kind of decision. `approve` names the approving label.

    `reject`, when set, names the option that asks for the person's words (e.g. "Deny…"): channels show it as their
    free-text path in place of their own "Request changes…", so words typed come back as `custom` and none as that
    option alone in `selected`.
    """

    kind: Literal["plan-review"]
    approve: str
    reject: str | None = None


class AskUserQuestionItem(WireModel):
    """One question. `detail` is supporting text shown with it (for plan-review: the plan under review)."""

    id: str
    question: str
    detail: str | None = None
    header: str | None = None
    options: list[AskUserQuestionOption] | None = None
    multi_select: bool = False
    intent: AskUserQuestionIntent | None = None

    @property
    def reject_label(self) -> str | None:
        """The option that opens the free-text path (its intent's `reject`), or None: channels then offer their own."""
        return self.intent.reject if self.intent is not None else None


class AskUserQuestionAnswerItem(WireModel):
    """The answer to one question.

    Single-select: `custom` overrides the choice and `selected` is empty. Multi-select: `custom` may supplement
    `selected`. A skipped question is `{id, selected: []}`.
    """

    id: str
    selected: list[str] = Field(default_factory=list[str])
    custom: str | None = None


class AskUserQuestionAnswer(WireModel):
    answers: list[AskUserQuestionAnswerItem]


class AskUserQuestionRequest(BaseModel):
    """What `ask()` receives. `agent` and `signal` are live objects and never go on the wire."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    questions: list[AskUserQuestionItem]
    agent: Agent | None = None
    signal: AbortSignal | None = None

    def questions_wire(self) -> list[dict[str, Any]]:
        return [question.to_wire() for question in self.questions]


def _rebuild() -> None:
    from core.agents import Agent

    AskUserQuestionRequest.model_rebuild(_types_namespace={"Agent": Agent})


_rebuild()
