"""What a test inspects: snapshots of messages, files, taps and calls; `wait_for`."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable
from typing import Any, TypeVar

from .core import EmulatorCore
from .params import canonical_name, scope_key
from .snapshots import (
    ApiCall,
    CallbackAnswer,
    CallbackQuery,
    Message,
    StoredFile,
    WebhookDelivery,
    WebhookInfo,
)

T = TypeVar("T")


class InspectionMixin(EmulatorCore):
    """Read-only views for tests, each taken under the lock."""

    @property
    def calls(self) -> list[ApiCall]:
        """Every request so far, oldest first."""
        with self._lock:
            return list(self._calls)

    def calls_to(self, method: str) -> list[ApiCall]:
        """The requests of one method (canonical name, any case)."""
        canonical = canonical_name(method) or method
        return [c for c in self.calls if c.method == canonical]

    @property
    def unimplemented_calls(self) -> list[str]:
        """Methods the bot called that the emulator does not implement (answered 404)."""
        with self._lock:
            return list(self._unimplemented)

    def clear_unimplemented_calls(self) -> None:
        """Forget them, for a test that calls an unknown method on purpose."""
        with self._lock:
            self._unimplemented.clear()

    @property
    def internal_errors(self) -> list[str]:
        """Emulator bugs met while serving (answered 500); a fixture should assert none."""
        with self._lock:
            return list(self._internal_errors)

    def messages(self, chat_id: int, *, from_bot: bool | None = True) -> list[Message]:
        """Messages of a chat, oldest first: the bot's by default, deleted ones included."""
        with self._lock:
            msgs = self._messages.get(chat_id, {}).values()
            return [m.snapshot() for m in msgs if from_bot is None or m.from_bot == from_bot]

    def message(self, chat_id: int, message_id: int) -> Message:
        """One message as it is now."""
        with self._lock:
            try:
                return self._messages[chat_id][message_id].snapshot()
            except KeyError:
                raise LookupError(f"no message {message_id} in chat {chat_id}") from None

    def last_message(self, chat_id: int) -> Message | None:
        """The bot's latest message in a chat, if any."""
        sent = self.messages(chat_id)
        return sent[-1] if sent else None

    def documents(self, chat_id: int | None = None) -> list[Message]:
        """The bot's messages that carry a document (`.document.data`, `.document.file_name`)."""
        with self._lock:
            chats = [chat_id] if chat_id is not None else list(self._messages)
            return [
                m.snapshot()
                for c in chats
                for m in self._messages.get(c, {}).values()
                if m.from_bot and m.document is not None
            ]

    def file(self, file_id: str) -> StoredFile:
        """A stored file by file_id."""
        with self._lock:
            return self._files[file_id]

    def callback_query(self, query_id: str) -> CallbackQuery:
        """A tap and its answer, if any."""
        with self._lock:
            return self._queries[query_id].snapshot()

    def callback_answer(self, query_id: str) -> CallbackAnswer | None:
        """The bot's answer to a tap, or None while unanswered."""
        with self._lock:
            return self._queries[query_id].answer

    @property
    def callback_answers(self) -> list[CallbackAnswer]:
        """Every answered callback query, in the order of the taps."""
        with self._lock:
            return [q.answer for q in self._queries.values() if q.answer is not None]

    def commands(
        self, scope: dict[str, Any] | None = None, language_code: str = ""
    ) -> list[dict[str, str]]:
        """What setMyCommands stored for a scope (default scope by default) and language."""
        with self._lock:
            return copy.deepcopy(self._commands.get((scope_key(scope), language_code), []))

    def menu_button(self, chat_id: int) -> dict[str, Any]:
        """The menu button a chat shows: its own (setChatMenuButton), else the default."""
        with self._lock:
            found = self._menu_buttons.get(chat_id) or self._menu_buttons.get(None)
            return copy.deepcopy(found or {"type": "default"})

    @property
    def webhook(self) -> WebhookInfo | None:
        """The webhook set, or None."""
        with self._lock:
            return self._webhook

    @property
    def webhook_deliveries(self) -> list[WebhookDelivery]:
        """Every POST of an update to the webhook, with the bot's answer."""
        with self._lock:
            return list(self._webhook_deliveries)

    async def wait_for(
        self, predicate: Callable[[], T | None], timeout: float = 5.0, *, interval: float = 0.01
    ) -> T:
        """Await until `predicate()` is truthy and return it (never None); the bot runs meanwhile.

        On timeout raises AssertionError with the last API calls, to show what the bot did.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                recent = "\n".join(
                    f"  {c.method} {c.status} {c.description or ''}" for c in self.calls[-10:]
                )
                raise AssertionError(f"condition not met within {timeout} s; last calls:\n{recent}")
            await asyncio.sleep(interval)
