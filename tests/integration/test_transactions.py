"""Short transactions, on SQLite and PostgreSQL: a read-only transaction is never held up by a
writer and cannot write; a writer kept waiting past the busy timeout by a REAL lock (another
connection holding it) becomes StoreBusy, which the use cases retry a bounded number of times."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from core.approval import opening
from core.approval.policies import Role, Rules
from core.errors import StoreBusy
from core.jobs.transitions import BUSY_ATTEMPTS
from store.engine import is_busy, make_engine
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, OUTSIDER, REQUESTER, T0, make_draft, new_job
from tests.helpers.store import DATA_KEY

# Short, so a test that waits the timeout out three times takes well under a second.
SHORT_BUSY_MS = 100


def sqlite_path(db_url: str) -> str:
    """The file of a sqlite+aiosqlite URL."""
    return db_url.removeprefix("sqlite+aiosqlite:///")


@dataclass
class LockHolder:
    """Another connection holding the database's write lock (on PostgreSQL: user_roles locked
    against writers, which is what a grant needs), until `release` (SQLite) or the end."""

    release_now: Callable[[], None] | None = None

    def release(self) -> None:
        """Let the waiting writers in (SQLite: roll the holder's transaction back now)."""
        if self.release_now is not None:
            self.release_now()
            self.release_now = None


@asynccontextmanager
async def write_lock_held(db_url: str) -> AsyncIterator[LockHolder]:
    """Another connection takes the write lock and keeps it (with an uncommitted change) until
    the holder is released or the block ends."""
    if db_url.startswith("sqlite"):
        conn = sqlite3.connect(sqlite_path(db_url), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "UPDATE user_roles SET granted_by = 'the holder' WHERE user_id = ?", (REQUESTER,)
        )
        holder = LockHolder(conn.rollback)
        try:
            yield holder
        finally:
            holder.release()
            conn.close()
        return
    engine = make_engine(db_url)
    async with engine.connect() as conn:
        await conn.begin()
        await conn.execute(text("LOCK TABLE user_roles IN EXCLUSIVE MODE"))  # readers may pass
        await conn.execute(
            text("UPDATE user_roles SET granted_by = 'the holder' WHERE user_id = :u"),
            {"u": REQUESTER},
        )
        try:
            yield LockHolder()
        finally:
            await conn.rollback()
    await engine.dispose()


class CountingStore:
    """A store that counts its write transactions and runs `before_begin` ahead of each."""

    def __init__(self, store: SqlStore, before_begin: Any = None) -> None:
        self.store, self.before_begin, self.begun = store, before_begin, 0

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[Any]:
        self.begun += 1
        if self.before_begin is not None:
            self.before_begin(self.begun)
        async with self.store.begin() as tx:
            yield tx

    def reading(self) -> Any:
        return self.store.reading()


async def test_a_reader_is_not_held_up_by_a_writer_holding_the_lock(store, db_url):
    # The store's writers would wait 4 s for the lock; a reader does not wait at all.
    async with write_lock_held(db_url), asyncio.timeout(2), store.reading() as tx:
        roles = await tx.roles(REQUESTER)
        people = await tx.people()
    assert roles == {Role.REQUESTER}
    assert len(people) == 3


async def test_a_write_inside_a_reading_transaction_fails_loudly(store):
    with pytest.raises(DBAPIError, match=r"(?i)read-?only"):
        async with store.reading() as tx:
            await tx.grant(OUTSIDER, Role.APPROVER, "test", T0)
    async with store.reading() as tx:
        assert await tx.roles(OUTSIDER) == frozenset()
    # The pooled connection that was read-only writes again in a read-write transaction.
    async with store.begin() as tx:
        assert await tx.grant(OUTSIDER, Role.APPROVER, "test", T0)
    async with store.reading() as tx:
        assert await tx.roles(OUTSIDER) == {Role.APPROVER}


@pytest.fixture
async def impatient(db_url: str) -> AsyncIterator[SqlStore]:
    """A second store on the same database whose SQLite writers give up after 100 ms."""
    if not db_url.startswith("sqlite"):
        pytest.skip("PostgreSQL writers wait for row locks; they are never busy this way")
    store = SqlStore(make_engine(db_url, busy_timeout_ms=SHORT_BUSY_MS), DATA_KEY)
    yield store
    await store.close()


async def test_a_writer_locked_out_past_every_retry_raises_store_busy(store, db_url, impatient):
    counting = CountingStore(impatient)
    async with write_lock_held(db_url):
        with pytest.raises(StoreBusy):
            await opening.open_job(counting, new_job(), make_draft(), T0, Rules())
    assert counting.begun == BUSY_ATTEMPTS
    async with store.reading() as tx:
        assert await tx.job_by_po("PO-2026-001") is None  # nothing half-written


async def test_a_writer_retried_after_the_lock_is_released_records_once(store, db_url, impatient):
    async with write_lock_held(db_url) as holder:
        # The second attempt starts after the holder lets go: the retry, not luck, succeeds.
        counting = CountingStore(impatient, lambda n: holder.release() if n == 2 else None)
        job = await opening.open_job(counting, new_job(), make_draft(), T0, Rules())
    assert counting.begun == 2
    async with store.reading() as tx:
        stored = await tx.job_by_po("PO-2026-001")
        assert stored is not None and stored.id == job.id
        assert await tx.holders(Role.APPROVER) != []


async def test_a_postgres_deadlock_is_store_busy_for_the_loser(store, db_url):
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite has one writer at a time: it cannot deadlock")
    other = SqlStore(make_engine(db_url), DATA_KEY)
    both_locked_one = asyncio.Barrier(2)

    async def lock(on: SqlStore, first: int, second: int) -> None:
        touch = text("UPDATE user_roles SET granted_by = 'racer' WHERE user_id = :u")
        async with on.begin() as tx:
            await tx.conn.execute(touch, {"u": first})
            await both_locked_one.wait()
            await tx.conn.execute(touch, {"u": second})  # each waits for the other: deadlock

    try:
        outcomes = await asyncio.gather(
            lock(store, REQUESTER, APPROVER_A),
            lock(other, APPROVER_A, REQUESTER),
            return_exceptions=True,
        )
    finally:
        await other.close()
    assert sorted(type(o).__name__ for o in outcomes) == ["NoneType", "StoreBusy"]


class _Orig(Exception):
    """A driver error carrying what sqlite3 and asyncpg put on theirs."""

    def __init__(self, **attributes: object) -> None:
        super().__init__("driver error")
        self.__dict__.update(attributes)


@pytest.mark.parametrize(
    ("orig", "busy"),
    [
        (_Orig(sqlite_errorcode=sqlite3.SQLITE_BUSY), True),  # database is locked
        (_Orig(sqlite_errorcode=sqlite3.SQLITE_LOCKED), True),  # a table is locked
        (_Orig(sqlite_errorcode=517), True),  # SQLITE_BUSY_SNAPSHOT: a stale WAL snapshot
        (_Orig(sqlite_errorcode=261), True),  # SQLITE_BUSY_RECOVERY: WAL being recovered
        (_Orig(sqlite_errorcode=sqlite3.SQLITE_READONLY), False),  # a write in a reader
        (_Orig(sqlite_errorcode=sqlite3.SQLITE_CONSTRAINT), False),  # a duplicate key
        (_Orig(sqlstate="40001"), True),  # serialization_failure
        (_Orig(sqlstate="40P01"), True),  # deadlock_detected
        (_Orig(sqlstate="55P03"), True),  # lock_not_available
        (_Orig(sqlstate="25006"), False),  # read_only_sql_transaction
        (_Orig(sqlstate="23505"), False),  # unique_violation
        (_Orig(), False),  # a driver error that says nothing of why
    ],
)
def test_which_database_errors_are_busy(orig: Exception, busy: bool) -> None:
    assert is_busy(DBAPIError("SELECT 1", {}, orig)) is busy


async def test_sqlite_reports_its_own_lock_as_busy(store, db_url, impatient):
    """The table above matches what the driver really raises, not only what it documents."""
    async with write_lock_held(db_url):
        with pytest.raises(StoreBusy) as raised:
            async with impatient.begin() as tx:
                await tx.grant(OUTSIDER, Role.APPROVER, "test", T0)
    assert isinstance(raised.value.__cause__, DBAPIError)
    assert "database is locked" in str(raised.value)
