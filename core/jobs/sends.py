"""A job's supplier e-mails (its effects rows) as the job itself moves: an outbox row settled
and its lease given up, the open sends cancelled when the job ends without sending, a job
expired with them, and the unknown ones settled on a person's finding."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from core.errors import SendError
from core.jobs.effects import OPEN_STATUSES, EffectStatus
from core.jobs.jobs import AuditEvent, Effect, Job, Stamp
from core.jobs.retries import ErrorClass, RetryPolicy, classify, decide
from core.jobs.states import Action
from core.jobs.transitions import move
from core.ports import Tx

log = logging.getLogger(__name__)

# Where a person's finding on an unknown outcome leaves the send (see settle_unknown_sends).
_FINDINGS = {
    Action.RECONCILE_SENT: EffectStatus.SUCCEEDED,
    Action.RECONCILE_NOT_SENT: EffectStatus.PENDING,
    Action.RECONCILE_FAILED: EffectStatus.FAILED,
}


async def release(tx: Tx, effect: Effect, now: datetime, **changes: Any) -> Effect:
    """Settle an outbox row: its lease given up, with `changes` (a status, an error, …)."""
    return await tx.update_effect(
        effect, lease_owner=None, lease_until=None, updated_at=now, **changes
    )


async def started(tx: Tx, effect: Effect, now: datetime, lease: timedelta) -> Effect:
    """The attempt marker of a leased outbox row: STARTED, one attempt more, the lease running
    from now. Committed before the sender is called, so a crash after it is an attempt that
    may have gone."""
    return await tx.update_effect(
        effect,
        status=EffectStatus.STARTED,
        attempts=effect.attempts + 1,
        started_at=now,
        first_attempt_at=effect.first_attempt_at or now,
        lease_until=now + lease,
        updated_at=now,
    )


async def dropped(tx: Tx, effect: Effect, job: Job, now: datetime) -> None:
    """Cancel a claimed row whose moment passed (its job moved on): never sent."""
    why = f"job is {job.state.value}, draft v{job.draft_version}"
    await release(tx, effect, now, status=EffectStatus.CANCELLED, last_error=why)
    log.warning("cancelled %s: job %s is %s", effect.key, job.po_number, job.state.value)


async def attempt_unmoved(
    tx: Tx, job: Job, effect: Effect, action: str, stamp: Stamp, lease: timedelta
) -> Effect:
    """The marker of an attempt that does not move its job (a cancellation, a note): an audit
    event `action` naming the attempt, and the row STARTED."""
    detail = {"key": effect.key, "attempt": effect.attempts + 1, "job_version": job.version}
    await tx.append_audit(AuditEvent.unmoved(job, stamp, action, detail))
    return await started(tx, effect, stamp.at, lease)


async def record_failure(
    tx: Tx, effect: Effect, at: datetime, error: SendError, policy: RetryPolicy, rand: float
) -> tuple[EffectStatus, dict[str, Any]]:
    """A failed attempt on its outbox row (still at its marker's version), as the retry table
    says: UNKNOWN if it may have gone (never retried), FAILED once no retry is left, else
    PENDING at the next retry's time. The status it left the row in, and what the attempt's
    audit event says: the key, the error, its class, and the decision and retry time."""
    kind = classify(error)
    detail: dict[str, Any] = {"key": effect.key, "error": str(error)[:300], "class": kind.value}
    if kind is ErrorClass.AMBIGUOUS:
        await release(tx, effect, at, status=EffectStatus.UNKNOWN, last_error=str(error))
        return EffectStatus.UNKNOWN, detail
    assert effect.first_attempt_at is not None
    verdict = decide(policy, kind, effect.attempts, effect.first_attempt_at, at, rand)
    detail["decision"] = verdict.reason
    if verdict.retry_at is None:
        last = f"{verdict.reason}: {error}"
        await release(tx, effect, at, status=EffectStatus.FAILED, last_error=last)
        return EffectStatus.FAILED, detail
    due = {"next_attempt_at": verdict.retry_at, "last_error": str(error)}
    await release(tx, effect, at, status=EffectStatus.PENDING, **due)
    detail["retry_at"] = verdict.retry_at.isoformat()
    return EffectStatus.PENDING, detail


async def cancel_open_effects(tx: Tx, job: Job, now: datetime, why: str) -> None:
    """Cancel every outbox row of the job that has not started sending."""
    for effect in await tx.effects_for(job.id):
        if effect.status in OPEN_STATUSES:
            await release(tx, effect, now, status=EffectStatus.CANCELLED, last_error=why)


async def expire_job(tx: Tx, job: Job, stamp: Stamp, why: str) -> Job:
    """Move a job to EXPIRED and cancel its open sends."""
    await cancel_open_effects(tx, job, stamp.at, why)
    return await move(tx, job, Action.EXPIRE, stamp, {"reason": why})


async def settle_unknown_sends(tx: Tx, job: Job, finding: Action, stamp: Stamp, note: str) -> None:
    """Settle the job's sends of unknown outcome to match a person's finding."""
    settled: dict[str, Any] = {"status": _FINDINGS[finding]}
    if finding is Action.RECONCILE_SENT:
        settled["result"] = {"reconciled_by": stamp.actor, "note": note}
    elif finding is Action.RECONCILE_NOT_SENT:
        # A person's decision to send again starts a fresh retry budget, on the same row: the
        # same key and Message-ID.
        settled |= {"next_attempt_at": stamp.at, "attempts": 0, "first_attempt_at": None}
    else:
        settled["last_error"] = note
    for effect in await tx.effects_for(job.id):
        if effect.status is EffectStatus.UNKNOWN:
            await release(tx, effect, stamp.at, **settled)
