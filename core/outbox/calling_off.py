"""Calling a purchase order off. Before it was e-mailed, a cancellation withdraws it and nothing
goes to the supplier. Once it was sent (SENT), an admin's cancellation must reach the supplier:
the job moves to CANCELLING and owes a cancel-po outbox row (core.jobs.effects.cancel_po_key),
which the same runner sends under the same claim, lease, marker, retry and ambiguity rules as
the PO itself (core.outbox.dispatch hands cancel-po rows to the steps below). Its end is
CANCELLED (the e-mail went), CANCEL_UNKNOWN (it may have: a person reconciles) or CANCEL_FAILED
(it failed for good: a person tells the supplier another way, then settles it). A transient
failure leaves the job in CANCELLING, the row due again, and an audit event without a move.

The requester and the PO's approvers hear when the PO is called off, with the reason and who
called it off, and again once the supplier has the cancellation (core.jobs.notices.CALLED_OFF,
CALL_OFF_DONE; the reason is read from the trail when the news is delivered).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from core.approval.policies import Verdict
from core.errors import CancelRefusal, CancelRefused, ReconcileRefused, SendError
from core.jobs import proposals
from core.jobs.closing import settle_unknown
from core.jobs.effects import EffectStatus
from core.jobs.jobs import AuditEvent, Cancellation, Effect, Job, SendOrder, Stamp
from core.jobs.notices import CALL_OFF_DONE, CALLED_OFF, call_off_news_for
from core.jobs.retries import RetryPolicy
from core.jobs.sends import (
    attempt_unmoved,
    cancel_open_effects,
    dropped,
    record_failure,
    release,
    settle_unknown_sends,
)
from core.jobs.states import CALLING_OFF, Action, State, next_state
from core.jobs.transitions import load, move, retry_on_stale
from core.people.users import require_admin
from core.ports import ReadTx, Store, Tx
from core.texts import flatten

# A reason goes in the supplier's e-mail and the people's news: one line, this long at most.
REASON_LIMIT = 500
# Audit actions about a CANCELLING job that do not move it: an attempt of its cancellation
# e-mail (the marker), and a transient failure of one (the row due again at `retry_at`).
NOTICE_ATTEMPT = "cancel_attempt"
NOTICE_RETRY = "cancel_retry"
# States a PO is in while its own e-mail is going out or may have gone: settle that first.
_IN_FLIGHT = frozenset({State.SENDING, State.UNKNOWN_OUTCOME})
# A person's finding on a cancellation e-mail, by the state it is about and what they found:
# the CLI's --sent / --not-sent / --failed on CANCEL_UNKNOWN, --settled on CANCEL_FAILED.
_FINDINGS = {
    (State.CANCEL_UNKNOWN, Action.RECONCILE_SENT): Action.RECONCILE_CANCEL_SENT,
    (State.CANCEL_UNKNOWN, Action.RECONCILE_NOT_SENT): Action.RECONCILE_CANCEL_NOT_SENT,
    (State.CANCEL_UNKNOWN, Action.RECONCILE_FAILED): Action.RECONCILE_CANCEL_FAILED,
    (State.CANCEL_UNKNOWN, Action.RECONCILE_CANCEL_SENT): Action.RECONCILE_CANCEL_SENT,
    (State.CANCEL_UNKNOWN, Action.RECONCILE_CANCEL_NOT_SENT): Action.RECONCILE_CANCEL_NOT_SENT,
    (State.CANCEL_UNKNOWN, Action.RECONCILE_CANCEL_FAILED): Action.RECONCILE_CANCEL_FAILED,
    (State.CANCEL_FAILED, Action.SETTLE_CANCEL): Action.SETTLE_CANCEL,
}
# The states a finding applies to, for its refusal.
_AWAITS = {
    **dict.fromkeys(
        (Action.RECONCILE_SENT, Action.RECONCILE_NOT_SENT, Action.RECONCILE_FAILED),
        "UNKNOWN_OUTCOME or CANCEL_UNKNOWN",
    ),
    **dict.fromkeys(
        (
            Action.RECONCILE_CANCEL_SENT,
            Action.RECONCILE_CANCEL_NOT_SENT,
            Action.RECONCILE_CANCEL_FAILED,
        ),
        "CANCEL_UNKNOWN",
    ),
    Action.SETTLE_CANCEL: "CANCEL_FAILED",
}
# What settling a cancellation's unknown e-mail does to its row, as the same finding on a PO's
# own e-mail does to that one (core.jobs.sends.settle_unknown_sends).
_AS_SEND = {
    Action.RECONCILE_CANCEL_SENT: Action.RECONCILE_SENT,
    Action.RECONCILE_CANCEL_NOT_SENT: Action.RECONCILE_NOT_SENT,
    Action.RECONCILE_CANCEL_FAILED: Action.RECONCILE_FAILED,
}


@dataclass(frozen=True)
class CallOff:
    """An admin's cancellation of a PO: `reason` (required once it was sent: it goes in the
    e-mail), by `admin_id` from Telegram (checked to be an admin) or None for the CLI's
    operator; `draft_version`: the version a confirm card showed (None: the current one)."""

    po_number: str
    reason: str
    admin_id: int | None = None
    draft_version: int | None = None


@dataclass(frozen=True)
class CalledOff:
    """What a cancellation did, or would do: the job (after it), whether the supplier is
    e-mailed a cancellation (the PO was sent), and whether it was made already (`repeat`: the
    same cancellation again, which changes nothing)."""

    job: Job
    after_sending: bool
    repeat: bool = False


async def may_call_off(
    tx: ReadTx, request: CallOff, configured_admins: frozenset[int]
) -> CalledOff:
    """What `call_off` would do now, without doing it (the confirm card's preview): the job as
    it is, or the refusal it would meet (NotAnAdmin, UnknownJob, CancelRefused, …)."""
    if request.admin_id is not None:
        await require_admin(tx, request.admin_id, configured_admins)
    job = await load(tx, request.po_number)
    return await _checked(tx, job, request)


@retry_on_stale
async def call_off(
    store: Store, request: CallOff, configured_admins: frozenset[int], stamp: Stamp
) -> CalledOff:
    """Cancel a PO in one transaction: before it was sent, withdrawn with its open sends (as
    core.jobs.closing.cancel); once sent, CANCELLING with its cancellation e-mail owed, and
    its requester and approvers told. The same cancellation again changes nothing."""
    async with store.begin() as tx:
        found = await may_call_off(tx, request, configured_admins)
        job, reason = found.job, _reason(request)
        if found.repeat:
            return found
        if not found.after_sending:
            await cancel_open_effects(tx, job, stamp.at, "cancelled")
            return CalledOff(await move(tx, job, Action.CANCEL, stamp, {"note": reason}), False)
        proposal = await proposals.proposal_of(tx, job)
        if proposal is not None:  # the supplier has the version its proposal answered
            why = f"the PO is being called off: {reason}"
            job = await proposals.turn_down(tx, job, proposal, stamp, why, tell=False)
        assert job.draft_version is not None
        await tx.draft(job.id, job.draft_version)  # DraftPurged: no address to write to
        effect = Effect.cancel_po(job, stamp.at)
        detail = {"reason": reason, "key": effect.key}
        moved = await move(tx, job, Action.CANCEL_SENT, stamp, detail)
        await tx.insert_effect(effect)
        await tell(tx, moved, CALLED_OFF, stamp.at)
        return CalledOff(moved, True)


def _reason(request: CallOff) -> str:
    """The reason on one line, without invisible tricks, cut to REASON_LIMIT."""
    return flatten(request.reason)[:REASON_LIMIT]


async def _checked(tx: ReadTx, job: Job, request: CallOff) -> CalledOff:
    """Whether and how `job` can be cancelled now, or why not (CancelRefused)."""
    po, state, reason = job.po_number, job.state, _reason(request)

    def refused(why: CancelRefusal) -> CancelRefused:
        return CancelRefused(po, state.value, why)

    if request.draft_version is not None and request.draft_version != job.draft_version:
        raise refused(CancelRefusal.CHANGED)
    if state is State.SENT or await proposals.proposal_of(tx, job) is not None:
        if not reason:
            raise refused(CancelRefusal.REASON_REQUIRED)
        return CalledOff(job, True)
    earlier = await called_off_reason(tx, job) if state in (*CALLING_OFF, State.CANCELLED) else None
    if earlier is not None:  # called off already: the same request again is no change
        if earlier == reason:
            return CalledOff(job, True, repeat=True)
        done = state is State.CANCELLED
        raise refused(CancelRefusal.ALREADY_CANCELLED if done else CancelRefusal.CALLED_OFF_ALREADY)
    if state is State.CANCELLED:
        raise refused(CancelRefusal.ALREADY_CANCELLED)
    if state in _IN_FLIGHT:
        raise refused(CancelRefusal.IN_FLIGHT)
    if state is State.REJECTED:
        raise refused(CancelRefusal.CLOSED)
    next_state(state, Action.CANCEL)  # IllegalTransition for anything left
    return CalledOff(job, False)


async def called_off_reason(tx: ReadTx, job: Job) -> str | None:
    """The reason the PO was called off after it was sent; None if it never was."""
    called = [a for a in await tx.audit(job.id) if a.action == Action.CANCEL_SENT.value]
    return str(called[-1].detail.get("reason", "")) if called else None


async def tell(tx: Tx, job: Job, event: str, now: datetime) -> None:
    """Owe the news of a called-off PO (`event`: CALLED_OFF or CALL_OFF_DONE) to its requester
    and to everyone who approved its sent version (a delegate and the approver they acted
    for both)."""
    approvers: set[int] = set()
    for decision in await tx.decisions(job.id):
        if decision.draft_version == job.draft_version and decision.verdict is Verdict.APPROVE:
            approvers.add(decision.reviewer_id)
            if decision.on_behalf_of is not None:
                approvers.add(decision.on_behalf_of)
    people = sorted({job.requester_id, *approvers})
    await tx.insert_notice(*(call_off_news_for(job, person, now, event) for person in people))


# -- a person's finding ------------------------------------------------------------------


async def reconcile(store: Store, po_number: str, finding: Action, note: str, stamp: Stamp) -> Job:
    """Record a person's finding about a PO's e-mail of unknown outcome (UNKNOWN_OUTCOME, as
    core.jobs.closing.reconcile), or about a cancellation e-mail: on CANCEL_UNKNOWN sent, not
    sent (the same key once more) or failed; on CANCEL_FAILED settled (SETTLE_CANCEL: the
    supplier was told another way, say by phone)."""
    async with store.begin() as tx:
        job = await load(tx, po_number)
        if job.state is State.UNKNOWN_OUTCOME and finding in _AS_SEND.values():
            return await settle_unknown(tx, job, finding, stamp, {"note": note})
        action = _FINDINGS.get((job.state, finding))
        if action is None:
            raise ReconcileRefused(f"{po_number} is {job.state.value}, not {_AWAITS[finding]}")
        return await settle_call_off(tx, job, action, stamp, {"note": note})


async def settle_call_off(
    tx: Tx, job: Job, action: Action, stamp: Stamp, detail: dict[str, Any]
) -> Job:
    """Move a CANCEL_UNKNOWN or CANCEL_FAILED job on a person's finding (`detail` has their
    note), settle its cancellation e-mail to match, and, once the PO is CANCELLED, tell its
    people the supplier has it."""
    moved = await move(tx, job, action, stamp, detail)  # the job first: a racing finding loses
    if action in _AS_SEND:
        note = str(detail.get("note", ""))
        await settle_unknown_sends(tx, job, _AS_SEND[action], stamp, note)
    if moved.state is State.CANCELLED:
        await tell(tx, moved, CALL_OFF_DONE, stamp.at)
    return moved


# -- the outbox's steps for a cancel-po row (core.outbox.dispatch) ---------------------------


async def mark(
    tx: Tx, effect: Effect, owner: str, now: datetime, lease: timedelta
) -> SendOrder | None:
    """The checks and the marker of one attempt of a claimed cancel-po row: sent only while its
    job is CANCELLING (else the row is cancelled, never sent); no approval is checked again
    (the approved PO went; this calls it off), and the job does not move: the attempt is an
    audit event of its own."""
    job = await tx.job(effect.job_id)
    named = (effect.draft_version, effect.draft_hash)
    if job.state is not State.CANCELLING or (job.draft_version, job.draft_hash) != named:
        await dropped(tx, effect, job, now)
        return None
    stamp = Stamp(f"runner:{owner}", now)
    effect = await attempt_unmoved(tx, job, effect, NOTICE_ATTEMPT, stamp, lease)
    draft = await tx.draft(job.id, effect.draft_version)
    # From the same buyer as the PO (the company version its draft cites); no PDF.
    company = await tx.company(draft.company_version) if draft.company_version else None
    called = await _cancellation(tx, job)
    return SendOrder(effect, job, draft, company=company, cancellation=called)


async def _cancellation(tx: ReadTx, job: Job) -> Cancellation:
    """The e-mail's reason, and when the PO went (the runner's mark_sent; None when a person
    recorded that it arrived)."""
    trail = await tx.audit(job.id)
    reason = next(
        (
            str(a.detail.get("reason", ""))
            for a in reversed(trail)
            if a.action == Action.CANCEL_SENT
        ),
        "",
    )
    into_sent = [a for a in trail if a.to_state is State.SENT]
    sent = into_sent[-1] if into_sent else None
    return Cancellation(reason, sent.at if sent and sent.action == Action.MARK_SENT else None)


async def finished(
    tx: Tx,
    job: Job,
    effect: Effect,
    stamp: Stamp,
    outcome: tuple[dict[str, Any] | None, SendError | None],
    policy: RetryPolicy,
    rand: float,
) -> State:
    """Record one attempt's `outcome` (a receipt, or a classified failure) on a cancel-po row
    still at its marker's version: CANCELLED, CANCEL_UNKNOWN, CANCEL_FAILED, or due again."""
    result, error = outcome
    if error is None:
        await release(tx, effect, stamp.at, status=EffectStatus.SUCCEEDED, result=result)
        return (await _done(tx, job, Action.MARK_CANCEL_SENT, stamp, {"key": effect.key})).state
    status, detail = await record_failure(tx, effect, stamp.at, error, policy, rand)
    if status is EffectStatus.UNKNOWN:
        return (await move(tx, job, Action.MARK_CANCEL_UNKNOWN, stamp, detail)).state
    if status is EffectStatus.FAILED:
        return (await move(tx, job, Action.CANCEL_FAIL_FINAL, stamp, detail)).state
    await tx.append_audit(AuditEvent.unmoved(job, stamp, NOTICE_RETRY, detail))
    return job.state


