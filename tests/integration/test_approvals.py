"""Approvals bind a reviewer, a draft version and hash, and an expiry (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import text

from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.opening import Revision
from core.approval.policies import ApprovalPolicy, Outcome, Role, Rules, Verdict
from core.drafting.drafts import draft_hash
from core.errors import (
    AlreadyDecided,
    ApprovalExpired,
    DraftChanged,
    IllegalTransition,
    NotAnApprover,
    ReconcileRefused,
    SelfApproval,
    UnknownJob,
)
from core.jobs import closing
from core.jobs.jobs import Stamp
from core.jobs.states import Action, State
from tests.helpers.factories import (
    APPROVER_A,
    APPROVER_B,
    OUTSIDER,
    REQUESTER,
    T0,
    make_draft,
    new_job,
)

RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24), dual_above_paisa=500_000 * 100))
BIG = 60_000_000  # paisa per unit: 4 units make PKR 2.4 million, above the dual threshold


async def opened(store, draft=None):
    draft = draft or make_draft()
    return await opening.open_job(store, new_job(), draft, T0, RULES), draft


async def approve(store, job, reviewer, at=T0, verdict=Verdict.APPROVE):
    return await decisions.decide(
        store,
        Review(job.po_number, reviewer, verdict, job.draft_version, job.draft_hash),
        at,
        RULES,
    )


async def effects_of(store, job):
    async with store.begin() as tx:
        return await tx.effects_for(job.id)


async def test_open_job_reaches_awaiting_approval_with_audit(store):
    job, draft = await opened(store)
    assert job.state is State.AWAITING_APPROVAL
    assert (job.draft_version, job.draft_hash) == (1, draft_hash(draft))
    assert job.total_paisa == draft.total_paisa
    async with store.begin() as tx:
        trail = [(e.action, e.to_state) for e in await tx.audit(job.id)]
        assert await tx.draft(job.id, 1) == draft
    assert trail == [
        ("receive", State.RECEIVED),
        ("validate", State.VALIDATED),
        ("research", State.RESEARCHED),
        ("draft", State.DRAFTED),
        ("request_approval", State.AWAITING_APPROVAL),
    ]


async def test_same_input_twice_makes_one_job(store):
    request = new_job()
    first = await opening.open_job(store, request, make_draft(), T0, RULES)
    again = await opening.open_job(store, request, make_draft(), T0, RULES)
    assert again.id == first.id
    async with store.begin() as tx:
        assert len(await tx.list_jobs(None, 10)) == 1


async def test_draft_body_is_encrypted_at_rest(store):
    _job, draft = await opened(store)
    async with store.begin() as tx:
        raw = (await tx.conn.execute(text("SELECT body_encrypted FROM drafts"))).scalar_one()
    assert draft.recipient_email.encode() not in bytes(raw)
    assert b"CBL-USB-C-1M" not in bytes(raw)


async def test_single_approval_approves_and_queues_one_send(store):
    job, _ = await opened(store)
    result = await approve(store, job, APPROVER_A)
    assert result.outcome is Outcome.APPROVED
    assert result.job.state is State.APPROVED
    assert result.decision.expires_at == T0 + timedelta(hours=24)
    [effect] = await effects_of(store, job)
    assert effect.key == f"send-po:{job.po_number}:v1:{job.draft_hash[:12]}"


async def test_same_approver_twice_is_already_decided(store):
    job, _ = await opened(store, make_draft(unit_price_paisa=BIG))
    await approve(store, job, APPROVER_A)
    with pytest.raises(AlreadyDecided):
        await approve(store, job, APPROVER_A)
    async with store.begin() as tx:
        assert len(await tx.decisions(job.id)) == 1
        assert (await tx.job(job.id)).state is State.AWAITING_APPROVAL


async def test_dual_approval_needs_two_distinct_approvers(store):
    job, _ = await opened(store, make_draft(unit_price_paisa=BIG))
    first = await approve(store, job, APPROVER_A)
    assert (first.outcome, first.job.state) == (Outcome.PENDING, State.AWAITING_APPROVAL)
    assert await effects_of(store, job) == []
    second = await approve(store, job, APPROVER_B)
    assert (second.outcome, second.job.state) == (Outcome.APPROVED, State.APPROVED)
    assert len(await effects_of(store, job)) == 1


async def test_two_approvers_at_once_both_count_once(store):
    job, _ = await opened(store, make_draft(unit_price_paisa=BIG))
    results = await asyncio.gather(approve(store, job, APPROVER_A), approve(store, job, APPROVER_B))
    assert sorted(r.outcome.value for r in results) == ["approved", "pending"]
    async with store.begin() as tx:
        assert (await tx.job(job.id)).state is State.APPROVED
        assert {d.reviewer_id for d in await tx.decisions(job.id)} == {APPROVER_A, APPROVER_B}
    assert len(await effects_of(store, job)) == 1


async def test_two_approvers_at_once_on_single_approval_job(store):
    job, _ = await opened(store)
    results = await asyncio.gather(
        approve(store, job, APPROVER_A), approve(store, job, APPROVER_B), return_exceptions=True
    )
    assert sum(not isinstance(r, Exception) for r in results) == 1
    assert [type(r) for r in results if isinstance(r, Exception)] == [AlreadyDecided]
    assert len(await effects_of(store, job)) == 1


async def test_self_approval_refused_even_for_an_approver(store):
    async with store.begin() as tx:
        await tx.grant(REQUESTER, Role.APPROVER, "test", T0)
    job, _ = await opened(store)
    with pytest.raises(SelfApproval):
        await approve(store, job, REQUESTER)
    async with store.begin() as tx:
        assert await tx.decisions(job.id) == []


@pytest.mark.parametrize("reviewer", [OUTSIDER, REQUESTER], ids=["unregistered", "requester-only"])
async def test_non_approver_refused(store, reviewer):
    job, _ = await opened(store)
    with pytest.raises((NotAnApprover, SelfApproval)):
        await approve(store, job, reviewer)


async def test_admin_role_alone_cannot_approve(store):
    async with store.begin() as tx:
        await tx.grant(OUTSIDER, Role.ADMIN, "test", T0)
    job, _ = await opened(store)
    with pytest.raises(NotAnApprover):
        await approve(store, job, OUTSIDER)


async def test_approval_of_v2_does_not_authorise_v3(store):
    job, _draft = await opened(store, make_draft(unit_price_paisa=BIG))
    v2 = await opening.revise(
        store,
        job.po_number,
        Revision(make_draft(unit_price_paisa=BIG, quantity=5)),
        Stamp("user:1001", T0),
        RULES,
    )
    assert v2.draft_version == 2
    await approve(store, v2, APPROVER_A)
    v3 = await opening.revise(
        store,
        job.po_number,
        Revision(make_draft(unit_price_paisa=BIG, quantity=6)),
        Stamp("user:1001", T0),
        RULES,
    )
    assert v3.state is State.AWAITING_APPROVAL and v3.draft_version == 3
    # The v2 approval does not count towards v3: B alone leaves it pending.
    result = await approve(store, v3, APPROVER_B)
    assert result.outcome is Outcome.PENDING
    with pytest.raises(DraftChanged):
        await decisions.decide(
            store, Review(job.po_number, APPROVER_A, Verdict.APPROVE, 2, v2.draft_hash), T0, RULES
        )


async def test_draft_changed_after_approval_blocks_sending(store):
    job, _ = await opened(store)
    approved = (await approve(store, job, APPROVER_A)).job
    assert approved.state is State.APPROVED
    revised = await opening.revise(
        store, job.po_number, Revision(make_draft(quantity=9)), Stamp("user:1001", T0), RULES
    )
    assert revised.state is State.AWAITING_APPROVAL
    [effect] = await effects_of(store, job)
    assert effect.status.value == "cancelled"
    async with store.begin() as tx:
        assert await tx.claim_due(T0 + timedelta(hours=1), "r", T0 + timedelta(hours=2), 10) == []


async def test_unchanged_revision_keeps_version(store):
    job, draft = await opened(store)
    same = await opening.revise(
        store, job.po_number, Revision(draft), Stamp("user:1001", T0), RULES
    )
    assert (same.draft_version, same.version) == (1, job.version)


async def test_stale_hash_is_refused(store):
    job, _ = await opened(store)
    with pytest.raises(DraftChanged):
        await decisions.decide(
            store, Review(job.po_number, APPROVER_A, Verdict.APPROVE, 1, "0" * 64), T0, RULES
        )


async def test_one_rejection_ends_the_request(store):
    job, _ = await opened(store, make_draft(unit_price_paisa=BIG))
    await approve(store, job, APPROVER_A)
    result = await approve(store, job, APPROVER_B, verdict=Verdict.REJECT)
    assert result.job.state is State.REJECTED
    assert await effects_of(store, job) == []
    with pytest.raises(AlreadyDecided):
        await approve(store, job, APPROVER_B)


async def test_decision_after_the_window_expires_the_job(store):
    job, _ = await opened(store)
    with pytest.raises(ApprovalExpired):
        await approve(store, job, APPROVER_A, at=T0 + timedelta(hours=24))
    async with store.begin() as tx:
        assert (await tx.job(job.id)).state is State.EXPIRED
        assert await tx.decisions(job.id) == []


async def test_expire_due_sweeps_only_overdue_requests(store):
    old, _ = await opened(store, make_draft("PO-2026-001"))
    later = await opening.open_job(
        store, new_job(), make_draft("PO-2026-002"), T0 + timedelta(hours=2), RULES
    )
    expired = await closing.expire_due(store, T0 + timedelta(hours=25))
    assert [j.po_number for j in expired] == [old.po_number]
    async with store.begin() as tx:
        assert (await tx.job(later.id)).state is State.AWAITING_APPROVAL


async def test_two_sweeps_at_once_expire_each_request_once(store):
    """Two processes sweep together: the one that loses the compare-and-set reads again."""
    jobs = [(await opened(store, make_draft(f"PO-2026-{n:03d}")))[0] for n in range(1, 6)]
    late = T0 + timedelta(hours=25)
    swept = await asyncio.gather(*(closing.expire_due(store, late) for _ in range(3)))
    assert sorted(j.po_number for batch in swept for j in batch) == [j.po_number for j in jobs]
    async with store.begin() as tx:
        for job in jobs:
            trail = [e.action for e in await tx.audit(job.id)]
            assert trail.count("expire") == 1


async def test_unknown_po_is_refused(store):
    with pytest.raises(UnknownJob):
        await decisions.decide(
            store, Review("PO-NOPE", APPROVER_A, Verdict.APPROVE, 1, "0" * 64), T0, RULES
        )


async def test_cancelled_job_cannot_be_approved_or_reconciled(store):
    job, _ = await opened(store)
    cancelled = await closing.cancel(store, job.po_number, "duplicate order", Stamp("cli", T0))
    assert cancelled.state is State.CANCELLED
    with pytest.raises(AlreadyDecided):
        await approve(store, job, APPROVER_A)
    with pytest.raises(ReconcileRefused):
        await closing.reconcile(store, job.po_number, Action.RECONCILE_SENT, "x", Stamp("cli", T0))
    with pytest.raises(IllegalTransition):
        await closing.cancel(store, job.po_number, "again", Stamp("cli", T0))


async def test_expired_request_reissued_unchanged_needs_and_gets_a_new_approval(store):
    job, draft = await opened(store)
    await closing.expire_due(store, T0 + timedelta(hours=25))
    later = T0 + timedelta(hours=26)
    again = await opening.revise(
        store, job.po_number, Revision(draft), Stamp("user:1001", later), RULES
    )
    assert (again.state, again.draft_version, again.draft_hash) == (
        State.AWAITING_APPROVAL,
        2,
        job.draft_hash,
    )
    result = await decisions.decide(
        store, Review(job.po_number, APPROVER_A, Verdict.APPROVE, 2, again.draft_hash), later, RULES
    )
    assert result.job.state is State.APPROVED
    [effect] = await effects_of(store, job)
    assert effect.key.endswith(f":v2:{job.draft_hash[:12]}")


async def test_the_same_request_delivered_twice_at_once_makes_one_job(store):
    request = new_job()
    jobs = await asyncio.gather(
        *(opening.open_job(store, request, make_draft(), T0, RULES) for _ in range(3))
    )
    assert len({j.id for j in jobs}) == 1
    async with store.begin() as tx:
        assert len(await tx.list_jobs(None, 10)) == 1


async def test_an_approval_by_an_approver_revoked_since_does_not_count(store):
    job, _ = await opened(store, make_draft(unit_price_paisa=BIG))
    await approve(store, job, APPROVER_A)
    async with store.begin() as tx:
        await tx.revoke(APPROVER_A, "cli:admin", T0)
    result = await approve(store, job, APPROVER_B)
    assert (result.outcome, result.job.state) == (Outcome.PENDING, State.AWAITING_APPROVAL)
    assert await effects_of(store, job) == []
