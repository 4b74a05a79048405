"""The restore drill, on SQLite and PostgreSQL: the bot running, a PO sent, another approved,
POs being opened all the while; a backup taken under that load; then the PO approved is e-mailed
(after the snapshot), the disk dies, the snapshot is restored and the bot started again. Nothing
the snapshot had is lost, no e-mail leaves twice (the one sent after the snapshot waits in the
review queue, restored from a backup), and `verify` finds nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from bot.cli.keys import job_findings
from bot.clock import utcnow
from core.approval import opening
from core.jobs.states import State
from core.outbox.restoring import hold_unsettled, reason_of
from store import backups, resealing, schema
from store.engine import make_engine
from store.migrate import upgrade
from store.sql import SqlStore
from tests.helpers import suppliers
from tests.helpers.bot import PO, approved_and_sent, mail_bot
from tests.helpers.factories import make_draft, new_job
from tests.helpers.net import free_port
from tests.helpers.review import RULES
from tests.helpers.store import DATA_KEY

pytestmark = pytest.mark.slow  # two bot runs, pg_dump and pg_restore
OWED = "PO-2026-9001"


async def keep_opening(store: SqlStore, stop: asyncio.Event) -> int:
    """Requests arriving while the backup is taken: how many were opened."""
    opened = 0
    while not stop.is_set():
        opened += 1
        await opening.open_job(
            store, new_job(), make_draft(f"PO-2026-L{opened:03}"), utcnow(), RULES
        )
        await asyncio.sleep(0)
    return opened


async def the_disk_dies(db_url: str) -> None:
    """Everything in the database gone, as after a lost disk (a new, empty database)."""
    if db_url.startswith("sqlite"):
        path = Path(db_url.removeprefix("sqlite+aiosqlite:///"))
        for gone in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            gone.unlink(missing_ok=True)
        return
    engine = make_engine(db_url)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await engine.dispose()


async def jobs_by_state(store: SqlStore) -> dict[str, State]:
    async with store.reading() as tx:
        return {job.po_number: job.state for job in await tx.jobs_in_states(frozenset(State))}


async def test_a_restore_loses_nothing_and_sends_nothing_twice(
    botapi, db_url, store, smtp_sink, tmp_path
):
    port = free_port()
    async with mail_bot(botapi, db_url, smtp_sink, port) as run:
        await approved_and_sent(botapi, run)  # PO sent: one e-mail
        await suppliers.approved(run.store, make_draft(OWED), utcnow(), RULES)
        stop = asyncio.Event()
        load = asyncio.create_task(keep_opening(run.store, stop))
        await asyncio.sleep(0.2)
        manifest = await backups.backup(run.store.engine, tmp_path / "backups", utcnow())
        stop.set()
        opened = await load
        before = await jobs_by_state(run.store)
        assert await run.outbox.run_once() == 1  # OWED e-mailed after the snapshot was taken
    assert len(smtp_sink.messages) == 2 and opened > 0
    snapshot = tmp_path / "backups" / manifest.file
    in_snapshot = manifest.rows["jobs"]
    assert 2 < in_snapshot <= len(before)  # some of the load is in it, maybe not all

    await the_disk_dies(db_url)
    restored = SqlStore(make_engine(db_url), DATA_KEY)
    try:
        await backups.restore(restored.engine, snapshot)
        await upgrade(restored.engine)
        held = await hold_unsettled(restored, manifest.taken_at, utcnow())
        assert held.pos == (OWED,)
        async with restored.engine.connect() as conn:
            for name, count in manifest.rows.items():
                table = schema.metadata.tables[name]
                if name in ("audit_events", "notices"):  # the hold adds its moves and news
                    continue
                got = (await conn.execute(select(func.count()).select_from(table))).scalar()
                assert got == count, name  # nothing the snapshot had is lost
        states = await jobs_by_state(restored)
        assert len(states) == in_snapshot
        assert states[PO] is State.SENT and states[OWED] is State.UNKNOWN_OUTCOME
        assert await job_findings(restored) == []
        assert set((await resealing.unopened(restored)).values()) == {0}
    finally:
        await restored.close()

    async with mail_bot(botapi, db_url, smtp_sink, free_port()) as run:  # the bot again
        for _ in range(3):
            await run.outbox.run_once()
        async with run.store.reading() as tx:
            job = await tx.job_by_po(OWED)
            trail = await tx.audit(job.id)
    assert len(smtp_sink.messages) == 2  # nothing left twice
    assert trail[-1].detail["reason"] == reason_of(manifest.taken_at)
