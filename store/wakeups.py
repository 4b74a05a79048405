"""Runners woken the moment their work is committed, not at their next poll.

A transaction that owes an e-mail (an outbox row inserted, or set pending again) or a Telegram
message (a notice row) names the runner that owes it (OUTBOX, NOTICES) on its SqlTx. Once it
has committed, the store sets that runner's event in this process (`Wakeups.fire`); on
PostgreSQL the transaction also sends NOTIFY on CHANNEL before its COMMIT, which PostgreSQL
delivers to every listener only if the COMMIT succeeds, and `listening` turns a notification
into the same event in every other process. The runners still poll (MANZOORI_POLL_SECONDS):
a notification lost while a listener reconnects costs at most one poll interval, never work.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
from collections.abc import AsyncIterator, Iterable
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)

OUTBOX, NOTICES = "outbox", "notices"
CHANNEL = "manzoori_wakeups"
# The listener's reconnection: capped exponential backoff with full jitter, in seconds.
FIRST_RETRY, LAST_RETRY = 0.5, 30.0


class Wakeups:
    """One event per runner in this process, set when work for it is committed."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def event(self, name: str) -> asyncio.Event:
        """The event `name`'s runner waits on between passes."""
        return self._events.setdefault(name, asyncio.Event())

    def fire(self, names: Iterable[str]) -> None:
        """Wake the runners named."""
        for name in names:
            self.event(name).set()


@contextlib.asynccontextmanager
async def listening(database_url: str, wakeups: Wakeups) -> AsyncIterator[None]:
    """On PostgreSQL: LISTEN on CHANNEL for the block's duration, on a connection of its own,
    firing `wakeups` for each notification; a lost connection is made again after a backoff.
    On SQLite (one process) nothing: the commit's own `fire` is all there is."""
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql":
        yield
        return
    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    task = asyncio.create_task(_listen(dsn, wakeups), name="wakeups-listener")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _listen(dsn: str, wakeups: Wakeups) -> None:
    """Listen until cancelled; whatever ends a connection, or stops one being made, is logged
    and followed by another after a capped, jittered backoff."""

    def notified(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
        wakeups.fire(payload.split(","))

    failures = 0
    while True:
        try:
            await _listen_once(dsn, wakeups, notified, again=failures > 0)
            failures = 0  # it listened, then lost the connection
        except Exception as error:  # refused, reset, timed out, closed: try again later
            failures += 1
            log.warning("wake-up listener: %s", error or type(error).__name__)
        delay = random.uniform(0, min(LAST_RETRY, FIRST_RETRY * 2**failures))  # noqa: S311
        await asyncio.sleep(delay)


async def _listen_once(dsn: str, wakeups: Wakeups, notified: Any, *, again: bool) -> None:
    """One connection: LISTEN on it until it is lost."""
    lost = asyncio.Event()
    conn = await asyncpg.connect(dsn)
    try:
        conn.add_termination_listener(functools.partial(_lost, lost))
        await conn.add_listener(CHANNEL, notified)
        if again:
            log.info("wake-up listener connected again")
        # Work committed while no one listened waits no longer than this pass.
        wakeups.fire((OUTBOX, NOTICES))
        await lost.wait()
        log.warning("wake-up listener lost its connection; connecting again")
    finally:
        with contextlib.suppress(Exception):
            await conn.close(timeout=2)


def _lost(lost: asyncio.Event, _conn: Any) -> None:
    """asyncpg's termination callback: the listening connection is gone."""
    lost.set()
