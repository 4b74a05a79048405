"""A supplier's proposal while the approvers decide on it: which answer it is, and what its
end does to the job.

A sent PO whose supplier proposes changes (core.suppliers.pages) is AWAITING_APPROVAL again, at
the proposal's draft version; the version the supplier has is still the one it answered.
Approved, the proposal is sent as the new version (the usual path: APPROVED, SENDING, SENT).
Rejected, or left undecided until its window closes, the job is SENT again at the version the
supplier has, and the supplier is e-mailed that it stands, with the approvers' reason (a
reject-proposal e-mail, core.outbox.notes). A proposal never changes what the buyer approved
until someone approves it.
"""

from __future__ import annotations

from typing import Any

from core.drafting.drafts import draft_hash
from core.jobs.answers import Answer, Outcome, Reply
from core.jobs.effects import EffectKind
from core.jobs.jobs import Effect, Job, Stamp
from core.jobs.notices import turned_down_for
from core.jobs.sends import cancel_open_effects, expire_job
from core.jobs.states import Action, State
from core.jobs.transitions import move
from core.ports import ReadTx, Tx


def under_review(job: Job, answers: list[Answer]) -> Answer | None:
    """The supplier's proposal the job waits on its approvers for, if any: the latest proposal
    put to them and not yet decided, while the job waits for approval (an approver's trim of
    it is still that proposal)."""
    if job.state is not State.AWAITING_APPROVAL:
        return None
    proposals = [
        a
        for a in answers
        if a.reply is Reply.PROPOSE and a.outcome is Outcome.STANDS and a.proposal_version
    ]
    return proposals[-1] if proposals else None


async def proposal_of(tx: ReadTx, job: Job) -> Answer | None:
    """The supplier's proposal `job` waits on, read in `tx` (under_review)."""
    if job.state is not State.AWAITING_APPROVAL:
        return None
    return under_review(job, await tx.supplier_answers(job.id))


async def approved(tx: Tx, job: Job, stamp: Stamp) -> None:
    """Record that the approvers approved the supplier's proposal `job` waited on, if it did:
    its version (or an approver's trim of it) goes to the supplier as the new one."""
    proposal = await proposal_of(tx, job)
    if proposal is not None:
        await tx.decide_supplier_answer(proposal, Outcome.APPROVED, stamp.at)


async def turn_down(
    tx: Tx, job: Job, proposal: Answer, stamp: Stamp, reason: str, *, tell: bool = True
) -> Job:
    """The supplier's proposal rejected (or expired: `reason` says which): the job SENT again
    at the version the supplier has, the proposal's open sends cancelled, and, with `tell`,
    the supplier e-mailed that its version stands (a reject-proposal e-mail named by the
    proposal's version and hash). Without `tell` (the PO is being called off in the same
    transaction) the cancellation says all there is."""
    kept = await tx.draft(job.id, proposal.draft_version)
    await cancel_open_effects(tx, job, stamp.at, "the supplier's proposal was turned down")
    detail: dict[str, Any] = {
        "proposal_version": job.draft_version,
        "draft_version": proposal.draft_version,
        "reason": reason,
    }
    assert job.draft_version is not None and job.draft_hash is not None
    version, hash_ = job.draft_version, job.draft_hash  # the proposal's
    moved = await move(
        tx,
        job,
        Action.REJECT_PROPOSAL,
        stamp,
        detail,
        draft_version=proposal.draft_version,
        draft_hash=draft_hash(kept),
        supplier_id=kept.supplier_id,
        total_paisa=kept.total_paisa,
        decision_deadline=None,
    )
    await tx.decide_supplier_answer(proposal, Outcome.REJECTED, stamp.at)
    await tx.insert_notice(turned_down_for(moved, stamp.at))
    if tell:
        kind = EffectKind.REJECT_PROPOSAL
        await tx.insert_effect(Effect.owed(kind, job.po_number, job.id, version, hash_, stamp.at))
    return moved


async def expire(tx: Tx, job: Job, stamp: Stamp, why: str) -> Job:
    """A request whose approval window closed: a supplier's proposal is turned down (the
    version the supplier has stands, and they are told), anything else EXPIRED."""
    proposal = await proposal_of(tx, job)
    if proposal is None:
        return await expire_job(tx, job, stamp, why)
    return await turn_down(tx, job, proposal, stamp, f"no decision in time ({why})")


async def rejection_reason(tx: ReadTx, job: Job, proposal_version: int | None = None) -> str:
    """Why the proposal of `proposal_version` (None: the latest) was turned down, from the move
    that did."""
    turned = [
        a
        for a in await tx.audit(job.id)
        if a.action == Action.REJECT_PROPOSAL.value
        and proposal_version in (None, a.detail.get("proposal_version"))
    ]
    return str(turned[-1].detail.get("reason", "")) if turned else ""
