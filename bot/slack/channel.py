"""The Slack channel: posts questions, turns clicks, modals and thread replies into answers, and shows the outcome.

Interactions arrive through a slack-bolt `AsyncApp`, over HTTP (`add_routes` mounts `/slack/events`; bolt verifies
the signature) or Socket Mode (`run`). Each handler acknowledges first, within Slack's 3 seconds, and then does its
work: it reads the event, hands the reply to the shared base (which checks who may answer, records it, and lets the
first answer win) and shows the person the outcome privately. The base updates the message once the question ends.

Slack delivers an event again when its acknowledgement was slow (same `event_id`, `X-Slack-Retry-Num`), possibly after
a restart and after the agent has asked its next question in the same thread. So an event is acted on once (its id is
kept in the store), and a thread reply only ever answers a question posted before it.

This class wires the parts together; each lives in its own module: `posting` and `lost_posts` (sending a question),
`follow_ups` (its message afterwards), `notes` (an agent's status notes), `interactions`, `thread_replies` and
`waiting` (what people do), `notices` (what they are told), `people`, `redeliveries` and `connection`.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from bot.channels.base import Channel, Sent
from bot.questions.routing import Route
from bot.questions.status_note import StatusNote
from bot.settings.secrets import resolve_secret
from bot.slack import ids, notices, people
from bot.slack.connection import add_events_route, bolt_app, hold_socket
from bot.slack.follow_ups import FollowUps
from bot.slack.interactions import Interactions
from bot.slack.lost_posts import LostPosts
from bot.slack.notes import NotePoster
from bot.slack.posting import QuestionPoster
from bot.slack.settings import SlackSettings
from bot.slack.thread_replies import ThreadReplies
from bot.slack.threads import Threads
from bot.slack.transport import SlackTransport, make_client
from bot.slack.waiting import COMMAND, WaitingList
from bot.store.records import Delivery, QuestionRecord


class SlackChannel(Channel):
    """Asks in Slack. Give `client` (and `signing_secret` / `app_token`) to run against a test double; otherwise
    the tokens come from the environment variables the settings name (ConfigError when one is unset)."""

    name = "slack"
    notice = staticmethod(notices.notice)

    def __init__(
        self,
        settings: SlackSettings,
        *,
        client: AsyncWebClient | None = None,
        signing_secret: str | None = None,
        app_token: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        http = settings.mode == "http"
        if client is None:
            client = make_client(resolve_secret(settings.bot_token_env, environ), settings.api_url)
        if http and signing_secret is None and settings.signing_secret_env is not None:
            signing_secret = resolve_secret(settings.signing_secret_env, environ)
        if not http and app_token is None and settings.app_token_env is not None:
            app_token = resolve_secret(settings.app_token_env, environ)
        self.app_token = app_token
        self.transport = SlackTransport(client)
        self.app = bolt_app(client, signing_secret, http=http)
        self.threads = Threads(self.name)
        told = notices.Notices(self.transport)
        self._poster = QuestionPoster(self, settings, self.transport, self.threads)
        self._lost_posts = LostPosts(self, self.transport, self.threads)
        self._follow_ups = FollowUps(self, self.transport)
        self._notes = NotePoster(self, self.transport, self.threads)
        self._waiting = WaitingList(self)
        interactions = Interactions(self, self.transport, told)
        self.app.action(ids.ACTION_PATTERN)(interactions.on_action)
        self.app.view(ids.MODAL_CALLBACK)(interactions.on_view)
        self.app.event("message")(ThreadReplies(self, self.threads, told).on_message)
        self.app.command(COMMAND)(self._waiting.on_command)

    async def deliver(self, question: QuestionRecord, route: Route) -> Sent:
        return await self._poster.deliver(question, route)

    async def find_sent(self, question: QuestionRecord, route: Route) -> Sent | None:
        """The question's message when an earlier `deliver` posted it (see `LostPosts.find`); None when it cannot be
        found, so it is posted again."""
        return await self._lost_posts.find(question, route)

    async def close_out(self, question: QuestionRecord, delivery: Delivery) -> None:
        await self._follow_ups.close_out(question, delivery)

    async def remind(self, question: QuestionRecord, delivery: Delivery, route: Route) -> None:
        """Post a reminder in the question's thread, mentioning the responders (else the route's mentions)."""
        await self._follow_ups.remind(question, delivery, route)

    async def show_progress(self, question: QuestionRecord, delivery: Delivery, needed: int) -> None:
        """Keep the buttons and add how many have approved, so the next approver sees who already did."""
        await self._follow_ups.show_progress(question, delivery, needed)

    async def post_note(self, note: StatusNote, route: Route) -> bool:
        """Post the note in the agent's thread (starting it when the agent has none yet); no buttons."""
        return await self._notes.post(note, route)

    async def identity(self, person: str) -> str:
        """The user's email address when the app may read it (users:read.email), so that approving in Slack and
        by email counts once; else the user id."""
        return await people.identity(self.transport, person)

    async def members(self, entry: str) -> frozenset[str] | None:
        """A user group's members (`S…` responders); an unreadable group holds nobody, so the reply is refused."""
        return await people.members(self.transport, entry)

    async def waiting_for(self, user: str) -> list[tuple[QuestionRecord, str]]:
        """The pending questions shown in Slack that `user` may answer, oldest first, with links to their messages."""
        return await self._waiting.waiting_for(user)

    async def run(self) -> None:
        """In Socket Mode, hold the websocket open for as long as the channel runs; in HTTP mode, nothing."""
        if self.settings.mode != "socket":
            return
        await hold_socket(self.app, self.app_token, self.transport.client)

    def add_routes(self, app: web.Application) -> None:
        """Serve Slack's events and interactivity requests at `/slack/events` (HTTP mode)."""
        add_events_route(app, self.app)
