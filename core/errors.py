"""The seam's one error type, its stable codes, and the exact messages the design fixes."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Stable codes carried by `UserQuestionError.code`.

    The first six are the seam's own; answerers may raise others (the last two are the ones the bot uses).
    A `StrEnum` so that `error.code == "NO_PROVIDER"` holds for callers that compare plain strings.
    """

    ASK_ABORTED = "ASK_ABORTED"
    EMPTY_QUESTIONS = "EMPTY_QUESTIONS"
    CALLER_NOT_LIVE = "CALLER_NOT_LIVE"
    DELEGATED_CALLER = "DELEGATED_CALLER"
    BAD_INTENT = "BAD_INTENT"
    NO_PROVIDER = "NO_PROVIDER"
    ASK_CANCELLED = "ASK_CANCELLED"
    ASK_TIMEOUT = "ASK_TIMEOUT"


class UserQuestionError(Exception):
    """A failure of `ask()` that the caller (and the model) should see as a message and a code.

    `name` mirrors the design's JavaScript error name: a transport that cannot carry Python classes re-raises an
    exception with `name == "UserQuestionError"` and a string `code`, and the seam restores it (see `restore`).
    """

    name = "UserQuestionError"

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __repr__(self) -> str:
        return f"UserQuestionError({self.message!r}, {self.code!r})"

    @classmethod
    def restore(cls, error: BaseException) -> UserQuestionError | None:
        """Return `error` as a `UserQuestionError` if it is one or a transported one, else None.

        A transported error becomes a new `UserQuestionError` with the same message and code whose `__cause__`
        is the original, so the transport's traceback is kept.
        """
        if isinstance(error, UserQuestionError):
            return error
        code: object = getattr(error, "code", None)
        if getattr(error, "name", None) != cls.name or not isinstance(code, str):
            return None
        message: object = getattr(error, "message", None)
        restored = cls(message if isinstance(message, str) else str(error), code)
        restored.__cause__ = error
        return restored


def aborted() -> UserQuestionError:
    return UserQuestionError("ask_user_question was aborted before the user answered", ErrorCode.ASK_ABORTED)


def empty_questions() -> UserQuestionError:
    return UserQuestionError("ask_user_question requires at least one question", ErrorCode.EMPTY_QUESTIONS)


def caller_not_live() -> UserQuestionError:
    return UserQuestionError(
        "human interaction requires the exact live calling agent when an agent is supplied",
        ErrorCode.CALLER_NOT_LIVE,
    )


def delegated_caller() -> UserQuestionError:
    return UserQuestionError(
        "human interaction is unavailable while the calling agent is owned by another live agent; "
        "include the unresolved question or decision in the child agent's final result",
        ErrorCode.DELEGATED_CALLER,
    )


def approve_names_no_option(question_id: str, kind: str, approve: str) -> UserQuestionError:
    return UserQuestionError(
        f'question {question_id} declares intent {kind} whose approve label "{approve}" names none of its options',
        ErrorCode.BAD_INTENT,
    )


def reject_names_no_option(question_id: str, kind: str, reject: str) -> UserQuestionError:
    return UserQuestionError(
        f'question {question_id} declares intent {kind} whose reject label "{reject}" names none of its options',
        ErrorCode.BAD_INTENT,
    )


def reject_is_approve(question_id: str, kind: str, label: str) -> UserQuestionError:
    return UserQuestionError(
        f'question {question_id} declares intent {kind} whose reject label "{label}" is also its approve label; '
        "name the option that asks for the person's words",
        ErrorCode.BAD_INTENT,
    )


def intent_without_detail(question_id: str, kind: str) -> UserQuestionError:
    return UserQuestionError(
        f"question {question_id} declares intent {kind} without the detail it reviews", ErrorCode.BAD_INTENT
    )


def no_provider() -> UserQuestionError:
    return UserQuestionError("no user-questions answerer accepted the request", ErrorCode.NO_PROVIDER)
