"""Deciding a request: a reviewer's decision as it is asked for (Review), checked against the
route, the draft version and hash, the reviewer's role and turn, and recorded with what it
moves (decide); what it did (DecisionResult); and the answer to a replay of one a client kept
under its own id (core.approval.replays). Approve with changes is
core.purchasing.edits.approve_with_changes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from core.approval.budgets import needs_reason
from core.approval.policies import Decision, Outcome, Policy, Role, Rules, Verdict, check_reviewer
from core.approval.replays import (
    ClientAction,
    ClientDecision,
    check_client_id,
    device_detail,
    fingerprint,
    kept_request,
)
from core.approval.routes import Route
from core.approval.standing import Standing, alert_if_short, ask_approvers, standing
from core.approval.tally import Tally, stage_for, tally
from core.errors import (
    AlreadyDecided,
    ApprovalError,
    ApprovalExpired,
    DelegationEnded,
    DraftChanged,
    NotYourTurn,
    ReasonRequired,
)
from core.jobs import proposals
from core.jobs.jobs import AuditEvent, Effect, Job, Stamp
from core.jobs.notices import card_edits_for
from core.jobs.states import Action, State, next_state
from core.jobs.transitions import load, move, retry_on_stale
from core.ports import ReadTx, Store, Tx


@dataclass(frozen=True)
class Review:
    """An authenticated reviewer's decision on one exact draft version and hash."""

    po_number: str
    reviewer_id: int  # from the update Telegram signed, never from text
    verdict: Verdict
    draft_version: int
    draft_hash: str
    reason: str | None = None  # a rejection's, for the requester; an over-budget approval's
    # A client's id for the decision (core.approval.replays), its idempotency key: a replay is
    # answered with what the first one did; and when it was made on the device (kept in the audit).
    client_id: str | None = None
    device_time: datetime | None = None

    def __post_init__(self) -> None:
        check_client_id(self.client_id)

    @property
    def request_sha256(self) -> str:
        """What a replay of this review under its client id must repeat (core.approval.replays)."""
        return fingerprint(
            {"po": self.po_number, "reviewer": self.reviewer_id, "verdict": self.verdict.value,
             "draft_version": self.draft_version, "draft_hash": self.draft_hash,
             "reason": self.reason}
        )  # fmt: skip


@dataclass(frozen=True)
class DecisionResult:
    """What a decision did: the job after it, whether its route is now complete, and where
    the route stands (a stage this decision completed: tally.stage > decision.stage).
    `replay`: a client's id named a decision recorded before, which this is; nothing new
    was written."""

    job: Job
    decision: Decision
    outcome: Outcome
    route: Route
    tally: Tally
    replay: bool = False


async def replay_of(
    tx: ReadTx, job: Job, review: Review, now: datetime, rules: Rules
) -> DecisionResult | None:
    """The answer to `review` if its client id names a decision kept already (a replay)."""
    action = ClientAction(review.verdict.value)
    found = await kept_request(
        tx, review.client_id, job, review.reviewer_id, action, review.request_sha256
    )
    return None if found is None else await replayed(tx, job, found, now, rules)


def client_row(client_id: str, job: Job, review: Review, now: datetime) -> ClientDecision:
    """The row that keeps a client's first decision under its id (core.approval.replays)."""
    action = ClientAction(review.verdict.value)
    version = job.draft_version or 0
    return ClientDecision(
        client_id, job.id, review.reviewer_id, action, review.request_sha256, version, now
    )


async def replayed(
    tx: ReadTx, job: Job, found: ClientDecision, now: datetime, rules: Rules
) -> DecisionResult:
    """The answer to a replay of the decision a client kept under its id: that decision, and
    where its draft stands (judged at its own time, so that approvals expired since still
    show; once the draft has changed, the current draft's standing now)."""
    decision = next(
        d
        for d in await tx.decisions(job.id)
        if (d.reviewer_id, d.draft_version) == (found.reviewer_id, found.draft_version)
    )
    at = decision.at if decision.draft_version == job.draft_version else now
    where = await standing(tx, job, at, rules.approval.default_policy)
    outcome = where.tally.outcome
    return DecisionResult(job, decision, outcome, where.route, where.tally, replay=True)


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
        State.CANCELLING,
        State.CANCEL_UNKNOWN,
        State.CANCEL_FAILED,
    }
)


