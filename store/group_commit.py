"""Group commit: this process's SQLite writers share one transaction and one durable COMMIT.

SQLite lets one writer in at a time, and each write transaction pays for its own BEGIN
IMMEDIATE and an fsync'ed COMMIT (synchronous=FULL), both in the driver's thread
(store.sqlite_driver). A hundred taps at once therefore queued a hundred times for the lock,
each turn also waiting for the loop to come round to it twice. Here the writers that queue
meanwhile join one real transaction instead, in order: each runs its block in a SAVEPOINT
of its own on the batch's connection, so its failure rolls back its own writes only and is
raised to it alone; one COMMIT then makes the whole batch durable, and every member's
`transaction()` returns, or raises its block's error, only after that COMMIT (no answer
is sent for a write a power cut could still take back, nor a refusal based on one). If the
COMMIT fails, nothing of the batch was kept, and every member is told so with StoreBusy: its
use case runs again (core.jobs.transitions.retry_on_stale).

Members still write one at a time, so the order rules of a single lock hold: an urgent
writer (made for a tap, a command or a message somebody waits to see answered; see `urgent`)
goes before every waiting writer that is not (a sheet's submission, the runners' passes),
and each kind goes in the order it came. A batch closes when nobody else is waiting, after
MAX_MEMBERS members, or once it has been open MAX_OPEN seconds (a sheet's long submission
ends its batch), so that one batch never holds the lock long and a member never waits long
for the COMMIT of writes not its own. Writers of other processes still meet at SQLite's lock,
with its busy timeout. PostgreSQL locks rows and groups concurrent commits itself; it needs
none of this.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from core.errors import StoreBusy
from store.engine import is_busy

log = logging.getLogger(__name__)

# Members of one batch at most: each is a short use case (a tap's decision: a few ms).
MAX_MEMBERS = 64
# Seconds a batch takes members for; the next member starts a new batch.
MAX_OPEN = 0.010

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


@dataclass(eq=False)
class _Batch:
    """One real transaction on one connection, and the outcome of its COMMIT: None once it is
    durable, or the error that lost the batch."""

    conn: AsyncConnection
    opened: float
    members: int = 0
    committed: asyncio.Future[BaseException | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


@dataclass(eq=False)
class _Member:
    """A writer waiting for its turn in a batch, or for the error that ended the batches
    before it (a failed BEGIN, a lost connection)."""

    turn: asyncio.Future[_Batch | BaseException]


class _Queue:
    """The writers of one event loop waiting for a batch, urgent ones first; the task that
    runs the batches while anyone waits; and the batch taking members now, if any."""

    def __init__(self) -> None:
        self.urgent: deque[_Member] = deque()
        self.others: deque[_Member] = deque()
        self.committer: asyncio.Task[None] | None = None
        self.open: _Batch | None = None
        self.closing: asyncio.Future[None] | None = None

    def next(self) -> _Member | None:
        """The next member still waiting (one cancelled while waiting is skipped)."""
        for waiting in (self.urgent, self.others):
            while waiting:
                member = waiting.popleft()
                if not member.turn.done():
                    return member
        return None

    def waiting(self) -> int:
        return sum(not m.turn.done() for m in (*self.urgent, *self.others))

    def fail_waiting(self, error: BaseException) -> None:
        """Give every waiting member the error instead of a turn."""
        while (member := self.next()) is not None:
            member.turn.set_result(error)

    def pass_on(self, batch: _Batch, max_members: int, max_open: float) -> None:
        """After a member's block (or at a batch's start): the turn goes to the next waiting
        member at once if the batch still takes members; else the batch closes for its
        COMMIT. Called in the member's own task, so the hand-over costs no extra loop cycle."""
        if self.open is not batch:
            return  # the batch ended without this member (its committer was cancelled)
        loop = asyncio.get_running_loop()
        taking = batch.members < max_members and loop.time() - batch.opened < max_open
        # A batch serves at least its first member, and none once SQLite ended its
        # transaction (a member's disk-full or I/O error rolls back the whole of it): on that
        # connection the next member's SAVEPOINT would start a transaction of its own.
        if (taking or batch.members == 0) and _still_open(batch.conn):
            member = self.next()
            if member is not None:
                batch.members += 1
                member.turn.set_result(batch)
                return
        self.open = None
        assert self.closing is not None
        if not self.closing.done():
            self.closing.set_result(None)


