"""Use cases: each call is one transaction that moves a job along the table."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from core import effects
from core.drafts import Draft, draft_hash
from core.errors import (
    AlreadyDecided,
    ApprovalExpired,
    DraftChanged,
    DuplicatePurchaseOrder,
    IllegalTransition,
    ReconcileRefused,
)
from core.jobs import WORKFLOW_VERSION, AuditEvent, Effect, Job, NewJob
from core.notices import queue_cards, queue_refresh
from core.policies import (
    ApprovalPolicy,
    Decision,
    Outcome,
    Role,
    Verdict,
    check_reviewer,
    evaluate,
)
from core.ports import Store, Tx
from core.retries import RetryPolicy
from core.states import Action, State, next_state
from core.workflow import (
    cancel_open_effects,
    expire_job,
    load,
    move,
    retry_stale,
    standing_decisions,
)

_DECIDED = frozenset(
    {
        State.APPROVED,
        State.SENDING,
        State.SENT,
        State.REJECTED,
        State.FAILED_RETRYABLE,
        State.FAILED_FINAL,
        State.UNKNOWN_OUTCOME,
        State.CANCELLED,
    }
)


@dataclass(frozen=True)
class Rules:
    """The policies in force, handed in by the shell's configuration."""

    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    retry: RetryPolicy = field(default_factory=RetryPolicy)


def _draft_fields(version: int, draft: Draft) -> dict[str, Any]:
    return {
        "draft_version": version,
        "draft_hash": draft_hash(draft),
        "supplier_id": draft.supplier_id,
        "total_paisa": draft.total_paisa,
    }


async def open_job(store: Store, new: NewJob, draft: Draft, now: datetime, rules: Rules) -> Job:
    """Record a request and its first draft, and ask for approval; repeats are harmless."""
    return await retry_stale(partial(_open_once, store, new, draft, now, rules))


async def _open_once(store: Store, new: NewJob, draft: Draft, now: datetime, rules: Rules) -> Job:
    async with store.begin() as tx:
        existing = await tx.job_by_po(draft.po_number)
        if existing is not None:
            if existing.input_ref == new.input_ref:
                return existing
            raise DuplicatePurchaseOrder(f"{draft.po_number} belongs to another request")
        return await open_in(tx, new, draft, now, rules)


async def open_in(tx: Tx, new: NewJob, draft: Draft, now: datetime, rules: Rules) -> Job:
    """Insert a job with its first draft and ask for approval, inside `tx`."""
    job = Job(
        id=new.id, po_number=draft.po_number, state=State.RECEIVED, version=0,
        requester_id=new.requester_id, input_ref=new.input_ref,
        workflow_version=WORKFLOW_VERSION, source_versions=new.source_versions,
        tool_results=new.tool_results, draft_version=None, draft_hash=None,
        supplier_id=None, total_paisa=None, retry_count=0, decision_deadline=None,
        created_at=now, updated_at=now,
    )  # fmt: skip
    await tx.insert_job(job)  # a PO number taken meanwhile raises StaleJob: re-read
    actor = f"user:{new.requester_id}"
    receive = {"input_ref": new.input_ref}
    await tx.append_audit(AuditEvent(job.id, now, actor, "receive", None, job.state, receive))
    job = await move(tx, job, Action.VALIDATE, now, actor)
    job = await move(tx, job, Action.RESEARCH, now, actor, new.source_versions)
    await tx.insert_draft(job.id, 1, draft, now)
    job = await move(tx, job, Action.DRAFT, now, actor, {"draft_version": 1},
                     **_draft_fields(1, draft))  # fmt: skip
    basis = {"basis": rules.approval.basis(draft.total_paisa)}
    job = await move(tx, job, Action.REQUEST_APPROVAL, now, actor, basis,
                     decision_deadline=now + rules.approval.ttl)  # fmt: skip
    await queue_cards(tx, job, now)
    return job


# A revision with an unchanged draft keeps the version in these states; elsewhere (EXPIRED,
# FAILED_*) the same content is issued as a new version so that it can be approved afresh.
_UNCHANGED_KEEPS_VERSION = frozenset({State.DRAFTED, State.AWAITING_APPROVAL, State.APPROVED})


async def revise(
    store: Store, po_number: str, draft: Draft, actor: str, now: datetime, rules: Rules,
    note: str | None = None,
) -> Job:  # fmt: skip
    """Store a new draft version; earlier approvals stop counting and open sends are cancelled."""
    async with store.begin() as tx:
        return await revise_in(tx, await load(tx, po_number), draft, actor, now, rules, note)


