"""The store's own guarantees, on SQLite and PostgreSQL: schema, constraints, compare-and-set."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, IntegrityError, StatementError

from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Rules, Verdict
from core.drafting.drafts import DraftLine, canonical_bytes, draft_hash
from core.errors import LeaseLost, StaleJob, StoredDataError
from core.jobs.effects import EffectStatus
from core.jobs.states import State
from store.migrate import alembic_config, current
from store.schema import metadata
from store.sealing import Sealer
from store.sql import _OPEN_ON_LOOP
from tests.helpers.factories import APPROVER_A, T0, make_draft, new_job


async def approved(store, po="PO-2026-001"):
    job = await opening.open_job(store, new_job(), make_draft(po), T0, Rules())
    return (
        await decisions.decide(
            store, Review(po, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash), T0, Rules()
        )
    ).job


async def test_migrations_build_exactly_the_declared_schema(store):
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert await current(store.engine) == head == "0020"  # the newest revision
    async with store.engine.connect() as conn:
        diff = await conn.run_sync(
            lambda sync: compare_metadata(MigrationContext.configure(sync), metadata)
        )
    assert diff == []


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_events SET actor = 'someone else'",  # rewriting history
        "DELETE FROM audit_events",  # erasing history
        "UPDATE drafts SET total_paisa = 1",  # changing an approved draft in place
        "DELETE FROM decisions",  # dropping an approval record
    ],
    ids=["audit-update", "audit-delete", "draft-update", "decision-delete"],
)
async def test_append_only_tables_refuse_changes(store, statement):
    await approved(store)
    with pytest.raises(DBAPIError, match="append-only"):
        async with store.begin() as tx:
            await tx.conn.execute(text(statement))


async def test_naive_datetimes_are_refused(store):
    job = await approved(store)
    with pytest.raises(StatementError, match="naive"):
        async with store.begin() as tx:
            await tx.update_job(job, updated_at=datetime(2026, 1, 1))


async def test_times_come_back_as_aware_utc(store):
    job = await approved(store)
    async with store.begin() as tx:
        again = await tx.job(job.id)
    assert again.created_at == T0 and again.created_at.utcoffset() == timedelta(0)
    assert again.decision_deadline == T0 + timedelta(days=1)


async def test_stale_compare_and_set_on_a_job_fails(store):
    job = await approved(store)
    async with store.begin() as tx:
        await tx.update_job(job, retry_count=1)
    with pytest.raises(StaleJob):
        async with store.begin() as tx:
            await tx.update_job(job, retry_count=2)  # read before the first update
    with pytest.raises(StaleJob):
        async with store.begin() as tx:
            await tx.update_job(
                replace(job, version=job.version + 1, state=State.SENT), state=State.SENDING
            )


async def test_stale_compare_and_set_on_an_effect_fails(store):
    job = await approved(store)
    async with store.begin() as tx:
        [effect] = await tx.effects_for(job.id)
        await tx.update_effect(effect, attempts=1)
    with pytest.raises(LeaseLost):
        async with store.begin() as tx:
            await tx.update_effect(effect, status=EffectStatus.STARTED)


async def test_a_second_row_for_one_business_action_is_impossible(store):
    job = await approved(store)
    async with store.begin() as tx:
        [effect] = await tx.effects_for(job.id)
    with pytest.raises(IntegrityError):
        async with store.begin() as tx:
            await tx.insert_effect(replace(effect, status=EffectStatus.PENDING, version=0))


async def test_concurrent_claims_never_share_a_row(store):
    for n in range(1, 13):
        await approved(store, f"PO-2026-{n:03d}")
    lease = T0 + timedelta(minutes=1)

    async def claim(owner):
        async with store.begin() as tx:
            return await tx.claim_due(T0, owner, lease, 5)

    batches = await asyncio.gather(*(claim(f"r{n}") for n in range(4)))
    keys = [e.key for batch in batches for e in batch]
    assert len(keys) == len(set(keys)) == 12
    assert all(len(batch) <= 5 for batch in batches)
    assert {e.lease_owner for batch in batches for e in batch} <= {"r0", "r1", "r2", "r3"}


# A draft long enough to be opened off the event loop (store.sql._OPEN_ON_LOOP).
LONG_LINES = tuple(
    DraftLine(f"SKU-{n:05d}", f"Item {n}", 1, 1_000, "a note long enough ".ljust(100, "x"))
    for n in range(1_000)
)


async def test_a_long_draft_is_opened_whole_and_checked_off_the_loop(store, monkeypatch):
    draft = make_draft(lines=LONG_LINES)
    assert len(canonical_bytes(draft)) > 2 * _OPEN_ON_LOOP  # sealed, longer still
    long = await opening.open_job(store, new_job(), draft, T0, Rules())
    short = await opening.open_job(store, new_job(), make_draft("PO-2026-002"), T0, Rules())
    opened_in = []
    sealer_open = Sealer.open

    def open_noting_the_thread(sealer, token):
        opened_in.append(threading.current_thread() is threading.main_thread())
        return sealer_open(sealer, token)

    monkeypatch.setattr(Sealer, "open", open_noting_the_thread)
    async with store.reading() as tx:
        again = await tx.draft(long.id, 1)
        await tx.draft(short.id, 1)
    assert again == draft
    assert draft_hash(again) == draft_hash(draft) == long.draft_hash
    assert opened_in == [False, True]  # the long one in a thread; the loop kept the short one


@pytest.mark.parametrize("forged_lines", [None, LONG_LINES], ids=["short", "long"])
async def test_a_draft_altered_behind_the_stores_back_is_refused(store, db_url, forged_lines):
    job = await approved(store)
    disable = (
        "ALTER TABLE drafts DISABLE TRIGGER drafts_append_only"
        if db_url.startswith("postgresql")
        else "DROP TRIGGER drafts_no_update"
    )
    async with store.begin() as tx:
        lines = {"lines": forged_lines} if forged_lines else {}
        forged = tx._sealer.seal(canonical_bytes(make_draft(quantity=99, **lines)))
        await tx.conn.execute(text(disable))
        await tx.conn.execute(text("UPDATE drafts SET body_encrypted = :b"), {"b": forged})
    with pytest.raises(StoredDataError, match="does not match its hash"):
        async with store.begin() as tx:
            await tx.draft(job.id, 1)
    if db_url.startswith("postgresql"):
        async with store.begin() as tx:
            await tx.conn.execute(text("ALTER TABLE drafts ENABLE TRIGGER drafts_append_only"))
