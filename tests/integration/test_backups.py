"""A backup taken while POs are in flight, restored into an empty database (SQLite and
PostgreSQL): every row the snapshot had is back, the manifest says what it holds, and nothing
the snapshot shows unsettled is ever sent blindly: it waits in the review queue, "restored from
a backup of <time>". A tampered snapshot, a non-empty target and the other dialect are refused."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from bot.cli.keys import job_findings
from core.approval import opening
from core.jobs.effects import EffectStatus
from core.jobs.notices import NoticeKind, NoticeStatus
from core.jobs.states import State
from core.outbox import dispatch
from core.outbox.restoring import hold_unsettled, reason_of
from store import backups, resealing
from store.engine import make_engine
from store.migrate import head_revision, upgrade
from store.sql import SqlStore
from tests.helpers import suppliers
from tests.helpers.factories import T0, make_draft, new_job
from tests.helpers.review import RULES, in_queue
from tests.helpers.store import DATA_KEY, grant_cast

pytestmark = pytest.mark.slow  # pg_dump and pg_restore are processes
TAKEN = T0 + timedelta(hours=2)
LATER = T0 + timedelta(hours=3)


@pytest.fixture
async def empty(db_url: str, tmp_path: Path) -> AsyncIterator[SqlStore]:
    """A store on a second, empty database of the same dialect."""
    if db_url.startswith("sqlite"):
        target = SqlStore(make_engine(f"sqlite+aiosqlite:///{tmp_path / 'restored.db'}"), DATA_KEY)
        yield target
        await target.close()
        return
    name = f"restore_{uuid.uuid4().hex[:12]}"
    admin = create_async_engine(
        make_url(db_url).set(database="postgres"), isolation_level="AUTOCOMMIT"
    )
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    target = SqlStore(
        make_engine(make_url(db_url).set(database=name).render_as_string(False)), DATA_KEY
    )
    try:
        yield target
    finally:
        await target.close()
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        await admin.dispose()


async def in_flight(store: SqlStore) -> None:
    """PO-2026-001 in UNKNOWN_OUTCOME; 002 sent; 003 approved, its e-mail owed; 004 awaiting
    approval, one approver's card delivered."""
    await in_queue(store, State.UNKNOWN_OUTCOME, "PO-2026-001")
    await suppliers.sent(store, make_draft("PO-2026-002"), T0, RULES)
    await suppliers.approved(store, make_draft("PO-2026-003"), T0, RULES)
    job = await opening.open_job(store, new_job(), make_draft("PO-2026-004"), T0, RULES)
    async with store.begin() as tx:
        card = next(n for n in await tx.notices_for(job.id) if n.kind is NoticeKind.CARD)
        await tx.update_notice(card, status=NoticeStatus.SENT, message_id=77)


async def state_of(store: SqlStore, po: str):
    async with store.reading() as tx:
        job = await tx.job_by_po(po)
        return (
            job,
            await tx.effects_for(job.id),
            await tx.audit(job.id),
            await tx.notices_for(job.id),
        )


async def test_a_restore_brings_back_every_row_and_holds_what_may_have_left(store, empty, tmp_path):
    await in_flight(store)
    manifest = await backups.backup(store.engine, tmp_path / "backups", TAKEN)
    snapshot = tmp_path / "backups" / manifest.file
    assert manifest.revision == head_revision() and manifest.rows["jobs"] == 4
    assert manifest.sha256 == backups.sha256_of(snapshot)
    assert backups.Manifest.read(backups.manifest_of(snapshot)) == manifest

    restored = await backups.restore(empty.engine, snapshot)
    await upgrade(empty.engine)
    held = await hold_unsettled(empty, restored.taken_at, LATER)
    assert held.pos == ("PO-2026-003",) and held.cards == 1

    again = await backups.backup(empty.engine, tmp_path / "again", LATER)
    assert again.rows["jobs"] == manifest.rows["jobs"] == 4
    assert again.rows["drafts"] == manifest.rows["drafts"]

    job, [send], trail, _ = await state_of(empty, "PO-2026-003")
    assert job.state is State.UNKNOWN_OUTCOME and send.status is EffectStatus.UNKNOWN
    assert (trail[-1].action, trail[-1].detail["reason"]) == (
        "hold_restored",
        reason_of(TAKEN),
    )
    assert reason_of(TAKEN) == "restored from a backup of 2026-11-29T11:00:00+00:00"
    for po, state in (("PO-2026-001", State.UNKNOWN_OUTCOME), ("PO-2026-002", State.SENT)):
        assert (await state_of(empty, po))[0].state is state  # settled or queued already
    assert (
        await dispatch.claim(empty, LATER + timedelta(days=1), "runner", timedelta(minutes=1), 10)
        == []
    )
    _, _, _, owed = await state_of(empty, "PO-2026-004")
    cards = [n for n in owed if n.kind is NoticeKind.CARD and n.status is NoticeStatus.PENDING]
    assert [n.key.split(":")[-1] for n in cards if "restored" in n.key] == [
        "restored20261129110000"
    ]
    told = [
        (n.kind, n.event, n.status)
        for n in (await state_of(empty, "PO-2026-003"))[3]
        if n.kind in (NoticeKind.STATUS, NoticeKind.ALERT)
    ]
    assert sorted(told) == [  # the approval's news dropped (it may have gone); the hold's owed
        (NoticeKind.ALERT, "UNKNOWN_OUTCOME", NoticeStatus.PENDING),
        (NoticeKind.STATUS, "APPROVED", NoticeStatus.CANCELLED),
        (NoticeKind.STATUS, "UNKNOWN_OUTCOME", NoticeStatus.PENDING),
    ]
    assert await job_findings(empty) == [] and set((await resealing.unopened(empty)).values()) == {
        0
    }


async def test_a_tampered_snapshot_a_full_database_and_the_other_dialect_are_refused(
    store, empty, tmp_path
):
    await grant_cast(store)
    manifest = await backups.backup(store.engine, tmp_path, TAKEN)
    snapshot = tmp_path / manifest.file
    with pytest.raises(backups.BackupError, match="not empty"):
        await backups.restore(store.engine, snapshot)  # the very database it came from
    await backups.restore(store.engine, snapshot, force=True)  # unless asked
    bad = tmp_path / "tampered" / manifest.file
    bad.parent.mkdir()
    bad.write_bytes(snapshot.read_bytes() + b"x")
    backups.manifest_of(bad).write_text(backups.manifest_of(snapshot).read_text())
    with pytest.raises(backups.BackupError, match="does not match its manifest"):
        await backups.restore(empty.engine, bad)
    other = "postgresql" if manifest.dialect == "sqlite" else "sqlite"
    foreign = tmp_path / "foreign" / manifest.file
    foreign.parent.mkdir()
    foreign.write_bytes(snapshot.read_bytes())
    text_ = backups.manifest_of(snapshot).read_text().replace(manifest.dialect, other)
    backups.manifest_of(foreign).write_text(text_)
    with pytest.raises(backups.BackupError, match=f"a {other} backup cannot be restored"):
        await backups.restore(empty.engine, foreign)
