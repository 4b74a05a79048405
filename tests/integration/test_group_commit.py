"""store.group_commit on a real SQLite file: the writers that queue meanwhile share one
transaction and one COMMIT, each in its own savepoint; a member's failure or cancellation
rolls back its own writes only; begin() returns only once its writes are durable; a failed
COMMIT fails every member with StoreBusy; urgent writers go first; a batch is bounded.

Each writer claims update ids (a one-row write) and may hold its block open on an event the
test sets, so that the others queue behind it; what was committed is read on a connection of
its own, which sees only committed rows."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from core.errors import StoreBusy
from store.engine import READING, make_engine
from store.group_commit import GroupCommit, urgent
from store.sql import SqlStore
from tests.helpers.factories import T0
from tests.helpers.store import DATA_KEY

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


class Writers:
    """Writers that record the order their blocks ran in, each holding its block until the
    test opens its gate (if it has one)."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.order: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.commits = 0
        event.listen(store.engine.sync_engine, "commit", self._committed)

    def _committed(self, conn: Connection) -> None:
        if not conn.get_execution_options().get(READING):
            self.commits += 1

    def gate(self, name: str) -> asyncio.Event:
        return self.gates.setdefault(name, asyncio.Event())

    async def write(self, name: str, update_id: int, *, held: bool = False) -> None:
        async with self.store.begin() as tx:
            self.order.append(name)
            assert await tx.claim_update(update_id, T0)
            if held:
                await self.gate(name).wait()

    def start(self, name: str, update_id: int, *, held: bool = False) -> asyncio.Task[None]:
        return asyncio.create_task(self.write(name, update_id, held=held), name=name)


def committed(db_url: str) -> set[int]:
    """The update ids another connection sees: what is committed."""
    with sqlite3.connect(db_url.removeprefix("sqlite+aiosqlite:///")) as conn:
        return {row[0] for row in conn.execute("SELECT update_id FROM processed_updates")}


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop and the driver's thread run until `condition` holds (at most 5 s)."""
    async with asyncio.timeout(5):
        while not condition():
            await asyncio.sleep(0.001)


async def queued(store: SqlStore, count: int) -> None:
    assert store.group is not None
    group = store.group
    await until(lambda: group.waiting() == count)


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[SqlStore]:
    """A SqlStore on SQLite whose batches are bounded by count only, unless a test says so."""
    store = SqlStore(make_engine(db_url), DATA_KEY)
    store.group = GroupCommit(store.engine, max_open=60.0)
    yield store
    await store.close()


async def test_writers_that_queue_meanwhile_share_one_commit(store: SqlStore, db_url: str) -> None:
    writers = Writers(store)
    first = writers.start("first", 1, held=True)
    await until(lambda: writers.order == ["first"])
    others = [writers.start(f"w{n}", n) for n in range(2, 6)]
    await queued(store, 4)
    writers.gate("first").set()
    await asyncio.gather(first, *others)
    assert writers.order == ["first", "w2", "w3", "w4", "w5"]
    assert writers.commits == 1
    assert committed(db_url) == {1, 2, 3, 4, 5}


async def test_begin_returns_only_once_the_batch_is_committed(store: SqlStore, db_url: str) -> None:
    writers = Writers(store)
    first = writers.start("first", 1, held=True)
    await until(lambda: writers.order == ["first"])
    second = writers.start("second", 2, held=True)
    await queued(store, 1)
    writers.gate("first").set()
    await until(lambda: writers.order == ["first", "second"])
    # The first block is over, but its batch is not committed while the second still writes.
    assert not first.done() and committed(db_url) == set()
    writers.gate("second").set()
    await first
    assert committed(db_url) == {1, 2}  # durable by the time begin() returned
    await second


async def test_a_failed_member_rolls_back_its_own_writes_only(store: SqlStore, db_url: str) -> None:
    writers = Writers(store)

    async def failing() -> None:
        async with store.begin() as tx:
            await tx.claim_update(2, T0)
            raise RuntimeError("this use case failed")

    first = writers.start("first", 1, held=True)
    await until(lambda: writers.order == ["first"])
    failed = asyncio.create_task(failing())
    last = writers.start("last", 3)
    await queued(store, 2)
    writers.gate("first").set()
    with pytest.raises(RuntimeError, match="this use case failed"):
        await failed
    await asyncio.gather(first, last)
    assert writers.commits == 1
    assert committed(db_url) == {1, 3}