async def _done(tx: Tx, job: Job, action: Action, stamp: Stamp, detail: dict[str, Any]) -> Job:
    """The cancellation e-mail went: the PO is CANCELLED, and its people are told."""
    moved = await move(tx, job, action, stamp, detail)
    await tell(tx, moved, CALL_OFF_DONE, stamp.at)
    return moved


async def late_success(tx: Tx, effect: Effect, stamp: Stamp, result: dict[str, Any]) -> State:
    """A receipt that arrives after recovery gave up on its runner (the row is unknown): proof
    that the cancellation went."""
    job = await tx.job(effect.job_id)
    done = {"status": EffectStatus.SUCCEEDED, "result": result}
    await tx.update_effect(effect, updated_at=stamp.at, **done)
    detail = {"key": effect.key, "note": "late success from the original attempt"}
    return (await _done(tx, job, Action.RECONCILE_CANCEL_SENT, stamp, detail)).state


async def recovered(
    tx: Tx, job: Job, effect: Effect, stamp: Stamp, provider_idempotent: bool
) -> Effect:
    """A cancel-po attempt whose runner died: unknown (CANCEL_UNKNOWN), unless the provider
    dedupes the key (then due again, the job still CANCELLING)."""
    detail = {"key": effect.key, "reason": "runner lost during the attempt"}
    if provider_idempotent:
        effect = await release(
            tx, effect, stamp.at, status=EffectStatus.PENDING, next_attempt_at=stamp.at
        )
        await tx.append_audit(AuditEvent.unmoved(job, stamp, NOTICE_RETRY, detail))
        return effect
    effect = await release(tx, effect, stamp.at, status=EffectStatus.UNKNOWN)
    await move(tx, job, Action.MARK_CANCEL_UNKNOWN, stamp, detail)
    return effect
