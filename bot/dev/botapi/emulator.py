"""The emulator: one Emulator class made of its sections' mixins, with its server thread."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import re
import threading
import time
from typing import TYPE_CHECKING, Any

import tornado.httpserver
import tornado.netutil
import tornado.web

from .core import HOST, TOKEN_RE
from .errors import ApiError, bad_request
from .faults import FaultsMixin
from .files import FilesMixin
from .http import ApiHandler, FileHandler, NotFoundHandler
from .inspection import InspectionMixin
from .params import Params, Result, canonical_name, scope_key
from .snapshots import ApiCall, WebhookResponse
from .state import UserRecord
from .updates import UpdatesMixin
from .users import EmulatedUser
from .webapps import check_web_app
from .webhook import WebhookMixin

if TYPE_CHECKING:
    from typing import TypeAlias

    import telegram
    from telegram.ext import ApplicationBuilder, ContextTypes, ExtBot, JobQueue

    # What ApplicationBuilder() is before a setter changes a type (PTB's InitApplicationBuilder).
    InitialBuilder: TypeAlias = ApplicationBuilder[
        ExtBot[None],
        ContextTypes.DEFAULT_TYPE,
        dict[Any, Any],
        dict[Any, Any],
        dict[Any, Any],
        JobQueue[ContextTypes.DEFAULT_TYPE],
    ]

MAX_UPLOAD_BYTES = 50 * 1024 * 1024


class Emulator(FilesMixin, UpdatesMixin, WebhookMixin, FaultsMixin, InspectionMixin):
    """A Telegram Bot API server on 127.0.0.1 with emulated users; see the package docstring.

    The constructor and the state are EmulatorCore's; each mixin is one section of the emulator.
    """

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Emulator:
        """Start the server thread on an ephemeral port; returns self."""
        if self._thread is not None:
            raise RuntimeError("the emulator is already started")
        self._thread = threading.Thread(target=self._thread_main, name="botapi-emulator")
        self._thread.daemon = True  # a test that forgets stop() must not hang the interpreter
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the Bot API emulator did not start within 10 s")
        if self._startup_error is not None:
            raise RuntimeError("the Bot API emulator failed to start") from self._startup_error
        return self

    def stop(self) -> None:
        """Close every connection, stop the server and join its thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop may already be closed
            loop.call_soon_threadsafe(self._begin_stop)
        thread.join(10)
        if thread.is_alive():
            raise RuntimeError("the Bot API emulator thread did not stop within 10 s")
        self._thread = None

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """For Bot(base_url=...) and ApplicationBuilder.base_url: PTB appends the token."""
        return f"http://{HOST}:{self.port}/bot"

    @property
    def base_file_url(self) -> str:
        """For Bot(base_file_url=...) and ApplicationBuilder.base_file_url."""
        return f"http://{HOST}:{self.port}/file/bot"

    def ptb_bot(self, **kwargs: Any) -> telegram.Bot:
        """A python-telegram-bot Bot pointed at the emulator."""
        import telegram  # here, not at the top: the emulator itself needs no PTB

        return telegram.Bot(
            self.token, base_url=self.base_url, base_file_url=self.base_file_url, **kwargs
        )

    def application_builder(self) -> InitialBuilder:
        """An ApplicationBuilder with token and both base URLs set."""
        from telegram.ext import ApplicationBuilder

        return (
            ApplicationBuilder()
            .token(self.token)
            .base_url(self.base_url)
            .base_file_url(self.base_file_url)
        )

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._loop_thread_id = threading.get_ident()
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to start(), which is waiting
            self._startup_error = exc
            self._ready.set()
        finally:
            tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _serve(self) -> None:
        self._stop_event = asyncio.Event()
        self._updates_event = asyncio.Event()
        app = tornado.web.Application(
            [
                (r"/bot([^/]*)/([^/]*)", ApiHandler, {"emu": self}),
                (r"/file/bot([^/]*)/(.+)", FileHandler, {"emu": self}),
            ],
            default_handler_class=NotFoundHandler,
            log_function=lambda handler: None,  # the call log replaces the access log
        )
        sockets = tornado.netutil.bind_sockets(0, HOST)
        self.port = sockets[0].getsockname()[1]
        self._server = tornado.httpserver.HTTPServer(app, max_body_size=MAX_UPLOAD_BYTES + 2**20)
        self._server.add_sockets(sockets)
        self._ready.set()
        await self._stop_event.wait()
        self._server.stop()
        self._wake()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._server.close_all_connections(), 5)

    def _begin_stop(self) -> None:
        with self._lock:
            if self._poller is not None:
                self._poller.closed = True
        if self._webhook_task is not None:
            self._webhook_task.cancel()
        assert self._stop_event is not None
        self._stop_event.set()

    # -- users ----------------------------------------------------------------------------------

    def user(
        self,
        user_id: int,
        first_name: str = "User",
        username: str | None = None,
        *,
        last_name: str | None = None,
        language_code: str | None = "en",
        started: bool = False,
    ) -> EmulatedUser:
        """The Telegram user with this id, created on first use (`started`: already /started)."""
        with self._lock:
            if user_id not in self._users:
                if user_id == self.bot_id or user_id <= 0:
                    raise ValueError(f"{user_id} cannot be a user id here")
                self._users[user_id] = UserRecord(
                    user_id, first_name, last_name, username, language_code, started=started
                )
                self._messages[user_id] = {}
                self._next_message_id[user_id] = 1
                self._user_handles[user_id] = EmulatedUser(self, user_id)
            return self._user_handles[user_id]

    # -- serving --------------------------------------------------------------------------------

    async def serve(
        self, token: str, method: str, params: Params, handler: ApiHandler | None
    ) -> Any:
        """Serve one API request (over HTTP from `handler`, or in a webhook's reply: None);
        returns the result or raises ApiError."""
        if not TOKEN_RE.match(token):
            raise ApiError(404, "Not Found")
        if token != self.token:
            raise ApiError(401, "Unauthorized")
        canonical = canonical_name(method)
        if canonical is None:
            with self._lock:
                self._unimplemented.append(method)
            raise ApiError(404, "Not Found")
        with self._lock:
            fault = self._take_fault(canonical, params)
        if fault is not None and fault.delay:
            await asyncio.sleep(fault.delay)
        if fault is not None and fault.error is not None and not fault.applied:
            raise fault.error
        if canonical == "getUpdates":
            assert handler is not None  # a webhook's reply cannot be one (_execute_reply)
            result = await self._get_updates(params, handler)
        else:
            with self._lock:
                self._check_flood(canonical, params)
                result = getattr(self, f"_m_{canonical}")(params)
                self._count_flood(canonical, params)
        if fault is not None and fault.error is not None:
            raise fault.error
        return result

    def record_call(self, call: ApiCall) -> int:
        """Append a call to the log; returns its index for `finish_call`."""
        with self._lock:
            self._calls.append(call)
            return len(self._calls) - 1

    def finish_call(self, index: int, **changes: Any) -> None:
        """Fill in the outcome of a logged call."""
        with self._lock:
            old = self._calls[index]
            self._calls[index] = ApiCall(
                **{**old.__dict__, "finished": time.monotonic(), **changes}
            )

    async def _execute_reply(self, answer: WebhookResponse) -> None:
        """A webhook's 2xx answer may carry one Bot API call as its JSON body ({"method": …,
        params…}); Telegram executes it as if the bot had sent it, and tells the bot nothing:
        one it cannot execute is dropped silently. It is logged with in_reply=True."""
        kind = answer.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "application/json" or not answer.body:
            return
        try:
            body = json.loads(answer.body)
        except ValueError:
            return
        if not isinstance(body, dict) or not isinstance(body.get("method"), str):
            return
        method = body.pop("method")
        params = Params(body, {}, True)
        canonical = canonical_name(method) or method
        index = self.record_call(
            ApiCall(canonical, params.logged(), {}, time.monotonic(), None, None, None, None,
                    in_reply=True)
        )  # fmt: skip
        try:
            if canonical == "getUpdates":
                raise bad_request("getUpdates can't be a webhook's reply")
            result = await self.serve(self.token, method, params, None)
        except ApiError as exc:
            self.finish_call(index, status=exc.code, description=exc.description)
            return
        if isinstance(result, Result):
            result = result.value
        self.finish_call(index, status=200, result=result)

    def record_internal_error(self, text: str) -> None:
        """Remember an emulator bug met while serving."""
        with self._lock:
            self._internal_errors.append(text)

    # -- bot identity and lifecycle methods -----------------------------------------------------

    def _m_getMe(self, p: Params) -> dict[str, Any]:
        return {
            **self._bot_user_json(),
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }

    def _m_logOut(self, p: Params) -> bool:
        return True

    def _m_close(self, p: Params) -> bool:
        return True

    # -- commands -------------------------------------------------------------------------------

    def _m_setMyCommands(self, p: Params) -> bool:
        commands = p.json_value("commands", "can't parse commands JSON object")
        if not isinstance(commands, list):
            raise bad_request('parameter "commands" is required')
        if len(commands) > 100:
            raise bad_request("too many commands specified")
        stored = []
        for item in commands:
            if not isinstance(item, dict):
                raise bad_request("can't parse BotCommand: expected an Object")
            command = str(item.get("command", "")).removeprefix("/")
            description = str(item.get("description", ""))
            if not re.fullmatch(r"[a-z0-9_]{1,32}", command):
                raise bad_request("BOT_COMMAND_INVALID")
            if not 1 <= len(description) <= 256:
                raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
            stored.append({"command": command, "description": description})
        self._commands[_commands_key(p)] = stored
        return True

    def _m_getMyCommands(self, p: Params) -> list[dict[str, str]]:
        return copy.deepcopy(self._commands.get(_commands_key(p), []))

    def _m_deleteMyCommands(self, p: Params) -> bool:
        self._commands.pop(_commands_key(p), None)
        return True

    # -- the menu button ------------------------------------------------------------------------

    def _m_setChatMenuButton(self, p: Params) -> bool:
        """A private chat's menu button (or, without chat_id, the default), checked as
        Telegram checks it: a MenuButton object of a known type; a web_app one with a text and
        a Web App URL the inline keyboard would take (webapps.check_web_app)."""
        chat_id = self._chat(p).id if p.has("chat_id") else None
        button = p.json_value("menu_button", "can't parse menu button JSON object")
        if button is None:
            button = {"type": "default"}
        if not isinstance(button, dict):
            raise bad_request("can't parse menu button JSON object")
        kind = button.get("type")
        if kind in ("default", "commands"):
            stored: dict[str, Any] = {"type": kind}
        elif kind == "web_app":
            text = button.get("text")
            if not isinstance(text, str) or not text.strip():
                raise bad_request("menu button text must be non-empty")
            check_web_app(button)
            stored = {"type": kind, "text": text, "web_app": {"url": button["web_app"]["url"]}}
        else:
            raise bad_request("unsupported menu button type")
        self._menu_buttons[chat_id] = stored
        return True

    def _m_getChatMenuButton(self, p: Params) -> dict[str, Any]:
        chat_id = self._chat(p).id if p.has("chat_id") else None
        found = self._menu_buttons.get(chat_id) or self._menu_buttons.get(None)
        return copy.deepcopy(found or {"type": "default"})


def _commands_key(p: Params) -> tuple[str, str]:
    """Where the *MyCommands methods keep a command list: its scope and language."""
    scope = p.json_value("scope", "can't parse BotCommandScope JSON object")
    return scope_key(scope), p.text("language_code") or ""