@dataclass(frozen=True)
class Allowed:
    """A decision check_allowed lets through: where the job stands, the stage of its route the
    decision is made in, and the approver away it is made for (None: the reviewer's own)."""

    where: Standing
    stage: int
    on_behalf_of: int | None


async def check_allowed(
    tx: ReadTx, job: Job, review: Review, now: datetime, default: Policy
) -> Allowed:
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
    return Allowed(where, stage, on_behalf_of)


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
        await check_allowed(tx, job, review, now, rules.approval.default_policy)


@retry_on_stale
async def decide(store: Store, review: Review, now: datetime, rules: Rules) -> DecisionResult:
    """Record an authenticated reviewer's decision on one exact draft version and hash, in the
    stage of the job's route that waits for it."""
    async with store.begin() as tx:
        result = await decide_in(tx, review, now, rules)
    if result is None:  # the expiry it found is committed
        raise ApprovalExpired(f"{review.po_number} expired before this decision")
    return result


async def decide_in(tx: Tx, review: Review, now: datetime, rules: Rules) -> DecisionResult | None:
    """decide, in a transaction the caller holds (one of a burst of taps decided together):
    the decision recorded in `tx`, or the refusal raised, with nothing written; None if the
    job's approval window had closed, which is expired in `tx` (the caller commits it and
    answers ApprovalExpired)."""
    job = await load(tx, review.po_number)
    if (replay := await replay_of(tx, job, review, now, rules)) is not None:
        return replay
    try:
        allowed = await allowed_or_expired(tx, job, review, now, rules)
    except ApprovalError:
        # A replay that committed since the first look (PostgreSQL reads what committed
        # before each statement): the decision it finds refuses this one; answer as it.
        if (replay := await replay_of(tx, job, review, now, rules)) is not None:
            return replay
        raise
    if allowed is None:
        return None
    if await needs_a_reason(tx, job, review, now, rules):
        raise ReasonRequired(f"{job.po_number} goes over a monthly budget")
    if review.client_id is not None:  # first: a concurrent replay waits on its key
        await tx.insert_client_decision(client_row(review.client_id, job, review, now))
    return await record_decision(tx, job, allowed, review, now, rules)


async def allowed_or_expired(
    tx: Tx, job: Job, review: Review, now: datetime, rules: Rules
) -> Allowed | None:
    """What check_allowed lets `review` do; None if it came too late for a job still waiting, which
    is expired in `tx` (committed with it; the caller then raises ApprovalExpired)."""
    try:
        return await check_allowed(tx, job, review, now, rules.approval.default_policy)
    except ApprovalExpired:
        if job.state is not State.AWAITING_APPROVAL:
            raise
        await proposals.expire(tx, job, Stamp("runner", now), "approval window closed")
        return None


async def needs_a_reason(tx: ReadTx, job: Job, review: Review, now: datetime, rules: Rules) -> bool:
    """Whether `review` is an approval without a reason that takes a category over its month
    now: not recorded; the approver is asked for a reason (core.approval.budgets.needs_reason)."""
    if review.verdict is not Verdict.APPROVE or review.reason:
        return False
    return await needs_reason(tx, job, now, rules.approval.zone)


async def record_decision(
    tx: Tx, job: Job, allowed: Allowed, review: Review, now: datetime, rules: Rules
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
        await proposals.approved(tx, job, stamp)  # a supplier's proposal: it goes to them now
        job = await move(tx, job, Action.APPROVE, stamp, detail, approved_at=now)
        await tx.insert_effect(Effect.send_po(job, now))
    elif after.outcome is Outcome.REJECTED:
        proposal = await proposals.proposal_of(tx, job)
        if proposal is None:
            job = await move(tx, job, Action.REJECT, stamp, detail)
        else:  # the supplier's proposal turned down: the version they have stands
            job = await proposals.turn_down(tx, job, proposal, stamp, review.reason or "")
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
    await tx.append_audit(AuditEvent.unmoved(job, stamp, "record_approval", counted))
    await tx.insert_notice(card_edits_for(job, stamp.at))
    return job
