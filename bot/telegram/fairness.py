"""Fair shares of the bot's attention: one person cannot occupy every handler, a button tap
never waits behind uploads, a stranger costs no database write and hears from us once per
period, one requester or approver has one slow export or sheet in flight at a time, and the process
reads one large sheet at a time.
What is not handled is said: a tap dropped is answered, and whoever has messages dropped is
told once (Dropped).

Everything here is per process and in memory: it bounds what one process spends on one
person; what must hold across processes (a decision counted once) is the database's job.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard

from telegram import Update
from telegram.ext import Application, BaseUpdateProcessor

from store.group_commit import urgent as urgent_writes

log = logging.getLogger(__name__)

# PTB's own semaphore is taken before do_process_update: this bound only keeps a runaway
# backlog finite; the real limits are the lanes and pools below.
BACKLOG = 100_000


@dataclass(frozen=True)
class Shares:
    """The limits of FairProcessor."""

    per_user: int = 2  # one person's updates in flight; the rest of theirs wait in order
    # One person's updates waiting or in flight beyond which more are dropped: no human taps
    # or sends that fast, and each waiting update holds memory.
    per_user_backlog: int = 64
    # Taps have their own pool so that slow uploads and sheets cannot hold the slot a tap
    # needs. Wide enough that a burst of taps is decided in one or two transactions
    # (decisions.decide_taps, which take one connection for all their taps), not in rounds
    # that each wait for the last one's answers: at 32, a hundred Approve taps took three
    # rounds and a p99 of 275–355 ms on PostgreSQL, at 64 two rounds and 210–277 ms. Taps that
    # take connections of their own (Details, Reject) hold them only for short reads, so
    # even 64 of those at once wait milliseconds for the database pool (store.engine).
    taps: int = 64
    messages: int = 6
    # Files (restock sheets) have a pool of their own too: a sheet holds up to 5 MB and its
    # table while it is read, checked and submitted, so this bounds the memory a burst of
    # uploads can take, and sheets waiting for it hold no slot a /status needs.
    files: int = 3
    # Seconds without a tap that make a pause (FairProcessor.between_taps): the taps of one
    # burst reach the bot in several getUpdates, with short gaps between them.
    pause: float = 0.05
    # Seconds a tap may wait behind its own sender's updates before it is dropped and answered
    # so: the phone shows a spinner until the answer, and someone who taps faster than their
    # taps are handled still hears within a second (the answer's round trip is the rest).
    tap_patience: float = 0.5
    # One person's updates waiting or in flight beyond which a tap of theirs is dropped at
    # once rather than after tap_patience: with two in flight, more than this could not be
    # handled in that time anyway, and a burst's answers are spread out, not all at its end.
    tap_backlog: int = 8


class Dropped(Protocol):
    """What the sender of an update that is not handled is told: a tap is always answered
    (its spinner turns until then); of a burst of messages, only the `first` dropped is
    answered, and a stranger's within the strangers' budget."""

    async def __call__(self, update: Update, *, first: bool) -> None: ...


class _Lane:
    """One sender's semaphore, and how many of their updates hold or wait for it."""

    def __init__(self, size: int) -> None:
        self.semaphore = asyncio.Semaphore(size)
        self.users = 0
        self.told = False  # of a message dropped: they hear of it once while the lane lives
        self.dropped = 0  # their updates dropped while the lane lives (logged at the first)


