"""Use cases: each call is one transaction that moves a job along the table."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from core.budgets import month_standings, needs_reason, over_budget
from core.decisions import DecisionResult as DecisionResult  # callers import it from here
from core.decisions import Review as Review  # callers import it from here
from core.decisions import client_row, replay_of
from core.dispatch import cancel_open_effects, expire_job, settle_unknown_sends
from core.drafts import Draft, draft_hash
from core.errors import (
    AlreadyDecided,
    ApprovalError,
    ApprovalExpired,
    DelegationEnded,
    DraftChanged,
    DuplicatePurchaseOrder,
    IllegalTransition,
    NotYourTurn,
    ReasonRequired,
    ReconcileRefused,
)
from core.jobs import AuditEvent, Effect, Job, NewJob, Stamp
from core.notices import Notice, card_edits_for
from core.policies import (
    Decision,
    Outcome,
    Policy,
    Role,
    Route,
    Rules,
    Verdict,
    check_reviewer,
    route_draft,
    stage_for,
    tally,
)
from core.ports import ReadTx, Store, Tx
from core.replays import device_detail
from core.states import Action, State, next_state
from core.workflow import (
    Standing,
    alert_if_short,
    ask_approvers,
    load,
    move,
    policy_now,
    retry_on_stale,
    standing,
    step,
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


def _draft_fields(version: int, draft: Draft) -> dict[str, Any]:
    return {
        "draft_version": version,
        "draft_hash": draft_hash(draft),
        "supplier_id": draft.supplier_id,
        "total_paisa": draft.total_paisa,
    }


@retry_on_stale
async def open_job(store: Store, new: NewJob, draft: Draft, now: datetime, rules: Rules) -> Job:
    """Record a request and its first draft, and ask for approval; repeats are harmless."""
    async with store.begin() as tx:
        existing = await tx.job_by_po(draft.po_number)
        if existing is not None:
            if existing.input_ref == new.input_ref:
                return existing
            raise DuplicatePurchaseOrder(f"{draft.po_number} belongs to another request")
        return (await open_in(tx, new, draft, now, rules)).job


@dataclass(frozen=True)
class Opened:
    """A request open_in recorded, and the group its first stage waits for with nobody in it
    to ask (None: its cards are owed)."""

    job: Job
    unasked: str | None


async def open_in(tx: Tx, new: NewJob, draft: Draft, now: datetime, rules: Rules) -> Opened:
    """Insert a job with its first draft and ask for approval, inside `tx`. The four moves
    from RECEIVED to AWAITING_APPROVAL are validated and audited one by one, and the row is
    written once, as they leave it: nobody can see it before the transaction commits."""
    received = Job.received(new, draft.po_number, now)
    stamp = Stamp(f"user:{new.requester_id}", now)
    receive = {"input_ref": new.input_ref}
    states = (None, received.state)
    audits = [AuditEvent.stamped(stamp, "receive", receive, job_id=received.id, states=states)]
    default = rules.approval.default_policy
    route = await _route(tx, received, draft, now, rules)
    basis = _route_evidence(route)
    job = received
    owed: list[Notice] = []
    for action, detail, changes in (
        (Action.VALIDATE, None, {}),
        (Action.RESEARCH, new.source_versions, {}),
        (Action.DRAFT, {"draft_version": 1}, _draft_fields(1, draft)),
        (
            Action.REQUEST_APPROVAL,
            basis,
            {"decision_deadline": now + rules.approval.ttl, "route": route.plain()},
        ),
    ):
        done = step(job, action, stamp, detail, **changes)
        job = done.job
        audits.append(done.audit)
        owed.extend(done.owed)
    await tx.insert_job(job)  # a PO number taken meanwhile raises InsertConflict: re-read
    await tx.insert_draft(job.id, 1, draft, now)
    await tx.append_audits(audits)
    await tx.insert_notices(owed)
    return Opened(job, await ask_approvers(tx, job, now, default))


async def _route(tx: ReadTx, job: Job, draft: Draft, now: datetime, rules: Rules) -> Route:
    """The route of a new draft of `job`, on the policy in force: with the budget stage if it
    takes a category over its month now (its own earlier approval not counted)."""
    policy = await policy_now(tx, rules.approval.default_policy)
    zone = rules.approval.zone
    found = await month_standings(tx, policy, draft.lines, now, zone, excluding=job.id)
    return route_draft(policy, draft, over_budget=over_budget(found))


def _route_evidence(route: Route) -> dict[str, Any]:
    """What the audit trail records of the route a draft was given: why it needs whom."""
    stages = [
        {"group": s.group, "approvals": s.approvals, "reason": r.value}
        for s, r in zip(route.stages, route.reasons, strict=True)
    ]
    basis = "; ".join(route.basis(i) for i in range(len(route.stages)))
    return {"basis": basis, "policy_version": route.policy_version, "rule": route.rule,
            "stages": stages}  # fmt: skip


# A revision with an unchanged draft keeps the version in these states; elsewhere (EXPIRED,
# FAILED_*) the same content is issued as a new version so that it can be approved afresh.
_UNCHANGED_KEEPS_VERSION = frozenset({State.DRAFTED, State.AWAITING_APPROVAL, State.APPROVED})


@dataclass(frozen=True)
class Revision:
    """A new draft for a job, and what its audit event and job row say of it."""

    draft: Draft
    evidence: dict[str, Any] = field(default_factory=dict)  # joins the audit event
    changes: dict[str, Any] = field(default_factory=dict)  # joins the job row's update

    @classmethod
    def noted(cls, draft: Draft, note: str | None) -> Revision:
        """A revision a person or the review queue asked for, with their note, if any."""
        return cls(draft, {"note": note} if note else {})


async def revise(
    store: Store, po_number: str, revision: Revision, stamp: Stamp, rules: Rules
) -> Job:
    """Store a new draft version; earlier approvals stop counting and open sends are cancelled."""
    async with store.begin() as tx:
        return await revise_in(tx, await load(tx, po_number), revision, stamp, rules)


async def reissue(store: Store, po_number: str, note: str, stamp: Stamp, rules: Rules) -> Job:
    """Issue an EXPIRED or FAILED job's draft again as a new version, to be approved afresh."""
    async with store.begin() as tx:
        job = await load(tx, po_number)
        if job.state in _UNCHANGED_KEEPS_VERSION or job.draft_version is None:
            raise IllegalTransition(job.state, "reissue")
        draft = await tx.draft(job.id, job.draft_version)
        return await revise_in(tx, job, Revision.noted(draft, note), stamp, rules)


