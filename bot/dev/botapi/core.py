"""The state every part of the emulator shares, its clock, and waking whoever waits for updates."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .snapshots import ApiCall, StoredFile, WebhookDelivery, WebhookInfo
from .state import Fault, MessageRecord, PendingUpdate, Poll, QueryRecord, UserRecord

if TYPE_CHECKING:
    import tornado.httpserver

    from .users import EmulatedUser

HOST = "127.0.0.1"
TOKEN_RE = re.compile(r"^\d{1,20}:[A-Za-z0-9_-]{35}$")


class EmulatorCore:
    """The emulator's state and clock; the mixins of Emulator add the sections that use them."""

    def __init__(
        self,
        *,
        token: str | None = None,
        bot_username: str = "manzoori_test_bot",
        bot_first_name: str = "Manzoori",
        callback_query_timeout: float = 15.0,
        strict_ampersand: bool = True,
        first_update_id: int = 1,
        webhook_retry_delay: float = 0.2,
        webhook_timeout: float = 10.0,
    ) -> None:
        bot_id = 7_000_000_000 + secrets.randbelow(999_999_999)
        if token is None:
            alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
            token = f"{bot_id}:AA" + "".join(secrets.choice(alphabet) for _ in range(33))
        if not TOKEN_RE.match(token):
            raise ValueError("token must look like Telegram's: '<digits>:<35 characters>'")
        self.token = token
        self.bot_id = int(token.split(":", 1)[0])
        self.bot_username = bot_username
        self.bot_first_name = bot_first_name
        self.callback_query_timeout = callback_query_timeout
        self.strict_ampersand = strict_ampersand
        self.webhook_retry_delay = webhook_retry_delay
        self.webhook_timeout = webhook_timeout
        # The CA an https webhook's certificate must chain to (a PEM file: the test's own
        # proxy's, say); None: the system's. Telegram checks it too, or takes a self-signed one.
        self.webhook_ca: str | None = None
        self.port = 0

        self._lock = threading.RLock()
        self._clock_offset = 0.0
        self._users: dict[int, UserRecord] = {}
        self._user_handles: dict[int, EmulatedUser] = {}
        self._messages: dict[int, dict[int, MessageRecord]] = {}  # chat id -> message id -> message
        self._next_message_id: dict[int, int] = {}
        self._update_ids = itertools.count(first_update_id)
        self._updates: dict[int, dict[str, Any]] = {}  # every update ever created, by id
        self._pending: list[PendingUpdate] = []
        # update id -> when it first went out to the bot (getUpdates answered with it, or its
        # webhook POST began), time.monotonic(): where a latency the bot is to blame for starts.
        self._handed_out: dict[int, float] = {}
        self._dropped: list[int] = []  # updates not created because allowed_updates left them out
        self._allowed_updates: tuple[str, ...] | None = None
        self._queries: dict[str, QueryRecord] = {}
        self._files: dict[str, StoredFile] = {}
        self._file_paths: dict[str, str] = {}  # file_path -> file_id
        self._file_counter = itertools.count(1)
        self._commands: dict[tuple[str, str], list[dict[str, str]]] = {}
        # chat id (None: the bot's default) -> the MenuButton setChatMenuButton stored
        self._menu_buttons: dict[int | None, dict[str, Any]] = {}
        self._calls: list[ApiCall] = []
        self._unimplemented: list[str] = []
        self._internal_errors: list[str] = []
        self._faults: list[Fault] = []
        self._flood: tuple[int, float, int, float, frozenset[str]] | None = None
        self._flood_log: deque[tuple[float, int]] = deque()
        self._webhook: WebhookInfo | None = None
        self._webhook_deliveries: list[WebhookDelivery] = []
        self._webhook_last_error: tuple[int, str] | None = None
        self._webhook_task: asyncio.Task[None] | None = None
        self._poller: Poll | None = None

        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread_id: int | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._stop_event: asyncio.Event | None = None
        self._updates_event: asyncio.Event | None = None
        self._server: tornado.httpserver.HTTPServer | None = None

    # -- waking waiters -------------------------------------------------------------------------

    def _wake(self) -> None:
        """Wake every long poll and the webhook sender (runs on the emulator's loop)."""
        if self._updates_event is not None:
            self._updates_event.set()
            self._updates_event = asyncio.Event()

    def _notify(self) -> None:
        """Wake waiters from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if threading.get_ident() == self._loop_thread_id:
            self._wake()
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._wake)

    @contextlib.contextmanager
    def at_once(self) -> Iterator[None]:
        """Updates made inside the block (taps, messages) reach the bot together, in one
        getUpdates answer or one round of webhook POSTs, as a burst reaches it from Telegram:
        none of them is handed out before the block ends."""
        with self._lock:
            yield

    # -- clock ----------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move the emulator's clock forward: callback queries age, message dates move."""
        with self._lock:
            self._clock_offset += seconds

    def _now(self) -> float:
        return time.monotonic() + self._clock_offset

    def _wall(self) -> float:
        return time.time() + self._clock_offset

    # -- the bot --------------------------------------------------------------------------------

    def _bot_user_json(self) -> dict[str, Any]:
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": self.bot_first_name,
            "username": self.bot_username,
        }