class FairProcessor(BaseUpdateProcessor):
    """Handles updates concurrently: per sender at most `per_user` at once (acquired first,
    so a waiting update holds no pool slot), then a slot of the pool of its kind: taps, files,
    or other messages. An update it drops goes to `dropped`, never silently."""

    def __init__(
        self,
        dropped: Dropped,
        shares: Shares = Shares(),
        finished: Callable[[object], None] | None = None,
    ) -> None:
        super().__init__(BACKLOG)
        self.shares = shares
        self._dropped = dropped
        self._finished = finished  # told of each tap whose handling ended (context.TapReplies)
        self._lanes: dict[Hashable, _Lane] = {}
        self._tapping = 0  # taps waiting or in flight
        self._taps_seen = 0  # taps ever started: a pause is a time in which this stays put
        self._last_tap_ended = -math.inf  # the event loop's time when the last tap ended
        self._no_taps = asyncio.Event()
        self._no_taps.set()
        self._taps = asyncio.BoundedSemaphore(shares.taps)
        self._messages = asyncio.BoundedSemaphore(shares.messages)
        self._files = asyncio.BoundedSemaphore(shares.files)

    @property
    def lanes(self) -> int:
        """Senders with an update waiting or in flight (the others cost no memory)."""
        return len(self._lanes)

    async def between_taps(self, patience: float, quiet: float | None = None) -> None:
        """Return once no tap waits or is being handled and none came for `quiet` seconds
        (Shares.pause unless given), or after `patience` seconds: work nobody watches (the
        card edits a tap owes) goes in the pauses between bursts of taps, and so never delays
        their answers, yet is not put off forever by a steady stream. When the last tap ended
        longer ago than that, it returns at once."""
        quiet = self.shares.pause if quiet is None else quiet
        since = asyncio.get_running_loop().time() - self._last_tap_ended
        if self._tapping == 0 and since >= quiet:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(patience):
                while True:
                    await self._no_taps.wait()
                    seen = self._taps_seen
                    await asyncio.sleep(quiet)
                    if self._tapping == 0 and self._taps_seen == seen:
                        return

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        """Wait for the sender's lane, then for the pool of the update's kind; then handle."""
        if not _is_tap(update):
            await self._process(update, coroutine)
            return
        self._tapping += 1
        self._taps_seen += 1
        self._no_taps.clear()
        try:
            await self._process(update, coroutine)
        finally:
            self._tapping -= 1
            self._last_tap_ended = asyncio.get_running_loop().time()
            if self._tapping == 0:
                self._no_taps.set()
            if self._finished is not None:
                self._finished(update)

    async def _process(self, update: object, coroutine: Awaitable[Any]) -> None:
        key = _sender(update)
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane(self.shares.per_user)
        backlog = self.shares.tap_backlog if _is_tap(update) else self.shares.per_user_backlog
        if lane.users >= backlog:
            await self._drop(update, coroutine, lane)
            self._forget(key, lane)
            return
        lane.users += 1
        try:
            if not await self._enter(update, lane):
                await self._drop(update, coroutine, lane)
                return
            try:
                async with self._pool(update):
                    if _is_file(update):
                        await coroutine
                    else:  # someone waits for the answer: its writes go first (group_commit)
                        with urgent_writes():
                            await coroutine
            finally:
                lane.semaphore.release()
        finally:
            lane.users -= 1
            self._forget(key, lane)

    async def _enter(self, update: object, lane: _Lane) -> bool:
        """Take a place in the sender's lane: a tap waits at most Shares.tap_patience for it
        (False: it did not get one), anything else as long as it takes."""
        if not _is_tap(update):
            await lane.semaphore.acquire()
            return True
        try:
            async with asyncio.timeout(self.shares.tap_patience):
                await lane.semaphore.acquire()
        except TimeoutError:
            return False
        return True

    async def _drop(self, update: object, coroutine: Awaitable[Any], lane: _Lane) -> None:
        """Close the handler that will not run and tell its sender (Dropped): every tap, and
        the first message while the lane lives."""
        _discard(coroutine)
        lane.dropped += 1
        if lane.dropped == 1:  # once per burst: a flood must not flood the log too
            log.warning("a sender's updates dropped, with %s waiting or in flight", lane.users)
        if not isinstance(update, Update):
            return
        first = not _is_tap(update) and not lane.told
        lane.told = lane.told or first
        if _is_tap(update) or first:
            try:
                await self._dropped(update, first=first)
            except Exception:  # the store or Telegram is down: the next update is still handled
                log.warning("sender of dropped update %s not told", update.update_id, exc_info=True)

    def _pool(self, update: object) -> asyncio.BoundedSemaphore:
        if _is_tap(update):
            return self._taps
        if _is_file(update):
            return self._files
        return self._messages

    def _forget(self, key: Hashable, lane: _Lane) -> None:
        """Drop an idle lane, so that a stranger's one update leaves nothing behind."""
        if lane.users == 0 and self._lanes.get(key) is lane:
            del self._lanes[key]

    async def initialize(self) -> None:
        """Nothing to allocate: lanes come and go with their senders."""

    async def shutdown(self) -> None:
        """Nothing to free: the application awaits the updates still in flight."""


def _is_tap(update: object) -> TypeGuard[Update]:
    """Whether the update is a button tap, which somebody is watching a spinner for."""
    return isinstance(update, Update) and update.callback_query is not None


def _is_file(update: object) -> bool:
    """Whether the update carries a file (a restock sheet): bulk work, not a quick answer."""
    return isinstance(update, Update) and bool(update.message and update.message.document)


def _sender(update: object) -> Hashable:
    """Who an update comes from: the user, else the chat; everything else shares one lane."""
    if isinstance(update, Update):
        if update.effective_user is not None:
            return ("user", update.effective_user.id)
        if update.effective_chat is not None:
            return ("chat", update.effective_chat.id)
    return ("other",)


def _discard(coroutine: Awaitable[Any]) -> None:
    """Close a handler coroutine that will never run (no "never awaited" warning)."""
    close = getattr(coroutine, "close", None)
    if close is not None:
        close()


