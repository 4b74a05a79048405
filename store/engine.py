"""Async engines: SQLite tuned for several processes on one file, or PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

# Writers wait this long for SQLite's lock before giving up: longer than any transaction here.
SQLITE_BUSY_TIMEOUT_MS = 30_000


def make_engine(url: str, **kwargs: Any) -> AsyncEngine:
    """Create the engine for `url`, with SQLite pragmas and IMMEDIATE transactions."""
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": 30}, **kwargs)
        _tune_sqlite(engine)
        return engine
    return create_async_engine(url, pool_pre_ping=True, **kwargs)


def _tune_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN IMMEDIATE itself (see below).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=FULL")  # a commit survives power loss too
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(connection: Connection) -> None:
        # IMMEDIATE takes the write lock up front: two runners cannot both read a row as
        # pending and then both upgrade to write (SQLite's deferred-lock deadlock).
        connection.exec_driver_sql("BEGIN IMMEDIATE")