class GroupCommit:
    """Hands out SAVEPOINTs in shared SQLite transactions; one queue per event loop (a test
    or a CLI command may run several loops in turn)."""

    def __init__(
        self, engine: AsyncEngine, *, max_members: int = MAX_MEMBERS, max_open: float = MAX_OPEN
    ) -> None:
        self.engine = engine
        self.max_members, self.max_open = max_members, max_open
        self.commits = 0  # batches committed, for tests and the bench
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """A SAVEPOINT in the next batch, on the batch's connection, until the block ends; then
        wait for the batch's COMMIT. An error in the block rolls back the block's writes only
        and is raised here; a failed BEGIN is raised as it came (the caller maps "busy"); a
        failed COMMIT raises StoreBusy."""
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        member = _Member(loop.create_future())
        (queue.urgent if _URGENT.get() else queue.others).append(member)
        if queue.committer is None:
            queue.committer = loop.create_task(self._commit_batches(queue), name="group-commit")
        try:
            got = await member.turn
        except asyncio.CancelledError:
            if member.turn.done() and not member.turn.cancelled():
                got = member.turn.result()  # handed the turn just as it was cancelled
                if isinstance(got, _Batch):
                    self._pass_on(queue, got)
            raise
        if isinstance(got, BaseException):
            if isinstance(got, DBAPIError) and is_busy(got):
                raise StoreBusy(f"the database is busy: {got.orig}") from got
            raise got
        batch = got
        try:
            async with batch.conn.begin_nested():
                yield batch.conn
        except Exception:
            # The block may have failed on what earlier members wrote (a second tap refused
            # because the first one's decision is in): its error is heard only once those
            # writes are durable, so that what the caller reads next says the same, and as
            # StoreBusy if they were lost, so that it runs again rather than trust them.
            self._pass_on(queue, batch)
            await self._committed(batch)
            raise
        except BaseException:  # cancelled: its writes are rolled back; nothing to wait for
            self._pass_on(queue, batch)
            raise
        self._pass_on(queue, batch)  # the next member's turn, or the COMMIT
        await self._committed(batch)

    @staticmethod
    async def _committed(batch: _Batch) -> None:
        """Wait for the batch's COMMIT; StoreBusy if it failed. Shielded: a member cancelled
        now leaves the batch (and its own writes) to commit."""
        failure = await asyncio.shield(batch.committed)
        if failure is not None:
            raise StoreBusy(f"the group commit failed: {failure}") from failure

    def _pass_on(self, queue: _Queue, batch: _Batch) -> None:
        queue.pass_on(batch, self.max_members, self.max_open)

    def waiting(self) -> int:
        """How many writers of the running loop wait for a batch (for tests)."""
        queue = self._queues.get(asyncio.get_running_loop())
        return 0 if queue is None else queue.waiting()

    async def _commit_batches(self, queue: _Queue) -> None:
        """Run batches one after the other while anyone waits."""
        try:
            while queue.waiting():
                await self._batch(queue)
        except BaseException as error:  # the loop is closing
            queue.fail_waiting(error)
            if not isinstance(error, Exception):
                raise
        finally:
            queue.committer = None

    async def _batch(self, queue: _Queue) -> None:
        """One batch: BEGIN IMMEDIATE, the members' blocks in turn, one COMMIT. Its connection
        is back in the pool before any member hears the outcome, so nothing of a batch
        outlives its members (a CLI command disposes of its engine as soon as it returns)."""
        loop = asyncio.get_running_loop()
        try:
            conn = await self.engine.connect()
        except Exception as error:
            queue.fail_waiting(error)
            return
        batch: _Batch | None = None
        failure: BaseException | None = None
        try:
            try:
                await conn.begin()
            except Exception as error:  # the lock stayed taken by another process: busy
                queue.fail_waiting(error)
                await _rollback_quietly(conn)
                return
            batch = queue.open = _Batch(conn, loop.time())
            closing = queue.closing = loop.create_future()
            self._pass_on(queue, batch)
            await closing
            if not _still_open(conn):
                # SQLite ended the transaction itself (disk full, I/O error): a COMMIT now
                # would be a silent no-op, and every member would believe in lost writes.
                raise StoreBusy("the batch's transaction was rolled back by SQLite")
            await conn.commit()
            self.commits += 1
        except BaseException as error:
            failure = error
            await _rollback_quietly(conn)
            if not isinstance(error, Exception):
                raise
        finally:
            queue.open = None
            try:
                await conn.close()
            finally:
                if batch is not None:
                    batch.committed.set_result(failure)


def _still_open(conn: AsyncConnection) -> bool:
    """Whether the sqlite3 connection under `conn` is still inside its transaction."""
    driver = conn.sync_connection.connection.driver_connection  # type: ignore[union-attr]
    return bool(driver.raw.in_transaction)  # type: ignore[union-attr]


async def _rollback_quietly(conn: AsyncConnection) -> None:
    try:
        await conn.rollback()
    except Exception:  # the connection is gone: the pool discards it
        log.warning("a failed batch's rollback failed too", exc_info=True)
