"""Sheet intake: a requester sends a large CSV and XLSX through the bot; seconds from the
upload to the cards being queued (the commit that wrote the POs and their card notices), and
to the reply; the peak of this process's Python allocations during an intake."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import event
from sqlalchemy.engine import Connection

from bench.bot_harness import (
    PATIENCE,
    REQUESTER,
    approver_ids,
    bot_on,
    csv_sheet,
    import_terms,
    people,
    xlsx_sheet,
)
from bench.common import Result
from bench.databases import Database
from bot.bootstrap import Running
from bot.dev.botapi import EmulatedUser, Emulator
from core.approval.policies import Role
from core.jobs.notices import NoticeKind
from store.sql import SqlStore

SECTION = "Sheet intake"
TARGET_S = 1.0  # the target: a 10,000-row sheet to validated drafts within a second
APPROVERS = 3  # a few cards owed per PO, as in a small team
FORMATS: dict[str, tuple[Callable[[int, str], bytes], str]] = {
    "CSV": (csv_sheet, "text/csv"),
    "XLSX": (xlsx_sheet, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
}


class _CommitWatch:
    """When the transaction that recorded a submission committed: SQLAlchemy's engine events
    mark a connection that inserted into submissions, and stamp its next commit."""

    def __init__(self, store: SqlStore) -> None:
        self.at: float | None = None
        self._engine = store.engine.sync_engine

    def __enter__(self) -> _CommitWatch:
        event.listen(self._engine, "before_cursor_execute", self._statement)
        event.listen(self._engine, "commit", self._commit)
        return self

    def __exit__(self, *exc_info: object) -> None:
        # Removed, so that the next sheet's watch is the only one to see its commit.
        event.remove(self._engine, "before_cursor_execute", self._statement)
        event.remove(self._engine, "commit", self._commit)

    def _statement(self, conn: Connection, cursor: object, statement: str, *args: object) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO SUBMISSIONS"):
            conn.info["bench_submission"] = True

    def _commit(self, conn: Connection) -> None:
        if conn.info.pop("bench_submission", False) and self.at is None:
            self.at = time.monotonic()


@dataclass(frozen=True)
class Intake:
    """One sheet's way through the bot, in seconds from the upload."""

    queued_s: float
    reply_s: float
    reply: str
    cards: int


async def _intake(emulator: Emulator, run: Running, user: EmulatedUser, data: bytes, name: str,
                  mime: str) -> Intake:  # fmt: skip
    """Send one sheet and wait for its cards to be committed and its reply to arrive."""
    with _CommitWatch(run.store) as watch:
        sent = time.monotonic()
        user.send_document(data, name, mime)
        message = await user.next_message(timeout=PATIENCE)
        replied = time.monotonic()
    if watch.at is None:  # refused: no submission was written
        return Intake(float("nan"), replied - sent, message.text or "", 0)
    async with run.store.reading() as tx:
        (job,) = await tx.jobs_of(REQUESTER, 1)
        cards = [n for n in await tx.notices_for(job.id) if n.kind is NoticeKind.CARD]
    return Intake(watch.at - sent, replied - sent, message.text or "", len(cards))


async def run_intake(db: Database, quick: bool) -> list[Result]:
    """A CSV and an XLSX row on `db`; the memory figures on SQLite only (a second intake each,
    traced, so tracing does not slow the timed one)."""
    rows = 1_000 if quick else 10_000
    results = []
    async with bot_on(db) as (emulator, run):
        await import_terms(run.store, rows)
        (requester,) = await people(emulator, run.store, Role.REQUESTER, [REQUESTER])
        await people(emulator, run.store, Role.APPROVER, approver_ids(APPROVERS))
        for kind, (make, mime) in FORMATS.items():
            data = make(rows, f"timed-{kind}")
            name = f"restock.{kind.lower()}"
            timed = await _intake(emulator, run, requester, data, name, mime)
            figures = {
                "rows": f"{rows:,}",
                "to cards queued s": f"{timed.queued_s:.2f}",
                "to reply s": f"{timed.reply_s:.2f}",
            }
            notes = f"{len(data) / 1024:.0f} KB; {timed.cards} cards queued"
            if db.kind == "sqlite":
                tracemalloc.start()
                try:
                    traced = make(rows, f"traced-{kind}")
                    tracemalloc.reset_peak()
                    await _intake(emulator, run, requester, traced, name, mime)
                    peak = tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()
                figures["peak MB"] = f"{peak / 2**20:.1f}"
                notes += (
                    "; peak: tracemalloc of this process (bot and in-process emulator thread,"
                    " in a second, traced intake), parse worker process not included"
                )
            if "accepted" not in timed.reply:
                notes += f"; the reply: {timed.reply[:200]!r}"
            results.append(
                Result(
                    SECTION,
                    f"{kind}, {db.label}",
                    figures,
                    target=f"≤ {TARGET_S:g} s to cards queued",
                    met=timed.queued_s <= TARGET_S and timed.cards == APPROVERS,
                    notes=notes,
                )
            )
    return results
