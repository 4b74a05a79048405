"""Requests made at about the same time, handled together: the Approve taps of one burst are
decided in one transaction (bot.telegram.decisions.decide_taps), at a fraction of what each
costs alone.

A burst of taps reaches the bot in one getUpdates (or in webhook POSTs that arrive together),
and their handlers start over a few turns of the event loop. The first tap to ask starts a
task that lets the loop turn until no more asked in a turn, then handles what was asked, up to
`limit` at a time, and hands each asker its own result; whoever asks meanwhile is in the next
round. A lone tap waits a few loop turns, well under a millisecond.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from store.group_commit import urgent as urgent_writes

A = TypeVar("A")
R = TypeVar("R")

# Loop turns a round waits for more requests at most: a burst's handlers start over a few.
TURNS = 8


@dataclass(eq=False)
class Gathering(Generic[A, R]):
    """Gathers requests for `handle`, which gets a list and returns one result per request,
    in order; an error it raises is every asker's."""

    handle: Callable[[Sequence[A]], Awaitable[Sequence[R]]]
    limit: int = 64
    _waiting: list[tuple[A, asyncio.Future[R]]] = field(default_factory=list)
    _rounds: asyncio.Task[None] | None = None

    async def ask(self, request: A) -> R:
        """The result of `request`, handled with whatever else is asked at about this time."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[R] = loop.create_future()
        self._waiting.append((request, answer))
        if self._rounds is None:
            # A context of its own: it serves many taps, not the first one's log context.
            self._rounds = loop.create_task(
                self._run(), name="gathering", context=contextvars.Context()
            )
        # The round goes on for the others if this asker is cancelled.
        return await asyncio.shield(answer)

    async def _run(self) -> None:
        try:
            while self._waiting:
                await self._gathered()
                batch, self._waiting = self._waiting[: self.limit], self._waiting[self.limit :]
                try:
                    with urgent_writes():  # people wait for these answers
                        results = await self.handle([request for request, _ in batch])
                except BaseException as error:
                    for _, answer in batch:
                        if isinstance(error, asyncio.CancelledError):
                            answer.cancel()
                        else:
                            answer.set_exception(error)
                    if not isinstance(error, Exception):
                        raise
                    continue
                for (_, answer), result in zip(batch, results, strict=True):
                    answer.set_result(result)
        finally:
            self._rounds = None

    async def _gathered(self) -> None:
        """Let the loop turn while more requests come in each turn (TURNS at most)."""
        for _ in range(TURNS):
            if len(self._waiting) >= self.limit:
                return
            seen = len(self._waiting)
            await asyncio.sleep(0)
            if len(self._waiting) == seen:
                return