async def reissue(
    store: Store, po_number: str, actor: str, note: str, now: datetime, rules: Rules
) -> Job:
    """Issue an EXPIRED or FAILED job's draft again as a new version, to be approved afresh."""
    async with store.begin() as tx:
        job = await load(tx, po_number)
        if job.state in _UNCHANGED_KEEPS_VERSION or job.draft_version is None:
            raise IllegalTransition(job.state, "reissue")
        draft = await tx.draft(job.id, job.draft_version)
        return await revise_in(tx, job, draft, actor, now, rules, note)


async def revise_in(
    tx: Tx,
    job: Job,
    draft: Draft,
    actor: str,
    now: datetime,
    rules: Rules,
    note: str | None,
    evidence: dict[str, Any] | None = None,
    **changes: Any,
) -> Job:
    """Store a new draft version of `job` inside `tx` (unchanged drafts are a no-op);
    `evidence` joins the audit event, `changes` the job row."""
    if draft.po_number != job.po_number:
        raise DraftChanged("a revision cannot change the PO number")
    if job.draft_hash == draft_hash(draft) and job.state in _UNCHANGED_KEEPS_VERSION:
        return job
    next_state(job.state, Action.REVISE)  # nothing is written for a job that cannot revise
    version = (job.draft_version or 0) + 1
    await tx.insert_draft(job.id, version, draft, now)
    await cancel_open_effects(tx, job, now, "superseded by a new draft version")
    detail = {"draft_version": version, **({"note": note} if note else {}), **(evidence or {})}
    job = await move(tx, job, Action.REVISE, now, actor, detail,
                     decision_deadline=now + rules.approval.ttl,
                     **_draft_fields(version, draft), **changes)  # fmt: skip
    await queue_cards(tx, job, now)  # the new version needs new cards; the old ones go stale
    return job


@dataclass(frozen=True)
class DecisionResult:
    """What a decision did: the job after it, and whether the policy is now met."""

    job: Job
    decision: Decision
    outcome: Outcome


async def decide(
    store: Store,
    po_number: str,
    reviewer_id: int,
    verdict: Verdict,
    draft_version: int,
    reviewed_hash: str,
    now: datetime,
    rules: Rules,
    reason: str | None = None,
) -> DecisionResult:
    """Record an authenticated reviewer's decision on one exact draft version and hash."""
    once = partial(_decide_once, store, po_number, reviewer_id, verdict, draft_version,
                   reviewed_hash, now, rules, reason)  # fmt: skip
    return await retry_stale(once)


async def _decide_once(
    store: Store,
    po_number: str,
    reviewer_id: int,
    verdict: Verdict,
    draft_version: int,
    reviewed_hash: str,
    now: datetime,
    rules: Rules,
    reason: str | None,
) -> DecisionResult:
    async with store.begin() as tx:
        job = await load(tx, po_number)
        check_reviewer(await tx.roles(reviewer_id), reviewer_id, job.requester_id)
        decisions = await standing_decisions(tx, job.id)  # the revoked count no more
        if job.state in _DECIDED:
            raise AlreadyDecided(f"{po_number} is already {job.state.value}")
        if job.state is State.EXPIRED:
            raise ApprovalExpired(f"{po_number} expired; it needs a new draft")
        next_state(job.state, Action.APPROVE)  # a job not yet drafted cannot be decided
        if (job.draft_version, job.draft_hash) != (draft_version, reviewed_hash):
            raise DraftChanged(
                f"{po_number} changed to version {job.draft_version}; review the new draft"
            )
        if any(
            (d.reviewer_id, d.draft_version, d.draft_hash)
            == (reviewer_id, draft_version, reviewed_hash)
            for d in decisions
        ):
            raise AlreadyDecided("you already decided this draft")
        if job.decision_deadline is None or now < job.decision_deadline:
            return await _record(tx, job, decisions, reviewer_id, verdict, now, rules, reason)
        # Too late: the expiry is committed, then the reviewer is told.
        await expire_job(tx, job, now, "runner", "approval window closed")
    raise ApprovalExpired(f"{po_number} expired before this decision")


