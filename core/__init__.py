"""handraise's seam: an agent asks a human through `ctx.user_questions.ask()`; answerers claim requests.

Imports nothing outside the standard library, pydantic and anyio.
"""

from core.abort import AbortController as AbortController
from core.abort import AbortSignal as AbortSignal
from core.agents import Agent as Agent
from core.agents import AgentRegistry as AgentRegistry
from core.context import Context as Context
from core.context import Dispose as Dispose
from core.context import Listener as Listener
from core.context import Next as Next
from core.context import PluginHandle as PluginHandle
from core.errors import ErrorCode as ErrorCode
from core.errors import UserQuestionError as UserQuestionError
from core.errors import no_provider as no_provider
from core.service import REQUEST_EVENT as REQUEST_EVENT
from core.service import UserQuestionService as UserQuestionService
from core.tool import AskUserQuestionTool as AskUserQuestionTool
from core.tool import format_answer as format_answer
from core.tool import parse_questions as parse_questions
from core.types import AskUserQuestionAnswer as AskUserQuestionAnswer
from core.types import AskUserQuestionAnswerItem as AskUserQuestionAnswerItem
from core.types import AskUserQuestionIntent as AskUserQuestionIntent
from core.types import AskUserQuestionItem as AskUserQuestionItem
from core.types import AskUserQuestionOption as AskUserQuestionOption
from core.types import AskUserQuestionRequest as AskUserQuestionRequest

__all__ = (
    "REQUEST_EVENT",
    "AbortController",
    "AbortSignal",
    "Agent",
    "AgentRegistry",
    "AskUserQuestionAnswer",
    "AskUserQuestionAnswerItem",
    "AskUserQuestionIntent",
    "AskUserQuestionItem",
    "AskUserQuestionOption",
    "AskUserQuestionRequest",
    "AskUserQuestionTool",
    "Context",
    "Dispose",
    "ErrorCode",
    "Listener",
    "Next",
    "PluginHandle",
    "UserQuestionError",
    "UserQuestionService",
    "format_answer",
    "no_provider",
    "parse_questions",
)