async def test_a_member_refused_on_an_earlier_write_hears_it_once_that_write_is_durable(
    store: SqlStore, db_url: str
) -> None:
    """The second of a double tap is refused because the first one's claim is in, in the same
    batch: its refusal comes only after that COMMIT, so what it reads next agrees with it."""
    writers = Writers(store)
    refused: list[set[int]] = []

    async def again() -> None:
        async with store.begin() as tx:
            if not await tx.claim_update(1, T0):
                raise LookupError("update 1 was handled before")

    async def refusal_then_read() -> None:
        with pytest.raises(LookupError, match="handled before"):
            await again()
        refused.append(committed(db_url))

    first = writers.start("first", 1, held=True)
    await until(lambda: writers.order == ["first"])
    second = asyncio.create_task(refusal_then_read())
    last = writers.start("last", 2, held=True)
    await queued(store, 2)
    writers.gate("first").set()
    await until(lambda: writers.order == ["first", "last"])
    await asyncio.sleep(0.05)  # the second's block is over; the batch is still open
    assert not second.done() and committed(db_url) == set()
    writers.gate("last").set()
    await asyncio.gather(first, second, last)
    assert refused == [{1, 2}]


async def test_a_member_refused_in_a_batch_whose_commit_fails_runs_again(
    store: SqlStore, db_url: str
) -> None:
    """If the writes a refusal was based on are lost, the refusal is StoreBusy instead: the use
    case runs again on what is durable."""
    async with store.engine.begin() as conn:
        await conn.execute(text("CREATE TABLE parent (id INTEGER PRIMARY KEY)"))
        await conn.execute(
            text(
                "CREATE TABLE child (parent_id INTEGER "
                "REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
            )
        )
    writers = Writers(store)

    async def orphan() -> None:
        async with store.begin() as tx:
            await tx.conn.execute(text("INSERT INTO child VALUES (42)"))

    async def again() -> None:
        async with store.begin() as tx:
            if not await tx.claim_update(1, T0):
                raise LookupError("update 1 was handled before")

    first = writers.start("first", 1, held=True)
    await until(lambda: writers.order == ["first"])
    members = [asyncio.create_task(again()), asyncio.create_task(orphan())]
    await queued(store, 2)
    writers.gate("first").set()
    for member in (first, *members):
        with pytest.raises(StoreBusy, match="group commit failed"):
            await member
    assert committed(db_url) == set()


async def test_cancelled_members_leave_the_others_intact(store: SqlStore, db_url: str) -> None:
    writers = Writers(store)
    first = writers.start("first", 1, held=True)
    await until(lambda: writers.order == ["first"])
    gone = writers.start("gone", 2)  # cancelled while it waits for its turn
    midway = writers.start("midway", 3, held=True)  # cancelled inside its block
    last = writers.start("last", 4)
    await queued(store, 3)
    gone.cancel()
    writers.gate("first").set()
    await until(lambda: "midway" in writers.order)
    midway.cancel()
    for cancelled in (gone, midway):
        with pytest.raises(asyncio.CancelledError):
            await cancelled
    await asyncio.gather(first, last)
    assert writers.order == ["first", "midway", "last"]
    assert committed(db_url) == {1, 4}
    await writers.write("after", 5)  # and the next batch goes ahead
    assert committed(db_url) == {1, 4, 5}


async def test_a_member_handed_its_turn_as_it_is_cancelled_passes_it_on(
    store: SqlStore, db_url: str
) -> None:
    writers = Writers(store)
    first = writers.start("first", 1, held=True)
    await until(lambda: writers.order == ["first"])
    handed = writers.start("handed", 2)
    last = writers.start("last", 3)
    await queued(store, 2)
    writers.gate("first").set()
    await asyncio.sleep(0)  # "first" ends its block and hands the turn on; "handed" not yet run
    assert store.group is not None and store.group.waiting() == 1
    handed.cancel()  # handed the turn when "first" ended, cancelled before it could take it
    with pytest.raises(asyncio.CancelledError):
        await handed
    await asyncio.gather(first, last)
    assert writers.order == ["first", "last"]
    assert committed(db_url) == {1, 3}


async def test_a_member_cancelled_while_its_batch_commits_is_committed_with_it(
    store: SqlStore, db_url: str
) -> None:
    writers = Writers(store)
    first = writers.start("first", 1, held=True)
    await until(lambda: writers.order == ["first"])
    waiting = writers.start("waiting", 2, held=True)
    await queued(store, 1)
    writers.gate("first").set()
    await until(lambda: writers.order == ["first", "waiting"])
    first.cancel()  # its block is over: its writes are the batch's now
    with pytest.raises(asyncio.CancelledError):
        await first
    writers.gate("waiting").set()
    await waiting
    assert committed(db_url) == {1, 2}