async def revise_in(tx: Tx, job: Job, revision: Revision, stamp: Stamp, rules: Rules) -> Job:
    """Store a new draft version of `job` inside `tx` (an unchanged draft is a no-op)."""
    draft = revision.draft
    if draft.po_number != job.po_number:
        raise DraftChanged("a revision cannot change the PO number")
    if job.draft_hash == draft_hash(draft) and job.state in _UNCHANGED_KEEPS_VERSION:
        return job
    next_state(job.state, Action.REVISE)  # nothing is written for a job that cannot revise
    version = (job.draft_version or 0) + 1
    await tx.insert_draft(job.id, version, draft, stamp.at)
    await cancel_open_effects(tx, job, stamp.at, "superseded by a new draft version")
    # A re-draft is routed afresh, on the policy in force now.
    default = rules.approval.default_policy
    route = await _route(tx, job, draft, stamp.at, rules)
    detail = {"draft_version": version, **_route_evidence(route), **revision.evidence}
    changes = {
        "decision_deadline": stamp.at + rules.approval.ttl,
        "route": route.plain(),
        **revision.changes,
    }
    job = await move(
        tx, job, Action.REVISE, stamp, detail, **_draft_fields(version, draft), **changes
    )
    await ask_approvers(tx, job, stamp.at, default)  # the new version's cards; old ones go stale
    return job


@dataclass(frozen=True)
class _Allowed:
    """A decision _refuse lets through: where the job stands, the stage of its route the
    decision is made in, and the approver away it is made for (None: the reviewer's own)."""

    where: Standing
    stage: int
    on_behalf_of: int | None


