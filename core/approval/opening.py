"""Opening a request and drafting it anew: a job opened on its first draft and put up for
approval on the route the policy in force gives it; a new draft version (terms changed, an
approver's edit, a reissue) routed afresh, with new cards and the old ones superseded."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from core.approval.budgets import month_standings, over_budget
from core.approval.policies import Rules
from core.approval.routes import Route, route_draft
from core.approval.standing import ask_approvers, policy_now
from core.drafting.drafts import Draft, draft_hash
from core.errors import (
    DraftChanged,
    DuplicatePurchaseOrder,
    IllegalTransition,
)
from core.jobs.jobs import AuditEvent, Job, NewJob, Stamp
from core.jobs.notices import Notice
from core.jobs.sends import cancel_open_effects
from core.jobs.states import Action, State, next_state
from core.jobs.transitions import load, move, retry_on_stale, step
from core.ports import ReadTx, Store, Tx


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
    await tx.append_audit(*audits)
    await tx.insert_notice(*owed)
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


async def revise_in(
    tx: Tx,
    job: Job,
    revision: Revision,
    stamp: Stamp,
    rules: Rules,
    action: Action = Action.REVISE,
) -> Job:
    """Store a new draft version of `job` inside `tx` (an unchanged draft is a no-op) and ask
    for its approval; `action`: REVISE, or SUPPLIER_PROPOSE for a sent PO's supplier's
    proposal (core.suppliers.pages)."""
    draft = revision.draft
    if draft.po_number != job.po_number:
        raise DraftChanged("a revision cannot change the PO number")
    if job.draft_hash == draft_hash(draft) and job.state in _UNCHANGED_KEEPS_VERSION:
        return job
    next_state(job.state, action)  # nothing is written for a job that cannot revise
    # After a rejected proposal the job stands at an earlier version than the last stored.
    version = max(job.draft_version or 0, await tx.latest_draft_version(job.id)) + 1
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
    job = await move(tx, job, action, stamp, detail, **_draft_fields(version, draft), **changes)
    await ask_approvers(tx, job, stamp.at, default)  # the new version's cards; old ones go stale
    return job
