"""Scripted failures (fail_next, stall_next) and the automatic flood limiter."""

from __future__ import annotations

import math
from collections.abc import Iterable

from .core import EmulatorCore
from .errors import ApiError, server_error, too_many_requests
from .params import Params, canonical_name, int_or_none
from .state import Fault

# Methods the automatic flood limiter counts: the ones that put a new message in a chat.
FLOOD_COUNTED = frozenset({"sendMessage", "sendDocument"})


class FaultsMixin(EmulatorCore):
    """Failures a test scripts per method and chat, and 429s past a rate."""

    def fail_next(
        self,
        method: str,
        times: int = 1,
        *,
        status: int = 429,
        retry_after: int = 5,
        description: str | None = None,
        chat_id: int | None = None,
        applied: bool = False,
        delay: float = 0.0,
    ) -> None:
        """The next `times` calls of `method` ("*" for any), to `chat_id` if given, fail.

        429 comes with parameters.retry_after; 500 is the Bot API's JSON, 502/503/504 nginx's HTML
        page; other codes get `description`. `applied=True` does the work first and then fails, as
        when the answer is lost on the way back. `delay` waits before answering.
        """
        if status == 429:
            error = too_many_requests(retry_after)
        elif status >= 500 and description is None:
            error = server_error(status)
        else:
            error = ApiError(status, description or "Bad Request: emulated failure")
        self._script(method, times, chat_id, error, delay, applied)

    def stall_next(
        self, method: str, seconds: float, times: int = 1, *, chat_id: int | None = None
    ) -> None:
        """The next `times` calls of `method` wait `seconds` before being served normally.

        The work is done even if the client gave up (TimedOut), as on Telegram.
        """
        self._script(method, times, chat_id, None, seconds, False)

    def _script(
        self,
        method: str,
        times: int,
        chat_id: int | None,
        error: ApiError | None,
        delay: float,
        applied: bool,
    ) -> None:
        canonical = method if method == "*" else canonical_name(method)
        if canonical is None:
            raise ValueError(f"the emulator does not implement {method}")
        with self._lock:
            self._faults.append(Fault(canonical, chat_id, times, error, delay, applied))

    def clear_faults(self) -> None:
        """Forget every scripted failure not used yet."""
        with self._lock:
            self._faults.clear()

    def _take_fault(self, method: str, params: Params) -> Fault | None:
        chat_id = int_or_none(params.values.get("chat_id"))
        for fault in self._faults:
            if fault.method not in ("*", method):
                continue
            if fault.chat_id is not None and fault.chat_id != chat_id:
                continue
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.remove(fault)
            return fault
        return None

    def enable_flood_control(
        self,
        *,
        per_chat: int = 1,
        per_chat_window: float = 1.0,
        overall: int = 30,
        overall_window: float = 1.0,
        methods: Iterable[str] = FLOOD_COUNTED,
    ) -> None:
        """Answer 429 past `per_chat` messages per chat or `overall` in all chats per window."""
        with self._lock:
            self._flood = (
                per_chat,
                per_chat_window,
                overall,
                overall_window,
                frozenset(methods),
            )
            self._flood_log.clear()

    def disable_flood_control(self) -> None:
        """Switch the automatic flood limiter off."""
        with self._lock:
            self._flood = None

    def _check_flood(self, method: str, params: Params) -> None:
        if self._flood is None:
            return
        per_chat, chat_window, overall, overall_window, methods = self._flood
        if method not in methods:
            return
        chat_id = int_or_none(params.values.get("chat_id")) or 0
        now = self._now()
        horizon = max(chat_window, overall_window)
        while self._flood_log and self._flood_log[0][0] <= now - horizon:
            self._flood_log.popleft()
        in_chat = [t for t, c in self._flood_log if c == chat_id and t > now - chat_window]
        everywhere = [t for t, _ in self._flood_log if t > now - overall_window]
        waits = []
        if len(in_chat) >= per_chat:
            waits.append(in_chat[-per_chat] + chat_window - now)
        if len(everywhere) >= overall:
            waits.append(everywhere[-overall] + overall_window - now)
        if waits:
            raise too_many_requests(max(1, math.ceil(max(waits))))

    def _count_flood(self, method: str, params: Params) -> None:
        # Only messages that went out count: a request refused for its content sends nothing.
        if self._flood is not None and method in self._flood[4]:
            chat_id = int_or_none(params.values.get("chat_id")) or 0
            self._flood_log.append((self._now(), chat_id))