async def _refuse(tx: ReadTx, job: Job, review: Review, now: datetime, default: Policy) -> _Allowed:
    """Raise the ApprovalError that refuses `review` now (IllegalTransition for a job not yet
    drafted); else what the decision may be."""
    check_reviewer(await tx.roles(review.reviewer_id), review.reviewer_id, job.requester_id)
    if job.state in _DECIDED:
        raise AlreadyDecided(f"{job.po_number} is already {job.state.value}")
    if job.state is State.EXPIRED:
        raise ApprovalExpired(f"{job.po_number} expired; it needs a new draft")
    next_state(job.state, Action.APPROVE)  # a job not yet drafted cannot be decided
    if (job.draft_version, job.draft_hash) != (review.draft_version, review.draft_hash):
        raise DraftChanged(
            f"{job.po_number} changed to version {job.draft_version}; review the new draft"
        )
    where = await standing(tx, job, now, default)  # the revoked count no more
    mine = (review.reviewer_id, review.draft_version, review.draft_hash)
    if any((d.reviewer_id, d.draft_version, d.draft_hash) == mine for d in where.decisions):
        raise AlreadyDecided("you already decided this draft")
    if job.decision_deadline is not None and now >= job.decision_deadline:
        raise ApprovalExpired(f"{job.po_number} expired before this decision")
    try:
        stage, on_behalf_of = stage_for(
            where.route, where.tally, review.reviewer_id, job.requester_id, where.members,
            where.acting,
        )  # fmt: skip
    except NotYourTurn:
        group = where.members.get(where.waiting_group or "", frozenset())
        ended = [
            d.delegator for d in where.delegations
            if d.delegate == review.reviewer_id and d.delegator in group
        ]  # fmt: skip
        if ended:  # they held the card for someone back now
            raise DelegationEnded(ended[0]) from None
        raise
    return _Allowed(where, stage, on_behalf_of)


async def may_decide(
    store: Store, review: Review, now: datetime, rules: Rules, *, reading: bool
) -> None:
    """Raise what would refuse `review` now, writing nothing: the check a tap makes before it
    asks for a reason (Reject). `reading`: the reviewer only wants to read the draft (Details),
    so only who they are is checked."""
    async with store.reading() as tx:
        job = await load(tx, review.po_number)
        if reading:
            roles = await tx.roles(review.reviewer_id)
            check_reviewer(roles, review.reviewer_id, job.requester_id)
            return
        await _refuse(tx, job, review, now, rules.approval.default_policy)


@retry_on_stale
async def decide(store: Store, review: Review, now: datetime, rules: Rules) -> DecisionResult:
    """Record an authenticated reviewer's decision on one exact draft version and hash, in the
    stage of the job's route that waits for it."""
    async with store.begin() as tx:
        job = await load(tx, review.po_number)
        if (replay := await replay_of(tx, job, review, now, rules)) is not None:
            return replay
        try:
            allowed = await _allowed_or_expired(tx, job, review, now, rules)
        except ApprovalError:
            # A replay that committed since the first look (PostgreSQL reads what committed
            # before each statement): the decision it finds refuses this one; answer as it.
            if (replay := await replay_of(tx, job, review, now, rules)) is not None:
                return replay
            raise
        if allowed is not None:
            if await _needs_reason(tx, job, review, now, rules):
                raise ReasonRequired(f"{job.po_number} goes over a monthly budget")
            if review.client_id is not None:  # first: a concurrent replay waits on its key
                await tx.insert_client_decision(client_row(review.client_id, job, review, now))
            return await _record(tx, job, allowed, review, now, rules)
    raise ApprovalExpired(f"{review.po_number} expired before this decision")


async def _allowed_or_expired(
    tx: Tx, job: Job, review: Review, now: datetime, rules: Rules
) -> _Allowed | None:
    """What _refuse lets `review` do; None if it came too late for a job still waiting, which
    is expired in `tx` (committed with it; the caller then raises ApprovalExpired)."""
    try:
        return await _refuse(tx, job, review, now, rules.approval.default_policy)
    except ApprovalExpired:
        if job.state is not State.AWAITING_APPROVAL:
            raise
        await expire_job(tx, job, Stamp("runner", now), "approval window closed")
        return None


async def _needs_reason(tx: ReadTx, job: Job, review: Review, now: datetime, rules: Rules) -> bool:
    """Whether `review` is an approval without a reason that takes a category over its month
    now: not recorded; the approver is asked for a reason (core.budgets.needs_reason)."""
    if review.verdict is not Verdict.APPROVE or review.reason:
        return False
    return await needs_reason(tx, job, now, rules.approval.zone)