async def test_a_failed_commit_fails_every_member_with_store_busy(
    store: SqlStore, db_url: str
) -> None:
    """A deferred foreign key is checked at COMMIT: one member's orphan row fails the COMMIT
    of the whole batch, and nobody's writes are kept."""
    async with store.engine.begin() as conn:
        await conn.execute(text("CREATE TABLE parent (id INTEGER PRIMARY KEY)"))
        await conn.execute(
            text(
                "CREATE TABLE child (parent_id INTEGER "
                "REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
            )
        )
    writers = Writers(store)

    async def orphan() -> None:
        async with store.begin() as tx:
            await tx.conn.execute(text("INSERT INTO child VALUES (42)"))

    first = writers.start("first", 1, held=True)
    await until(lambda: writers.order == ["first"])
    members = [asyncio.create_task(orphan()), writers.start("last", 2)]
    await queued(store, 2)
    writers.gate("first").set()
    for member in (first, *members):
        with pytest.raises(StoreBusy, match="group commit failed"):
            await member
    assert committed(db_url) == set()
    await writers.write("again", 1)  # the use case runs again, alone, and commits
    assert committed(db_url) == {1}


async def test_urgent_writers_go_first_and_each_kind_in_order(store: SqlStore) -> None:
    writers = Writers(store)
    tasks = [writers.start("sheet-1", 1, held=True)]
    await until(lambda: writers.order == ["sheet-1"])
    tasks += [writers.start("sheet-2", 2), writers.start("runner", 3)]
    await queued(store, 2)
    with urgent():
        tasks += [writers.start("tap-1", 4), writers.start("tap-2", 5)]
    await queued(store, 4)
    with urgent(), urgent(False):  # a delivery a tap starts waits its turn again
        tasks.append(writers.start("delivery", 6))
    await queued(store, 5)
    writers.gate("sheet-1").set()
    await asyncio.gather(*tasks)
    assert writers.order == ["sheet-1", "tap-1", "tap-2", "sheet-2", "runner", "delivery"]


async def test_a_batch_takes_at_most_max_members(store: SqlStore, db_url: str) -> None:
    store.group = GroupCommit(store.engine, max_members=2, max_open=60.0)
    writers = Writers(store)
    first = writers.start("first", 1, held=True)
    await until(lambda: writers.order == ["first"])
    others = [writers.start(f"w{n}", n) for n in range(2, 6)]
    await queued(store, 4)
    writers.gate("first").set()
    await asyncio.gather(first, *others)
    assert writers.commits == 3  # (first, w2), (w3, w4), (w5)
    assert committed(db_url) == {1, 2, 3, 4, 5}


async def test_a_long_member_ends_its_batch_and_the_urgent_go_next(
    store: SqlStore, db_url: str
) -> None:
    """A sheet's long submission closes its batch (max_open): the taps that waited meanwhile
    commit in the next one instead of waiting for more of the sheet's kind."""
    store.group = GroupCommit(store.engine, max_open=0.0)
    writers = Writers(store)
    sheet = writers.start("sheet", 1, held=True)
    await until(lambda: writers.order == ["sheet"])
    with urgent():
        taps = [writers.start("tap-1", 2), writers.start("tap-2", 3)]
    await queued(store, 2)
    writers.gate("sheet").set()
    await asyncio.gather(sheet, *taps)
    # Three commits for three writers: the sheet's batch held only the sheet (the next batch
    # may commit before this task even sees the sheet's return, so that is all one can ask).
    assert writers.order == ["sheet", "tap-1", "tap-2"]
    assert writers.commits == 3 and committed(db_url) == {1, 2, 3}


async def test_a_member_whose_error_ended_the_transaction_fails_the_batch_alone(
    store: SqlStore, db_url: str
) -> None:
    """SQLite rolls back the whole transaction on some errors (disk full, I/O): the members
    before and that member are told StoreBusy, not that they committed, and the next goes to
    a new batch."""
    writers = Writers(store)

    async def ending() -> None:
        async with store.begin() as tx:
            await tx.claim_update(2, T0)
            await tx.conn.exec_driver_sql("ROLLBACK")  # as SQLite does after SQLITE_FULL

    first = writers.start("first", 1, held=True)
    await until(lambda: writers.order == ["first"])
    ended = asyncio.create_task(ending())
    last = writers.start("last", 3)
    await queued(store, 2)
    writers.gate("first").set()
    with pytest.raises(StoreBusy, match="rolled back by SQLite"):
        await first
    with pytest.raises(StoreBusy, match="rolled back by SQLite") as lost:
        await ended  # its batch is lost with it
    assert isinstance(lost.value.__context__, DBAPIError)  # its savepoint went with it
    await last
    assert committed(db_url) == {3}
