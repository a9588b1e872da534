"""The Slack channel's own error codes, beside `bot.errors.BotErrorCode`'s shared ones: stable, so that logs and
callers can tell its failures apart without matching on message text."""

from __future__ import annotations

from enum import StrEnum


class SlackErrorCode(StrEnum):
    CALL_FAILED = "SLACK_CALL_FAILED"
    """A Slack Web API call failed; the error names Slack's own code."""
    RENDER = "SLACK_RENDER"
    """A question cannot be shown as a Slack message."""
    PAYLOAD = "SLACK_PAYLOAD"
    """A Slack payload is malformed or not about one of our questions."""