async def _record(
    tx: Tx, job: Job, allowed: _Allowed, review: Review, now: datetime, rules: Rules
) -> DecisionResult:
    """Insert the decision and move the job as its route now says: approved once its last
    stage is complete, on to the next stage's group when this one is, rejected on a "no"."""
    assert job.draft_version is not None and job.draft_hash is not None
    where, stage = allowed.where, allowed.stage
    route = where.route
    decision = Decision(
        job_id=job.id,
        reviewer_id=review.reviewer_id,
        reviewer_role=Role.APPROVER,
        verdict=review.verdict,
        draft_version=job.draft_version,
        draft_hash=job.draft_hash,
        at=now,
        expires_at=now + rules.approval.ttl,
        policy_basis=route.basis(stage),
        reason=review.reason,
        stage=stage,
        policy_version=route.policy_version,
        rule=route.rule,
        on_behalf_of=allowed.on_behalf_of,
    )
    await tx.insert_decision(decision)
    after = tally(
        route,
        [*where.decisions, decision],
        job.draft_version,
        job.draft_hash,
        now,
        job.requester_id,
        where.members,
        where.tally.people,
    )
    stamp = Stamp(f"user:{review.reviewer_id}", now)
    detail = {
        "verdict": review.verdict.value,
        "draft_version": job.draft_version,
        "draft_hash": job.draft_hash,
        "basis": decision.policy_basis,
        "policy_version": route.policy_version,
        "rule": route.rule,
        "stage": stage + 1,
        **device_detail(review.client_id, review.device_time),
    }
    if allowed.on_behalf_of is not None:
        detail["for"] = allowed.on_behalf_of
    if after.outcome is Outcome.APPROVED:
        job = await move(tx, job, Action.APPROVE, stamp, detail, approved_at=now)
        await tx.insert_effect(Effect.send_po(job, now))
    elif after.outcome is Outcome.REJECTED:
        job = await move(tx, job, Action.REJECT, stamp, detail)
    else:
        job = await _counted(tx, job, stamp, detail)
        if after.stage > where.tally.stage:  # the stage is complete: the next group's turn
            await ask_approvers(tx, job, now, rules.approval.default_policy)
        else:  # one approval fewer needed, and one person fewer who may give one
            await alert_if_short(tx, job, replace(where, tally=after), now)
    return DecisionResult(job, decision, after.outcome, route, after)


async def _counted(tx: Tx, job: Job, stamp: Stamp, detail: dict[str, Any]) -> Job:
    """An approval that does not yet meet the policy: audited, and every card shows it."""
    job = await tx.update_job(job, updated_at=stamp.at)
    counted = {"job_version": job.version, **detail}
    states = (job.state, job.state)
    await tx.append_audit(
        AuditEvent.stamped(stamp, "record_approval", counted, job_id=job.id, states=states)
    )
    await tx.insert_notice(card_edits_for(job, stamp.at))
    return job


@retry_on_stale
async def expire_due(store: Store, now: datetime, limit: int = 100) -> list[Job]:
    """Expire requests whose approval window closed without a decision; a request a tap or
    another process moved meanwhile is read again."""
    stamp = Stamp("runner", now)
    async with store.begin() as tx:
        due = await tx.jobs_past_deadline(State.AWAITING_APPROVAL, now, limit)
        return [await expire_job(tx, job, stamp, "approval window closed") for job in due]


async def cancel(store: Store, po_number: str, note: str, stamp: Stamp) -> Job:
    """Withdraw a request that has not been sent; open sends are cancelled with it."""
    async with store.begin() as tx:
        job = await load(tx, po_number)
        next_state(job.state, Action.CANCEL)
        await cancel_open_effects(tx, job, stamp.at, "cancelled")
        return await move(tx, job, Action.CANCEL, stamp, {"note": note})


async def reconcile(store: Store, po_number: str, finding: Action, note: str, stamp: Stamp) -> Job:
    """Record a person's finding on an unknown outcome: sent, not sent, or failed."""
    async with store.begin() as tx:
        job = await load(tx, po_number)
        if job.state is not State.UNKNOWN_OUTCOME:
            raise ReconcileRefused(f"{po_number} is {job.state.value}, not UNKNOWN_OUTCOME")
        return await settle_unknown(tx, job, finding, stamp, {"note": note})


async def settle_unknown(
    tx: Tx, job: Job, finding: Action, stamp: Stamp, detail: dict[str, Any]
) -> Job:
    """Move an UNKNOWN_OUTCOME job on a person's finding (`detail` has their note), and settle
    its send to match."""
    # The job first: its compare-and-set is what a concurrent finding loses on.
    moved = await move(tx, job, finding, stamp, detail)
    await settle_unknown_sends(tx, job, finding, stamp, str(detail.get("note", "")))
    return moved
