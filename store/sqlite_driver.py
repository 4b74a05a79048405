"""A SQLite connection for SQLAlchemy's aiosqlite dialect that runs short statements on the
event loop and only the calls that wait off it.

aiosqlite runs every call in a thread of its own connection and hands the result back across
the loop: four hand-overs per statement (cursor, execute, fetch, close), about 150 µs each on
a small machine, against some 10 µs for the statement itself. A use case makes dozens of
statements, so a tap spent most of its time passing the GIL between two threads.

Here a statement runs where it is issued; it reads or writes pages in SQLite's cache and
returns in microseconds. Two calls may wait, and those go to a thread so that the loop keeps
answering taps meanwhile:

    BEGIN IMMEDIATE   waits up to busy_timeout for the write lock another process holds
                      (tried on the loop first without waiting: a hand-over costs more than
                      taking a free lock)
    COMMIT            of a transaction that wrote: fsyncs the WAL (synchronous=FULL)

plus opening and closing the file and any executemany of many rows (a 10,000-line sheet).
A read transaction never waits in WAL mode, and its COMMIT writes nothing.

One SQLAlchemy connection is used by one task at a time, so the sqlite3 connection is never
used by two threads at once (check_same_thread=False only allows the hand-over).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# executemany of more parameter sets than this goes to the thread: it takes milliseconds.
_INLINE_MANY = 64


class Cursor:
    """The part of aiosqlite's Cursor SQLAlchemy's adapter uses, each call already done."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._cursor = connection.raw.cursor()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Cursor:
        self._cursor.execute(sql, parameters)  # the one statement that waits is Connection.begin's
        return self

    async def executemany(self, sql: str, parameters: Iterable[Sequence[Any]]) -> Cursor:
        rows = list(parameters)
        if len(rows) > _INLINE_MANY:
            await self._connection.off_loop(self._cursor.executemany, sql, rows)
        else:
            self._cursor.executemany(sql, rows)
        return self

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int) -> list[Any]:
        return self._cursor.fetchmany(size)

    async def close(self) -> None:
        self._cursor.close()


class Connection:
    """The part of aiosqlite's Connection SQLAlchemy's adapter uses."""

    def __init__(
        self, raw: sqlite3.Connection, executor: ThreadPoolExecutor, timeout: float
    ) -> None:
        self.raw = raw
        self._executor = executor
        self._busy_timeout_ms = int(timeout * 1000)
        self._changes_at_begin = raw.total_changes
        self._query_only = False

    async def begin(self, *, reading: bool) -> None:
        """Open a transaction: deferred and query_only to read (under WAL it takes no lock a
        writer waits for, and a write in it fails at once instead of upgrading), IMMEDIATE to
        write (the write lock up front: two runners cannot both read a row as pending and
        then both upgrade, SQLite's deferred-lock deadlock). Run on the raw connection: two
        or three statements that take microseconds, not a trip through the engine each."""
        if reading:
            self.raw.execute("BEGIN")
            self._set_query_only(True)
            return
        self._set_query_only(False)  # a pooled connection may have been a reader's
        if not self._lock_now():
            await self.off_loop(self.raw.execute, "BEGIN IMMEDIATE")

    def _set_query_only(self, on: bool) -> None:
        if self._query_only != on:
            self.raw.execute(f"PRAGMA query_only={'ON' if on else 'OFF'}")
            self._query_only = on

    def _lock_now(self) -> bool:
        """BEGIN IMMEDIATE if the write lock is free now; False, with nothing done, if another
        connection holds it (then begin waits for it off the loop)."""
        self.raw.execute("PRAGMA busy_timeout=0")
        try:
            self.raw.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                raise
            return False
        finally:
            self.raw.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
        return True

    async def off_loop(self, call: Callable[..., T], *args: Any) -> T:
        """Run a call that may wait in the driver's thread; the loop goes on meanwhile."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, call, *args)

    @property
    def isolation_level(self) -> str | None:
        return self.raw.isolation_level

    async def cursor(self) -> Cursor:
        return Cursor(self)

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Cursor:
        return await (await self.cursor()).execute(sql, parameters)

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self.raw.create_function(*args, **kwargs)

    async def commit(self) -> None:
        # Only a transaction that changed rows has anything to make durable.
        if self.raw.in_transaction and self.raw.total_changes != self._changes_at_begin:
            await self.off_loop(self.raw.commit)
        else:
            self.raw.commit()
        self._changes_at_begin = self.raw.total_changes

    async def rollback(self) -> None:
        self.raw.rollback()
        self._changes_at_begin = self.raw.total_changes

    async def close(self) -> None:
        await self.off_loop(self.raw.close)

    def stop(self) -> None:
        """Close at once (SQLAlchemy's terminate)."""
        self.raw.close()


def connector(
    path: str, timeout: float, executor: ThreadPoolExecutor, **kwargs: Any
) -> Callable[[], Any]:
    """SQLAlchemy's async_creator for a SQLite file: connections in autocommit mode (the
    engine's "begin" event issues BEGIN), usable across the loop and the driver's thread."""

    async def connect() -> Connection:
        loop = asyncio.get_running_loop()
        raw = await loop.run_in_executor(
            executor,
            lambda: sqlite3.connect(
                path, timeout=timeout, isolation_level=None, check_same_thread=False, **kwargs
            ),
        )
        return Connection(raw, executor, timeout)

    return connect
