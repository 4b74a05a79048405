"""A burst of decisions in one transaction (store.batched, core.approval.decisions.decide_in),
on SQLite and PostgreSQL: the same outcomes, rows and refusals as each decided alone, and what
the transaction remembers stays what the database holds, through writes and rollbacks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text

from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import ApprovalPolicy, Role, Rules, Verdict
from core.errors import ApprovalError, BurstUndone, InsertConflict, NotAnApprover
from core.jobs.states import Action, State
from store.sql import SqlTx
from tests.helpers.factories import APPROVER_A, APPROVER_B, OUTSIDER, T0, make_draft, new_job

RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24), dual_above_paisa=500_000 * 100))
BIG = 60_000_000  # paisa per unit: above the dual threshold, two approvals needed
LATER = T0 + timedelta(minutes=5)


async def _open(store, po: str, unit: int = 125_000):
    draft = make_draft(po, unit_price_paisa=unit)
    return await opening.open_job(store, new_job(), draft, T0, RULES)


async def _burst(store, prefix: str):
    """Three jobs and six decisions on them, refusals among them (the outsider; a repeat)."""
    big = await _open(store, f"PO-2026-{prefix}01", BIG)
    small = await _open(store, f"PO-2026-{prefix}02")
    other = await _open(store, f"PO-2026-{prefix}03")

    def review(job, who):
        return Review(job.po_number, who, Verdict.APPROVE, job.draft_version, job.draft_hash)

    return [
        review(big, APPROVER_A),
        review(small, APPROVER_A),
        review(big, APPROVER_B),  # completes the dual approval of the first
        review(small, APPROVER_B),  # the PO is approved already
        review(other, OUTSIDER),  # not an approver
        review(big, APPROVER_A),  # decided already
    ]


def _what(result) -> str:
    return f"{type(result).__name__}" if isinstance(result, Exception) else result.outcome.value


async def _rows(store, po: str):
    async with store.reading() as tx:
        job = await tx.job_by_po(po)
        decided = [(d.reviewer_id, d.stage, d.verdict) for d in await tx.decisions(job.id)]
        effects = [e.kind for e in await tx.effects_for(job.id)]
        notices = sorted(n.kind for n in await tx.notices_for(job.id))
        audit = [(a.action, a.to_state) for a in await tx.audit(job.id)]
    return job.state, job.version, decided, effects, notices, audit


async def test_a_burst_decided_together_is_what_each_alone_would_be(store):
    async with store.begin() as tx:
        await tx.grant(OUTSIDER, Role.REQUESTER, "test", T0)
    alone, together = await _burst(store, "1"), await _burst(store, "2")
    one_by_one = []
    for review in alone:
        try:
            one_by_one.append(_what(await decisions.decide(store, review, LATER, RULES)))
        except ApprovalError as refused:
            one_by_one.append(_what(refused))
    in_one = []
    async with store.begin_batch() as tx:
        jobs = [(await tx.job_by_po(r.po_number)).id for r in together]
        await tx.prefetch(jobs, [r.reviewer_id for r in together], ())
        for review in together:
            try:
                async with tx.each():
                    in_one.append(_what(await decisions.decide_in(tx, review, LATER, RULES)))
            except ApprovalError as refused:
                in_one.append(_what(refused))
    assert one_by_one == in_one == [
        "pending", "approved", "approved", "AlreadyDecided", "NotAnApprover", "AlreadyDecided",
    ]  # fmt: skip
    for n in ("01", "02", "03"):
        assert await _rows(store, f"PO-2026-1{n}") == await _rows(store, f"PO-2026-2{n}")


async def test_what_a_batch_remembers_follows_its_writes_and_refusals(store):
    job = await _open(store, "PO-2026-301", BIG)
    async with store.begin_batch() as tx:
        await tx.prefetch([job.id], [APPROVER_A, APPROVER_B], ())
        assert await tx.job(job.id) == job
        assert await tx.roles_of([APPROVER_A]) == {APPROVER_A: frozenset({Role.APPROVER})}
        written = await tx.update_job(job, updated_at=LATER)
        assert await tx.job(job.id) == written == await SqlTx.job(tx, job.id)
        with pytest.raises(RuntimeError):
            async with tx.each():  # refused before it wrote: it keeps nothing
                assert await tx.claim_update(7, LATER)
                await tx.met(APPROVER_A, "Ali", LATER, started=False)
                assert await tx.decisions(job.id) == []  # a read changes nothing
                raise RuntimeError("refused")
        assert not tx.holding
        assert await tx.claim_update(7, LATER)  # its claim went with it
        assert not await tx.claim_update(7, LATER)  # claimed once in a burst
        assert await tx.job(job.id) == written == await SqlTx.job(tx, job.id)
        await tx.grant(OUTSIDER, Role.APPROVER, "test", LATER)  # people change: read again
        assert (await tx.roles_of([OUTSIDER]))[OUTSIDER] == frozenset({Role.APPROVER})
        members = await tx.group_members(["approvers"])
        assert members == await SqlTx.group_members(tx, ["approvers"])
        assert OUTSIDER in members["approvers"]


async def test_a_part_that_fails_after_it_wrote_undoes_the_whole_burst(store):
    """A part has no savepoint: one that fails after it wrote is raised as BurstUndone, and
    the burst keeps nothing, even if its caller carried on."""
    first, second = await _open(store, "PO-2026-311"), await _open(store, "PO-2026-312")
    before = [await _rows(store, po) for po in ("PO-2026-311", "PO-2026-312")]

    def review(job):
        return Review(job.po_number, APPROVER_A, Verdict.APPROVE, job.draft_version, job.draft_hash)

    with pytest.raises(BurstUndone):
        async with store.begin_batch() as tx:
            await tx.prefetch([first.id, second.id], [APPROVER_A], ())
            async with tx.each():
                await decisions.decide_in(tx, review(first), LATER, RULES)
            with pytest.raises(BurstUndone):
                async with tx.each():
                    await decisions.decide_in(tx, review(second), LATER, RULES)
                    raise RuntimeError("after it wrote")
            with pytest.raises(BurstUndone):  # a failed statement counts as a write
                async with tx.each():
                    await tx.conn.execute(text("SELECT * FROM no_such_table"))
    assert [await _rows(store, po) for po in ("PO-2026-311", "PO-2026-312")] == before


async def test_delegations_from_memory_are_the_databases(store):
    job = await _open(store, "PO-2026-401")
    async with store.begin() as tx:
        until = T0 + timedelta(days=2)
        first = await tx.insert_delegation(APPROVER_A, APPROVER_B, T0, until, "test")
        await tx.insert_delegation(APPROVER_B, APPROVER_A, T0, T0 + timedelta(hours=1), "test")
        await tx.end_delegation(first.id, T0 + timedelta(hours=3))
    async with store.begin_batch() as tx:
        await tx.prefetch([job.id], [APPROVER_A], ())
        for hours in (-1, 0, 1, 2, 3, 4, 50):
            since = job.created_at + timedelta(hours=hours)
            got = await tx.delegations_since(since)
            assert got == await SqlTx.delegations_since(tx, since), hours
        earlier = job.created_at - timedelta(days=1)  # before what was read: read again
        assert await tx.delegations_since(earlier) == await SqlTx.delegations_since(tx, earlier)


async def test_the_decisions_read_in_a_batch_are_a_copy_the_caller_cannot_change(store):
    job = await _open(store, "PO-2026-501")
    async with store.begin_batch() as tx:
        await tx.prefetch([job.id], [APPROVER_A], ())
        decided = await tx.decisions(job.id)
        decided.append(object())  # type: ignore[arg-type]
        assert await tx.decisions(job.id) == []


async def test_held_inserts_are_read_back_dropped_with_their_part_and_fail_the_burst(store):
    """A burst's audit events, notices, outbox rows and claims are written at its end, yet a
    read in the burst sees them; a part refused drops its own; one that cannot be written at
    the end rolls the whole burst back as InsertConflict."""
    first, second = await _open(store, "PO-2026-601"), await _open(store, "PO-2026-602")
    untouched = await _rows(store, "PO-2026-602")

    def review(job):
        return Review(job.po_number, APPROVER_A, Verdict.APPROVE, job.draft_version, job.draft_hash)

    async with store.begin_batch() as tx:
        await tx.prefetch([first.id, second.id], [APPROVER_A], ())
        async with tx.each():
            assert await tx.claim_update(11, LATER)
            await tx.met(APPROVER_A, "Ali", LATER, started=False)
            await tx.met(APPROVER_B, "Sana", LATER, started=False)
            await decisions.decide_in(tx, review(first), LATER, RULES)
        assert tx.holding
        [effect] = await tx.effects_for(first.id)  # written before the read
        assert effect.kind == "send-po" and not tx.holding
        with pytest.raises(NotAnApprover):
            async with tx.each():
                assert await tx.claim_update(12, LATER)
                await tx.met(OUTSIDER, "Omar", LATER, started=False)
                outsider = Review(
                    second.po_number, OUTSIDER, Verdict.APPROVE, second.draft_version,
                    second.draft_hash,
                )  # fmt: skip
                await decisions.decide_in(tx, outsider, LATER, RULES)
        assert not tx.holding  # the refused part's inserts went with it
    assert await _rows(store, "PO-2026-602") == untouched
    state, _, decided, effects, _, audit = await _rows(store, "PO-2026-601")
    assert state is State.APPROVED and effects == ["send-po"] and len(decided) == 1
    assert audit[-1] == (Action.APPROVE.value, State.APPROVED.value)
    async with store.reading() as tx:  # both names written, not the refused one's
        named = [await tx.telegram_user(user_id) for user_id in (APPROVER_A, APPROVER_B)]
        assert [user.first_name for user in named if user is not None] == ["Ali", "Sana"]
        assert await tx.telegram_user(OUTSIDER) is None
    async with store.begin() as tx:  # 11 claimed with its decision, 12 not
        assert [await tx.claim_update(n, LATER) for n in (11, 12)] == [False, True]
    async with store.begin_batch() as tx:  # a repeat is known from the burst's first read
        await tx.prefetch([second.id], [APPROVER_A], [11, 13])
        assert [await tx.claim_update(n, LATER) for n in (11, 13, 13)] == [False, True, False]

    for taken in ("the update claimed meanwhile", "the outbox row's key"):
        with pytest.raises(InsertConflict):
            async with store.begin_batch() as tx:
                await tx.prefetch([second.id], [APPROVER_A], ())
                async with tx.each():
                    assert await tx.claim_update(
                        11 if taken.startswith("the update") else 13, LATER
                    )
                    await decisions.decide_in(tx, review(second), LATER, RULES)
                if taken == "the outbox row's key":
                    await tx.insert_effect(effect)  # it fails at the end
        assert await _rows(store, "PO-2026-602") == untouched, taken
