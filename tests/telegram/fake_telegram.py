"""A local Telegram Bot API on 127.0.0.1:0: keeps the messages the bot sends and edits, serves updates to long
polls, and can answer 429s or errors on cue. People act through `tap` and `reply`, which queue updates the way
Telegram would send them."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from aiohttp import web

TOKEN = "123456:test-token"
BOT_ID = 123456
BOT_USER = {"id": BOT_ID, "is_bot": True, "first_name": "handraise", "username": "handraise_bot"}
_JSON_FIELDS = ("reply_markup", "reply_parameters", "allowed_updates", "link_preview_options", "show_alert")


@dataclass(frozen=True)
class Call:
    method: str
    args: dict[str, Any]
    status: int


def user(user_id: int, first_name: str = "Alice") -> dict[str, Any]:
    return {"id": user_id, "is_bot": False, "first_name": first_name}


class FakeTelegram:
    """The Bot API methods the channel uses, with the state they change."""

    def __init__(self) -> None:
        self.url = ""
        self.calls: list[Call] = []
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.chats = {"@handraise_test": -1009999}
        self.updates: list[dict[str, Any]] = []
        self._scripts: dict[str, list[tuple[int, Any]]] = {}
        self._message_ids = itertools.count(100)
        self._update_ids = itertools.count(5000)
        self._topics = itertools.count(700)
        self._changed = anyio.Event()
        self.closing = False
        self.on_send: Callable[[int, int], Awaitable[None]] | None = None
        """Awaited with a new message's (chat, message id) once it is sent, before the bot hears back: a person who
        taps it at once."""

    # --- scripting -------------------------------------------------------------------------------------------------

    def rate_limit(self, method: str, *, retry_after: int = 1, times: int = 1) -> None:
        """Answer the next `times` calls of `method` with 429 and `retry_after`."""
        self._scripts.setdefault(method, []).extend([(429, retry_after)] * times)

    def fail(self, method: str, description: str, *, status: int = 400, times: int = 1) -> None:
        self._scripts.setdefault(method, []).extend([(status, description)] * times)

    def stall(self, method: str) -> anyio.Event:
        """Hold the next call of `method` unanswered (Telegram has it, the bot waits for the reply) until the event
        returned is set; the call counts as made (`wait_for`) from the moment it arrives."""
        release = anyio.Event()
        self._scripts.setdefault(method, []).append((0, release))
        return release

    # --- people's side ---------------------------------------------------------------------------------------------

    def push(self, update: dict[str, Any]) -> int:
        """Queue a raw update (given its own update_id unless it has one); returns the id."""
        update.setdefault("update_id", next(self._update_ids))
        self.updates.append(update)
        self._notify()
        return int(update["update_id"])

    def tap(self, chat: int, message_id: int, who: dict[str, Any], data: str) -> int:
        message = dict(self.messages[(chat, message_id)])
        query = {"id": f"cq{len(self.calls)}", "from": who, "message": message, "chat_instance": "ci", "data": data}
        return self.push({"callback_query": query})

    def reply(self, chat: int, to: int, who: dict[str, Any], text: str) -> int:
        message = {
            "message_id": next(self._message_ids),
            "date": 1,
            "chat": self.messages[(chat, to)]["chat"],
            "from": who,
            "text": text,
            "reply_to_message": dict(self.messages[(chat, to)]),
        }
        return self.push({"message": message})

    # --- reading what happened -------------------------------------------------------------------------------------

    def calls_to(self, method: str) -> list[dict[str, Any]]:
        return [call.args for call in self.calls if call.method == method and call.status == 200]

    async def wait_for(self, method: str, count: int = 1, *, seconds: float = 5) -> list[dict[str, Any]]:
        """The successful calls to `method` once there are at least `count` of them."""
        with anyio.fail_after(seconds):
            while len(self.calls_to(method)) < count:
                await self._changed.wait()
        return self.calls_to(method)

    def buttons(self, chat: int, message_id: int) -> list[tuple[str, str]]:
        """The (text, callback_data) of every button the message shows now."""
        markup = self.messages[(chat, message_id)].get("reply_markup") or {}
        return [(b["text"], b["callback_data"]) for row in markup.get("inline_keyboard", []) for b in row]

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # --- serving ---------------------------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != TOKEN:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        method = request.match_info["method"]
        args = await _arguments(request)
        script = self._scripts.get(method)
        status, value = script.pop(0) if script else (200, None)
        if status == 0:  # stalled: made, answered once released
            self.calls.append(Call(method, args, 200))
            self._notify()
            assert isinstance(value, anyio.Event)
            await value.wait()
            status, value = 200, None
        else:
            self.calls.append(Call(method, args, status))
            self._notify()
        if status == 429:
            description = f"Too Many Requests: retry after {value}"
            body = {"ok": False, "error_code": 429, "description": description, "parameters": {"retry_after": value}}
            return web.json_response(body, status=429)
        if status != 200:
            return web.json_response({"ok": False, "error_code": status, "description": value}, status=status)
        handler = getattr(self, f"_{method}", None)
        if handler is None:
            return web.json_response({"ok": False, "error_code": 404, "description": "Not Found"}, status=404)
        try:
            result = await handler(args)
        except LookupError as problem:
            return web.json_response({"ok": False, "error_code": 400, "description": str(problem)}, status=400)
        return web.json_response({"ok": True, "result": result})

    def _chat(self, chat: Any) -> dict[str, Any]:
        chat_id = self.chats.get(chat) if isinstance(chat, str) and chat.startswith("@") else int(chat)
        if chat_id is None:
            raise LookupError("Bad Request: chat not found")
        return {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"}

    async def _getMe(self, args: dict[str, Any]) -> Any:
        return BOT_USER

    async def _sendMessage(self, args: dict[str, Any]) -> Any:
        chat = self._chat(args["chat_id"])
        message: dict[str, Any] = {
            "message_id": next(self._message_ids),
            "date": 1,
            "chat": chat,
            "from": BOT_USER,
            "text": args["text"],
        }
        if "reply_markup" in args and "inline_keyboard" in args["reply_markup"]:
            message["reply_markup"] = args["reply_markup"]
        if "message_thread_id" in args:
            message["message_thread_id"] = int(args["message_thread_id"])
        self.messages[(chat["id"], message["message_id"])] = message
        if self.on_send is not None:
            await self.on_send(chat["id"], message["message_id"])
        return message

    async def _editMessageText(self, args: dict[str, Any]) -> Any:
        message = self._message(args)
        markup = args.get("reply_markup")
        if message["text"] == args["text"] and message.get("reply_markup") == markup:
            raise LookupError("Bad Request: message is not modified")
        message["text"] = args["text"]
        if markup:
            message["reply_markup"] = markup
        else:
            message.pop("reply_markup", None)
        return message

    async def _editMessageReplyMarkup(self, args: dict[str, Any]) -> Any:
        message = self._message(args)
        message["reply_markup"] = args.get("reply_markup")
        return message

    def _message(self, args: dict[str, Any]) -> dict[str, Any]:
        key = (int(args["chat_id"]), int(args["message_id"]))
        if key not in self.messages:
            raise LookupError("Bad Request: message to edit not found")
        return self.messages[key]

    async def _answerCallbackQuery(self, args: dict[str, Any]) -> Any:
        return True

    async def _createForumTopic(self, args: dict[str, Any]) -> Any:
        self._chat(args["chat_id"])
        return {"message_thread_id": next(self._topics), "name": args["name"], "icon_color": 7322096}

    async def _deleteWebhook(self, args: dict[str, Any]) -> Any:
        return True

    async def _setWebhook(self, args: dict[str, Any]) -> Any:
        return True

    async def _getUpdates(self, args: dict[str, Any]) -> Any:
        offset = int(args.get("offset", 0))
        timeout = float(args.get("timeout", 0))
        # Asking from an offset confirms everything before it: Telegram forgets it.
        self.updates = [update for update in self.updates if update["update_id"] >= offset]
        with anyio.move_on_after(timeout):
            while not self.updates and not self.closing:
                await self._changed.wait()
        return list(self.updates)


async def _arguments(request: web.Request) -> dict[str, Any]:
    if request.content_type == "application/json":
        data = await request.json()
        return data if isinstance(data, dict) else {}
    form = await request.post()
    args: dict[str, Any] = {}
    for key, value in form.items():
        text = value if isinstance(value, str) else ""
        args[key] = json.loads(text) if key in _JSON_FIELDS else text
    return args


@asynccontextmanager
async def fake_telegram() -> AsyncIterator[FakeTelegram]:
    """A FakeTelegram serving on a free loopback port; its `url` is the `api_url` to give the channel."""
    fake = FakeTelegram()
    app = web.Application()
    app.router.add_post("/bot{token}/{method}", fake._handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    fake.url = f"http://{host}:{port}"
    try:
        yield fake
    finally:
        fake.closing = True  # a long poll still waiting returns now, so the server stops at once
        fake._notify()
        await runner.cleanup()
