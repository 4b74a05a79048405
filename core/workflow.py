"""The mechanics every use case shares: one audited compare-and-set move, and its retry."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from core import effects
from core.errors import StaleJob, UnknownJob
from core.jobs import AuditEvent, Job
from core.notices import (
    TOLD_TO_REQUESTER,
    alerts_admins,
    queue_alert,
    queue_refresh,
    queue_status,
    refreshes_cards,
)
from core.policies import Decision, Role
from core.ports import Tx
from core.states import Action, next_state

T = TypeVar("T")
# Concurrent writers on one job race on its version; a handful of re-reads settles them.
CAS_ATTEMPTS = 5


async def move(
    tx: Tx,
    job: Job,
    action: Action,
    now: datetime,
    actor: str,
    detail: dict[str, Any] | None = None,
    **changes: Any,
) -> Job:
    """Apply one transition with compare-and-set and its audit event, in `tx`."""
    target = next_state(job.state, action)
    moved = await tx.update_job(job, state=target, updated_at=now, **changes)
    await tx.append_audit(
        AuditEvent(
            job.id,
            now,
            actor,
            action.value,
            job.state,
            target,
            {"job_version": moved.version, **(detail or {})},
        )
    )
    # In the same transaction: the news is owed if, and only if, it happened.
    if action in TOLD_TO_REQUESTER:
        await queue_status(tx, moved, now)
    if refreshes_cards(job.state, action):
        await queue_refresh(tx, moved, now)
    if alerts_admins(target):
        await queue_alert(tx, moved, now, target.value)
    return moved


async def load(tx: Tx, po_number: str) -> Job:
    """The job with that PO number, or raise UnknownJob."""
    job = await tx.job_by_po(po_number)
    if job is None:
        raise UnknownJob(f"no purchase order {po_number}")
    return job


async def retry_stale(once: Callable[[], Awaitable[T]]) -> T:
    """Run a one-transaction use case again when a concurrent writer won the compare-and-set."""
    for attempt in range(1, CAS_ATTEMPTS + 1):
        try:
            return await once()
        except StaleJob:
            if attempt == CAS_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


async def cancel_open_effects(tx: Tx, job: Job, now: datetime, why: str) -> None:
    """Cancel every outbox row of the job that has not started sending."""
    for effect in await tx.effects_for(job.id):
        if effect.status in effects.OPEN_STATUSES:
            await tx.update_effect(
                effect,
                status=effects.EffectStatus.CANCELLED,
                lease_owner=None,
                lease_until=None,
                last_error=why,
                updated_at=now,
            )


async def expire_job(tx: Tx, job: Job, now: datetime, actor: str, why: str) -> Job:
    """Move a job to EXPIRED and cancel its open sends."""
    await cancel_open_effects(tx, job, now, why)
    return await move(tx, job, Action.EXPIRE, now, actor, {"reason": why})


async def standing_decisions(tx: Tx, job_id: str) -> list[Decision]:
    """A job's decisions by people who still hold the approver role: the ones that count."""
    return [d for d in await tx.decisions(job_id) if Role.APPROVER in await tx.roles(d.reviewer_id)]
