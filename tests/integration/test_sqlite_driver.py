"""store.sqlite_driver on a real SQLite file: statements run on the event loop, and only what
may wait (another process's write lock, the fsync of a commit that wrote, a big executemany)
runs in the driver's thread, while the loop goes on."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest
from sqlalchemy import text

from core.approval.policies import Role
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, T0
from tests.helpers.store import DATA_KEY

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


def _path(db_url: str) -> str:
    return db_url.removeprefix("sqlite+aiosqlite:///")


async def _traced(store: SqlStore) -> list[tuple[str, str]]:
    """Make the pool's one connection record (statement, thread it ran in) from now on."""
    seen: list[tuple[str, str]] = []
    async with store.engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection.raw
        raw.set_trace_callback(lambda sql: seen.append((sql, threading.current_thread().name)))
    return seen


def _thread_of(seen: list[tuple[str, str]], statement: str) -> str:
    return next(thread for sql, thread in seen if sql.startswith(statement))


async def test_statements_run_on_the_loop_and_a_commit_that_wrote_in_the_thread(
    db_url: str,
) -> None:
    store = SqlStore(make_engine(db_url, pool_size=1, max_overflow=0), DATA_KEY)
    try:
        seen = await _traced(store)
        async with store.begin() as tx:
            await tx.grant(APPROVER_A, Role.APPROVER, "test", T0)
        main = threading.current_thread().name
        assert _thread_of(seen, "BEGIN IMMEDIATE") == main  # the lock was free: taken at once
        assert _thread_of(seen, "INSERT INTO user_roles") == main
        assert _thread_of(seen, "COMMIT").startswith("sqlite")  # the fsync waits off the loop
        seen.clear()
        async with store.reading() as tx:
            assert await tx.roles(APPROVER_A) == {Role.APPROVER}
        assert _thread_of(seen, "COMMIT") == main  # a read commits nothing to disk
    finally:
        await store.close()


async def test_a_held_write_lock_is_waited_for_while_the_loop_goes_on(db_url: str) -> None:
    holder = sqlite3.connect(_path(db_url), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    store = SqlStore(make_engine(db_url, busy_timeout_ms=5_000), DATA_KEY)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    async def grant() -> bool:
        async with store.begin() as tx:
            return await tx.grant(APPROVER_A, Role.APPROVER, "test", T0)

    ticker = asyncio.create_task(tick())
    try:
        writer = asyncio.create_task(grant())
        await asyncio.sleep(0.3)
        assert not writer.done()  # waiting for the lock...
        assert ticks >= 10  # ...and the loop was not blocked meanwhile
        holder.rollback()
        assert await asyncio.wait_for(writer, 5)
        async with store.engine.connect() as conn:  # the busy timeout is back for later waits
            raw = (await conn.get_raw_connection()).driver_connection.raw
            assert raw.execute("PRAGMA busy_timeout").fetchone() == (5_000,)
    finally:
        ticker.cancel()
        holder.close()
        await store.close()


async def test_a_big_executemany_runs_in_the_thread(db_url: str) -> None:
    engine = make_engine(db_url, pool_size=1, max_overflow=0)
    try:
        async with engine.connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection.raw
            threads: list[str] = []
            raw.set_trace_callback(lambda sql: threads.append(threading.current_thread().name))
            await conn.execute(text("CREATE TEMP TABLE numbers (n INTEGER)"))
            threads.clear()
            await conn.execute(
                text("INSERT INTO numbers VALUES (:n)"), [{"n": n} for n in range(3)]
            )
            small = set(threads)
            threads.clear()
            await conn.execute(
                text("INSERT INTO numbers VALUES (:n)"), [{"n": n} for n in range(1_000)]
            )
            assert small == {threading.current_thread().name}
            assert {name[:6] for name in threads} == {"sqlite"}
            count = (await conn.execute(text("SELECT count(*) FROM numbers"))).scalar_one()
            assert count == 1_003
    finally:
        await engine.dispose()
