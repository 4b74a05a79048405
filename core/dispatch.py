"""The outbox runner's use cases: claim, mark the attempt, record the result, recover."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from core.effects import EffectStatus
from core.errors import LeaseLost, SendError
from core.jobs import Effect, Job, SendOrder
from core.policies import Outcome, evaluate
from core.ports import Store, Tx
from core.retries import ErrorClass, classify, decide
from core.service import Rules
from core.states import Action, State
from core.workflow import cancel_open_effects, expire_job, move, standing_decisions

log = logging.getLogger(__name__)

_SENDABLE = frozenset({State.APPROVED, State.FAILED_RETRYABLE})


async def claim(
    store: Store, now: datetime, owner: str, lease: timedelta, limit: int
) -> list[Effect]:
    """Lease due outbox rows to this runner (one transaction)."""
    async with store.begin() as tx:
        return await tx.claim_due(now, owner, now + lease, limit)


async def start_attempt(
    store: Store, key: str, owner: str, now: datetime, lease: timedelta, rules: Rules
) -> SendOrder | None:
    """Re-check the approval and commit the attempt marker; None when it must not be sent."""
    async with store.begin() as tx:
        effect = await tx.effect(key)
        if effect.status is not EffectStatus.CLAIMED or effect.lease_owner != owner:
            raise LeaseLost(f"{key} is no longer leased to {owner}")
        job = await tx.job(effect.job_id)
        actor = f"runner:{owner}"
        if job.state not in _SENDABLE or (job.draft_version, job.draft_hash) != (
            effect.draft_version,
            effect.draft_hash,
        ):
            await cancel_open_effects(
                tx, job, now, f"job is {job.state.value}, draft v{job.draft_version}"
            )
            log.warning("cancelled %s: job %s is %s", key, job.po_number, job.state.value)
            return None
        if not await _still_approved(tx, job, effect, now, rules):
            await expire_job(tx, job, now, actor, "approval expired or approver revoked")
            return None
        job = await move(
            tx, job, Action.START_SEND, now, actor, {"key": key, "attempt": effect.attempts + 1}
        )
        effect = await tx.update_effect(
            effect,
            status=EffectStatus.STARTED,
            attempts=effect.attempts + 1,
            started_at=now,
            first_attempt_at=effect.first_attempt_at or now,
            lease_until=now + lease,
            updated_at=now,
        )
        return SendOrder(effect, job, await tx.draft(job.id, effect.draft_version))


async def _still_approved(tx: Tx, job: Job, effect: Effect, now: datetime, rules: Rules) -> bool:
    """The policy, evaluated again at send time: live approvals by people still approvers."""
    assert job.total_paisa is not None
    decisions = await standing_decisions(tx, job.id)
    outcome = evaluate(
        rules.approval, job.total_paisa, decisions, effect.draft_version, effect.draft_hash, now
    )
    return outcome is Outcome.APPROVED


async def finish_attempt(
    store: Store,
    order: SendOrder,
    owner: str,
    now: datetime,
    rules: Rules,
    rand: float,
    *,
    result: dict[str, Any] | None = None,
    error: SendError | None = None,
) -> State:
    """Record the attempt's result and the job's next state in one transaction."""
    async with store.begin() as tx:
        effect = await tx.effect(order.effect.key)
        job = await tx.job(effect.job_id)
        actor = f"runner:{owner}"
        if effect.version != order.effect.version:
            return await _late_result(tx, effect, owner, now, result)
        if error is None:
            await tx.update_effect(
                effect,
                status=EffectStatus.SUCCEEDED,
                result=result,
                lease_owner=None,
                lease_until=None,
                updated_at=now,
            )
            return (await move(tx, job, Action.MARK_SENT, now, actor, {"key": effect.key})).state
        kind = classify(error)
        detail = {"key": effect.key, "error": str(error)[:300], "class": kind.value}
        if kind is ErrorClass.AMBIGUOUS:
            await tx.update_effect(
                effect,
                status=EffectStatus.UNKNOWN,
                last_error=str(error),
                lease_owner=None,
                lease_until=None,
                updated_at=now,
            )
            return (await move(tx, job, Action.MARK_UNKNOWN, now, actor, detail)).state
        assert effect.first_attempt_at is not None
        verdict = decide(rules.retry, kind, effect.attempts, effect.first_attempt_at, now, rand)
        detail["decision"] = verdict.reason
        if verdict.retry_at is None:
            await tx.update_effect(
                effect,
                status=EffectStatus.FAILED,
                last_error=f"{verdict.reason}: {error}",
                lease_owner=None,
                lease_until=None,
                updated_at=now,
            )
            return (await move(tx, job, Action.FAIL_FINAL, now, actor, detail)).state
        await tx.update_effect(
            effect,
            status=EffectStatus.PENDING,
            next_attempt_at=verdict.retry_at,
            last_error=str(error),
            lease_owner=None,
            lease_until=None,
            updated_at=now,
        )
        detail["retry_at"] = verdict.retry_at.isoformat()
        return (
            await move(
                tx, job, Action.FAIL_RETRYABLE, now, actor, detail, retry_count=job.retry_count + 1
            )
        ).state


async def _late_result(
    tx: Tx, effect: Effect, owner: str, now: datetime, result: dict[str, Any] | None
) -> State:
    """A result that arrives after recovery gave up on its runner: proof, if it succeeded."""
    job = await tx.job(effect.job_id)
    if result is None or effect.status is not EffectStatus.UNKNOWN:
        raise LeaseLost(f"{effect.key} moved on while {owner} was sending")
    await tx.update_effect(effect, status=EffectStatus.SUCCEEDED, result=result, updated_at=now)
    moved = await move(
        tx,
        job,
        Action.RECONCILE_SENT,
        now,
        f"runner:{owner}",
        {"key": effect.key, "note": "late success from the original attempt"},
    )
    return moved.state


async def recover_stalled(
    store: Store, now: datetime, provider_idempotent: bool, limit: int = 100
) -> list[Effect]:
    """Attempts whose runner died: unknown outcome, unless the provider dedupes the key."""
    async with store.begin() as tx:
        recovered = []
        for effect in await tx.stalled(now, limit):
            job = await tx.job(effect.job_id)
            detail = {"key": effect.key, "reason": "runner lost during the attempt"}
            if provider_idempotent:
                effect = await tx.update_effect(
                    effect,
                    status=EffectStatus.PENDING,
                    next_attempt_at=now,
                    lease_owner=None,
                    lease_until=None,
                    updated_at=now,
                )
                await move(tx, job, Action.FAIL_RETRYABLE, now, "runner:recovery", detail)
            else:
                effect = await tx.update_effect(
                    effect,
                    status=EffectStatus.UNKNOWN,
                    lease_owner=None,
                    lease_until=None,
                    updated_at=now,
                )
                await move(tx, job, Action.MARK_UNKNOWN, now, "runner:recovery", detail)
            log.warning("recovered %s after a lost runner: %s", effect.key, effect.status.value)
            recovered.append(effect)
        return recovered
