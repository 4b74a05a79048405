"""The update queue: updates created, redelivered, confirmed, and long polling (getUpdates)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from typing import TYPE_CHECKING, Any

from .core import EmulatorCore
from .errors import GET_UPDATES_CONFLICT, WEBHOOK_ACTIVE_CONFLICT, ApiError
from .params import Params
from .state import PendingUpdate, Poll

if TYPE_CHECKING:
    from .http import ApiHandler

MAX_LONG_POLL = 50.0  # Telegram's own cap on getUpdates' timeout
# Update types getUpdates and webhooks leave out unless asked for by name.
OPT_IN_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})


class UpdatesMixin(EmulatorCore):
    """Queue updates for the bot and hand them out to getUpdates."""

    def _add_update(self, kind: str, payload: dict[str, Any]) -> int:
        update_id = next(self._update_ids)
        update = {"update_id": update_id, kind: payload}
        self._updates[update_id] = update
        allowed = self._allowed_updates
        wanted = kind in allowed if allowed else kind not in OPT_IN_UPDATES
        if not wanted:
            # Telegram does not even create updates of types the bot did not ask for.
            self._dropped.append(update_id)
        else:
            self._pending.append(PendingUpdate(update_id, update))
        self._notify()
        return update_id

    def inject_update(self, update: dict[str, Any]) -> int:
        """Queue a raw update (any type); its update_id is assigned here and returned."""
        kinds = [k for k in update if k != "update_id"]
        if len(kinds) != 1:
            raise ValueError("an update has exactly one field besides update_id")
        with self._lock:
            return self._add_update(kinds[0], copy.deepcopy(update[kinds[0]]))

    def redeliver(self, update_id: int) -> None:
        """Deliver this update once more, with the same update_id (a duplicate delivery)."""
        with self._lock:
            if update_id not in self._updates:
                raise LookupError(f"no update {update_id}")
            self._pending.append(
                PendingUpdate(update_id, copy.deepcopy(self._updates[update_id]), sticky=True)
            )
            self._notify()

    def update(self, update_id: int) -> dict[str, Any]:
        """The JSON of an update created earlier."""
        with self._lock:
            return copy.deepcopy(self._updates[update_id])

    @property
    def pending_update_ids(self) -> list[int]:
        """Updates not confirmed yet (getUpdates) or not delivered yet (webhook)."""
        with self._lock:
            return [p.update_id for p in self._pending]

    def handed_out(self, update_id: int) -> float | None:
        """When this update first went out to the bot, time.monotonic() (comparable with
        ApiCall.started and CallbackAnswer.at); None while it has not."""
        with self._lock:
            return self._handed_out.get(update_id)

    @property
    def dropped_update_ids(self) -> list[int]:
        """Updates that allowed_updates kept from being created."""
        with self._lock:
            return list(self._dropped)

    def _confirm(self, offset: int) -> None:
        if offset < 0:
            keep = -offset
            self._pending = self._pending[-keep:] if keep else []
            return
        self._pending = [p for p in self._pending if p.update_id >= offset or p.sticky]

    def _take(self, limit: int) -> list[dict[str, Any]]:
        batch = sorted(self._pending, key=lambda p: p.update_id)[:limit]
        now = time.monotonic()
        for pending in batch:
            pending.sticky = False
            self._handed_out.setdefault(pending.update_id, now)  # the first hand-out counts
        return [copy.deepcopy(p.payload) for p in batch]

    # -- getUpdates -----------------------------------------------------------------------------

    async def _get_updates(self, params: Params, handler: ApiHandler) -> list[dict[str, Any]]:
        with self._lock:
            if self._webhook is not None:
                raise ApiError(409, WEBHOOK_ACTIVE_CONFLICT)
            offset = params.integer("offset")
            limit = params.integer("limit") or 100
            limit = min(max(limit, 1), 100)
            timeout = min(max(params.number("timeout") or 0.0, 0.0), MAX_LONG_POLL)
            allowed = params.json_value("allowed_updates", "can't parse allowed updates JSON array")
            if allowed is not None:
                self._allowed_updates = tuple(allowed)
            if offset:
                self._confirm(offset)
            if self._poller is not None:
                self._poller.conflict = GET_UPDATES_CONFLICT
                self._notify()
            poll = Poll()
            self._poller = poll
        handler.poll = poll
        assert self._loop is not None
        deadline = self._loop.time() + timeout
        try:
            while True:
                with self._lock:
                    if poll.conflict:
                        raise ApiError(409, poll.conflict)
                    batch = self._take(limit)
                    remaining = deadline - self._loop.time()
                    if batch or remaining <= 0 or poll.closed:
                        return batch
                    event = self._updates_event
                assert event is not None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), remaining)
        finally:
            with self._lock:
                if self._poller is poll:
                    self._poller = None
