"""Turns at SQLite's one write lock, taken in this process in order, button taps first.

SQLite lets one writer in at a time. Writers of one process that meet at the lock would
otherwise poll it (SQLite's busy handler sleeps and retries, with no queue), so a tap's short
write could lose the lock again and again to a runner's or a sheet's, and wait seconds. Here
the writers of a process queue for it instead: a write that is urgent (made for a tap, a
command or a message somebody waits to see answered; see `urgent`) goes before every waiting
write that is not (a sheet's submission, the runners' passes), and each kind waits in the
order it came. Writers of other processes still meet at SQLite's lock, with its busy
timeout. PostgreSQL locks rows, not the database, and needs none of this.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar

# Set for the handling of one update (bot.telegram.fairness) and seen by every write it makes.
_URGENT: ContextVar[bool] = ContextVar("urgent_writes", default=False)


@contextmanager
def urgent(flag: bool = True) -> Iterator[None]:
    """Writes made inside (in this task, and tasks it starts) go before non-urgent ones; with
    False, they wait their turn again (deliveries a tap starts, which nobody watches)."""
    token = _URGENT.set(flag)
    try:
        yield
    finally:
        _URGENT.reset(token)


class _Queue:
    """Whether the lock is taken, and who waits for it: urgent writers first, then the rest."""

    def __init__(self) -> None:
        self.taken = False
        self.urgent: deque[asyncio.Future[None]] = deque()
        self.others: deque[asyncio.Future[None]] = deque()

    def hand_over(self) -> None:
        """Give the turn to the next waiter still waiting, or free the lock."""
        for waiting in (self.urgent, self.others):
            while waiting:
                future = waiting.popleft()
                if not future.done():
                    future.set_result(None)  # `taken` stays True: it is theirs now
                    return
        self.taken = False


class WriteTurns:
    """One queue per event loop (a test or a CLI command may run several loops in turn)."""

    def __init__(self) -> None:
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold the process's turn to write for the duration of the block."""
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        if queue.taken:
            future = loop.create_future()
            (queue.urgent if _URGENT.get() else queue.others).append(future)
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    queue.hand_over()  # handed the turn just as it was cancelled: pass it on
                raise
        else:
            queue.taken = True
        try:
            yield
        finally:
            queue.hand_over()

    def waiting(self) -> int:
        """How many writers of the running loop wait for their turn (for tests)."""
        queue = self._queues.get(asyncio.get_running_loop())
        return 0 if queue is None else len(queue.urgent) + len(queue.others)
