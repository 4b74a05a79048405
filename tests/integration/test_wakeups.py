"""Runners woken when their work commits (store.wakeups): in this process by the commit itself,
in others by PostgreSQL's NOTIFY, which a listener turns into the same event and keeps hearing
after its connection is cut. A rolled-back transaction wakes no one."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Rules, Verdict
from core.jobs.effects import EffectStatus
from store.wakeups import NOTICES, OUTBOX, Wakeups, listening
from tests.helpers.factories import APPROVER_A, T0, make_draft, new_job

PO = "PO-2026-001"


class Undone(Exception):
    """Raised inside a transaction to roll it back."""


async def _opened(store):
    return await opening.open_job(store, new_job(), make_draft(PO), T0, Rules())


async def _approve(store, job):
    review = Review(PO, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash)
    return (await decisions.decide(store, review, T0, Rules())).job


async def test_work_committed_wakes_its_runner_here_and_a_rollback_wakes_none(store):
    outbox, notices = store.wakeups.event(OUTBOX), store.wakeups.event(NOTICES)
    job = await _opened(store)  # the cards are owed: the notice runner's work
    assert notices.is_set() and not outbox.is_set()
    await _approve(store, job)  # the e-mail is owed
    assert outbox.is_set()
    outbox.clear()
    with pytest.raises(Undone):
        async with store.begin() as tx:
            [effect] = await tx.effects_for(job.id)
            await tx.update_effect(effect, status=EffectStatus.PENDING)  # due again…
            raise Undone  # …but never committed
    assert not outbox.is_set()
    async with store.begin() as tx:  # a runner's own progress is no news for it
        [effect] = await tx.effects_for(job.id)
        await tx.update_effect(effect, attempts=1)
    assert not outbox.is_set()


async def _set_soon(event: asyncio.Event, within: float = 5.0) -> None:
    async with asyncio.timeout(within):
        await event.wait()


async def test_another_process_hears_the_commit_and_goes_on_hearing_after_a_cut(store, db_url):
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite has one process: its commits wake it directly")
    other = Wakeups()  # another process's events, fed only by its listener
    outbox, notices = other.event(OUTBOX), other.event(NOTICES)
    async with listening(db_url, other):
        await _set_soon(outbox)  # connected: whatever was committed meanwhile is looked at
        outbox.clear()
        notices.clear()
        job = await _opened(store)
        await _set_soon(notices)
        assert not outbox.is_set()
        await _approve(store, job)
        await _set_soon(outbox)
        outbox.clear()
        with pytest.raises(Undone):
            async with store.begin() as tx:
                [effect] = await tx.effects_for(job.id)
                await tx.update_effect(effect, status=EffectStatus.PENDING)
                raise Undone
        await asyncio.sleep(0.3)
        assert not outbox.is_set()  # NOTIFY is sent only by a COMMIT

        async with store.engine.connect() as conn:  # the listener's connection is cut
            cut = await conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE query LIKE 'LISTEN %manzoori_wakeups%' AND pid <> pg_backend_pid() "
                    "AND datname = current_database()"
                )
            )
            assert cut.scalars().all() == [True]
        await _set_soon(outbox)  # connected again: a look at what it may have missed
        outbox.clear()
        async with store.begin() as tx:  # due again, committed: heard
            [effect] = await tx.effects_for(job.id)
            await tx.update_effect(effect, status=EffectStatus.PENDING)
        await _set_soon(outbox)
