"""Async engines: SQLite tuned for several processes on one file, or PostgreSQL; and the one
table that says which database errors mean "busy, try again" (core.errors.StoreBusy)."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.util import await_only

from store import sqlite_driver

# A writer waits this long for SQLite's one write lock before it gives up with StoreBusy.
# core.jobs.transitions.retry_on_stale then runs the use case again (BUSY_ATTEMPTS in all), so a tap
# blocked behind a long writer is answered within 3 x 4 s = 12 s: inside the 15 s Telegram
# leaves a button's spinner up, and far longer than any write transaction here takes.
SQLITE_BUSY_TIMEOUT_MS = 4_000
# The execution option SqlStore.reading() sets on its connection: a read-only transaction.
READING = "manzoori_reading"

# SQLite's primary result codes for "another connection holds the lock" (an extended code,
# such as SQLITE_BUSY_SNAPSHOT, carries its primary code in the low byte).
_SQLITE_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
# Threads per SQLite engine for the calls that wait (store.sqlite_driver): one commits or
# waits for the write lock while another opens or closes a file.
_SQLITE_THREADS = 2
# Connections an engine keeps open, and how many more it opens for a burst. Every handler in
# flight may hold one (bot.telegram.fairness.Shares: taps, messages and files, 41 in all),
# and the runners a few more: SQLAlchemy's default of 5 kept, with its 10 overflow, made a
# burst of taps open a connection and close it again for most of their transactions (on
# PostgreSQL a new backend each, on SQLite a file opened and closed in the driver's thread).
POOL_SIZE = 32
POOL_OVERFLOW = 16
# PostgreSQL's SQLSTATEs for a transaction it aborted for the others' sake, not for its own
# content: serialization_failure, deadlock_detected, lock_not_available.
_POSTGRES_BUSY_STATES = frozenset({"40001", "40P01", "55P03"})


def make_engine(
    url: str, *, busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS, **kwargs: Any
) -> AsyncEngine:
    """Create the engine for `url`: on SQLite with WAL, IMMEDIATE write transactions, deferred
    read-only ones, `busy_timeout_ms` of waiting for the write lock, and statements run on the
    loop (store.sqlite_driver)."""
    kwargs = {"pool_size": POOL_SIZE, "max_overflow": POOL_OVERFLOW, **kwargs}
    if url.startswith("sqlite"):
        path = make_url(url).database or ""
        executor = ThreadPoolExecutor(_SQLITE_THREADS, thread_name_prefix="sqlite")
        connect = sqlite_driver.connector(path, busy_timeout_ms / 1000, executor)
        engine = create_async_engine(url, async_creator=connect, **kwargs)
        _tune_sqlite(engine, busy_timeout_ms)
        return engine
    return create_async_engine(url, pool_pre_ping=True, **kwargs)


def is_busy(error: DBAPIError) -> bool:
    """Whether a database error means only "not now": the lock was held, or PostgreSQL
    aborted the transaction to break a deadlock or a serialization conflict."""
    code = getattr(error.orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _SQLITE_BUSY_CODES
    return getattr(error.orig, "sqlstate", None) in _POSTGRES_BUSY_STATES


def _tune_sqlite(engine: AsyncEngine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # The connection is in autocommit mode: the "begin" event issues BEGIN (see below).
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=FULL")  # a commit survives power loss too
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(connection: Connection) -> None:
        # The driver opens the transaction itself (store.sqlite_driver.Connection.begin).
        driver = connection.connection.driver_connection
        assert isinstance(driver, sqlite_driver.Connection)
        reading = bool(connection.get_execution_options().get(READING))
        try:
            await_only(driver.begin(reading=reading))
        except sqlite3.Error as error:  # wrapped as the engine wraps a statement's errors
            raise DBAPIError.instance("BEGIN", (), error, sqlite3.Error) from error
