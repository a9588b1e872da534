"""`POST /v1/questions`'s body as a pydantic model (the transport's limits are checked before it, in
`bot.questions.validation`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from bot.store.records import AgentRef
from core import AskUserQuestionItem


class AskBody(BaseModel):
    """`POST /v1/questions`: the questions and, optionally, who asks. Validated strictly (`strict=True`): JSON
    types as the OpenAPI document says, so `"multiSelect": 0` is refused rather than read as false."""

    model_config = ConfigDict(extra="forbid")

    questions: list[AskUserQuestionItem]
    agent: AgentRef | None = None