class Recently:
    """Keys seen within `period` seconds, at most `cap` of them (the oldest go first): bounded
    memory however many strangers write."""

    def __init__(self, period: float, cap: int) -> None:
        self.period, self.cap = period, cap
        self._seen: OrderedDict[Hashable, float] = OrderedDict()

    def seen(self, key: Hashable, now: float) -> bool:
        """Whether `key` was noted in the last period."""
        while self._seen and next(iter(self._seen.values())) <= now - self.period:
            self._seen.popitem(last=False)  # expired: insertion order is time order
        return key in self._seen

    def note(self, key: Hashable, now: float) -> None:
        """Remember `key` as seen at `now`, forgetting the oldest beyond `cap`."""
        self._seen.pop(key, None)
        self._seen[key] = now
        if len(self._seen) > self.cap:
            self._seen.popitem(last=False)

    def __len__(self) -> int:
        return len(self._seen)


class Budget:
    """At most `count` uses in any `period` seconds, shared by everyone."""

    def __init__(self, count: int, period: float) -> None:
        self.count, self.period = count, period
        self._uses: deque[float] = deque()

    def take(self, now: float) -> bool:
        """Use one if any is left in the window ending at `now`."""
        while self._uses and self._uses[0] <= now - self.period:
            self._uses.popleft()
        if len(self._uses) >= self.count:
            return False
        self._uses.append(now)
        return True


class InFlight:
    """Keys of work under way in this process: a second start of the same work is refused."""

    def __init__(self) -> None:
        self._keys: set[Hashable] = set()

    @contextmanager
    def hold(self, key: Hashable) -> Iterator[bool]:
        """Yield True and hold `key` until the block ends; False if it is held already."""
        if key in self._keys:
            yield False
            return
        self._keys.add(key)
        try:
            yield True
        finally:
            self._keys.discard(key)

    def __len__(self) -> int:
        return len(self._keys)


class Lru:
    """A bounded mapping that forgets the least recently used entry first."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._items: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any | None:
        """The value, now the most recently used; None if absent."""
        if key not in self._items:
            return None
        self._items.move_to_end(key)
        return self._items[key]

    def put(self, key: Hashable, value: Any) -> None:
        """Keep `value`, forgetting the least recently used entry beyond `cap`."""
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.cap:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


# A stranger hears the refusal once in this long; the rest of what they send is dropped.
STRANGER_PERIOD = 600.0
# Strangers remembered at once; beyond that the oldest may hear the refusal again (memory
# stays bounded under a flood of new accounts).
STRANGER_CAP = 10_000
# Refusals to strangers in all, per STRANGER_WINDOW seconds: every message the bot sends
# passes one rate limiter (30 a second), and a flood of new accounts must not spend the
# share that approval cards need; beyond it strangers are not answered at all.
STRANGER_REPLIES = 10
STRANGER_WINDOW = 10.0
# Details files remembered by Telegram file_id: a few hundred open POs' worth of ids.
DETAILS_FILES = 512
# Seconds the roles and language of a sender whose updates were dropped are remembered: a
# burst of a hundred dropped taps costs one read, not a hundred, and a role or language
# changed meanwhile shows within the minute.
OVERRUN_MEMORY = 60.0


@dataclass
class Guards:
    """The per-process state of the fair shares, kept in the handlers' Deps."""

    strangers: Recently = field(default_factory=lambda: Recently(STRANGER_PERIOD, STRANGER_CAP))
    stranger_replies: Budget = field(
        default_factory=lambda: Budget(STRANGER_REPLIES, STRANGER_WINDOW)
    )
    sheets: InFlight = field(default_factory=InFlight)  # requester ids
    # Large sheets are downloaded, read and submitted one at a time (bot.telegram.orders)
    large_sheets: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))
    details: InFlight = field(default_factory=InFlight)  # (approver id, job id, version)
    # (job id, version) -> DetailsFile, so later taps resend by file_id
    details_files: Lru = field(default_factory=lambda: Lru(DETAILS_FILES))
    # user id -> (time.monotonic(), the read of their roles and translator) of senders whose
    # updates were dropped (context.tell_dropped), for OVERRUN_MEMORY seconds
    overrun: Lru = field(default_factory=lambda: Lru(STRANGER_CAP))


async def taps_paused(
    app: Application[Any, Any, Any, Any, Any, Any], patience: float, quiet: float | None = None
) -> None:
    """Return once `app`'s taps pause (FairProcessor.between_taps, `quiet` seconds) or after
    `patience` seconds; at once when it does not process updates with a FairProcessor."""
    processor = app.update_processor
    if isinstance(processor, FairProcessor):
        await processor.between_taps(patience, quiet)