async def _record(
    tx: Tx,
    job: Job,
    decisions: list[Decision],
    reviewer_id: int,
    verdict: Verdict,
    now: datetime,
    rules: Rules,
    reason: str | None,
) -> DecisionResult:
    assert job.draft_version is not None and job.draft_hash is not None
    assert job.total_paisa is not None
    decision = Decision(
        job.id,
        reviewer_id,
        Role.APPROVER,
        verdict,
        job.draft_version,
        job.draft_hash,
        now,
        now + rules.approval.ttl,
        rules.approval.basis(job.total_paisa),
        reason,
    )
    await tx.insert_decision(decision)
    outcome = evaluate(
        rules.approval,
        job.total_paisa,
        [*decisions, decision],
        job.draft_version,
        job.draft_hash,
        now,
    )
    actor = f"user:{reviewer_id}"
    detail = {
        "verdict": verdict.value,
        "draft_version": job.draft_version,
        "draft_hash": job.draft_hash,
        "basis": decision.policy_basis,
    }
    if outcome is Outcome.APPROVED:
        job = await move(tx, job, Action.APPROVE, now, actor, detail)
        await tx.insert_effect(_send_effect(job, now))
    elif outcome is Outcome.REJECTED:
        job = await move(tx, job, Action.REJECT, now, actor, detail)
    else:
        job = await tx.update_job(job, updated_at=now)
        await tx.append_audit(
            AuditEvent(
                job.id,
                now,
                actor,
                "record_approval",
                job.state,
                job.state,
                {"job_version": job.version, **detail},
            )
        )
        await queue_refresh(tx, job, now)  # every card shows the approvals counted so far
    return DecisionResult(job, decision, outcome)


def _send_effect(job: Job, now: datetime) -> Effect:
    assert job.draft_version is not None and job.draft_hash is not None
    key = effects.send_po_key(job.po_number, job.draft_version, job.draft_hash)
    return Effect(
        key,
        job.id,
        "send-po",
        job.draft_version,
        job.draft_hash,
        effects.EffectStatus.PENDING,
        0,
        0,
        now,
        None,
        None,
        None,
        None,
        None,
        None,
        now,
        now,
    )


async def expire_due(store: Store, now: datetime, limit: int = 100) -> list[Job]:
    """Expire requests whose approval window closed without a decision; a request a tap or
    another process moved meanwhile is read again."""
    return await retry_stale(partial(_expire_due_once, store, now, limit))


async def _expire_due_once(store: Store, now: datetime, limit: int) -> list[Job]:
    async with store.begin() as tx:
        due = await tx.jobs_past_deadline(State.AWAITING_APPROVAL, now, limit)
        return [await expire_job(tx, job, now, "runner", "approval window closed") for job in due]


async def cancel(store: Store, po_number: str, actor: str, note: str, now: datetime) -> Job:
    """Withdraw a request that has not been sent; open sends are cancelled with it."""
    async with store.begin() as tx:
        job = await load(tx, po_number)
        next_state(job.state, Action.CANCEL)
        await cancel_open_effects(tx, job, now, "cancelled")
        return await move(tx, job, Action.CANCEL, now, actor, {"note": note})


async def reconcile(
    store: Store, po_number: str, action: Action, actor: str, note: str, now: datetime
) -> Job:
    """Record a person's finding on an unknown outcome: sent, not sent, or failed."""
    async with store.begin() as tx:
        job = await load(tx, po_number)
        if job.state is not State.UNKNOWN_OUTCOME:
            raise ReconcileRefused(f"{po_number} is {job.state.value}, not UNKNOWN_OUTCOME")
        return await settle_unknown(tx, job, action, actor, note, now)


async def settle_unknown(
    tx: Tx,
    job: Job,
    action: Action,
    actor: str,
    note: str,
    now: datetime,
    detail: dict[str, Any] | None = None,
) -> Job:
    """Move an UNKNOWN_OUTCOME job on a person's finding, and settle its send to match."""
    # The job first: its compare-and-set is what a concurrent finding loses on.
    moved = await move(tx, job, action, now, actor, {"note": note, **(detail or {})})
    settlements: dict[Action, dict[str, Any]] = {
        Action.RECONCILE_SENT: {
            "status": effects.EffectStatus.SUCCEEDED,
            "result": {"reconciled_by": actor, "note": note},
        },
        # A person's decision to send again starts a fresh retry budget, on the same row:
        # the same key and Message-ID.
        Action.RECONCILE_NOT_SENT: {
            "status": effects.EffectStatus.PENDING,
            "next_attempt_at": now,
            "attempts": 0,
            "first_attempt_at": None,
        },
        Action.RECONCILE_FAILED: {"status": effects.EffectStatus.FAILED, "last_error": note},
    }
    for effect in await tx.effects_for(job.id):
        if effect.status is effects.EffectStatus.UNKNOWN:
            await tx.update_effect(
                effect, lease_owner=None, lease_until=None, updated_at=now, **settlements[action]
            )
    return moved
