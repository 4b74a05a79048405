"""The supplier e-mail's outbox: claim, attempt, record, recover; each step one transaction, so
a crash between two of them resumes from the last one committed."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from core.approval.policies import Outcome, Rules
from core.approval.standing import standing
from core.errors import InsertConflict, LeaseLost, SendError
from core.jobs.effects import NOTES, EffectKind, EffectStatus
from core.jobs.jobs import Document, Effect, Job, SendOrder, Stamp
from core.jobs.sends import cancel_open_effects, expire_job, record_failure, release, started
from core.jobs.states import Action, State
from core.jobs.transitions import move
from core.outbox import calling_off, notes
from core.ports import Store, Tx

log = logging.getLogger(__name__)

_SENDABLE = frozenset({State.APPROVED, State.FAILED_RETRYABLE})


@dataclass(frozen=True)
class Attempted:
    """What one attempt came back with: a receipt, or a classified failure."""

    owner: str  # the runner that made it
    result: dict[str, Any] | None = None
    error: SendError | None = None


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
        return await _mark(tx, key, owner, now, lease, rules)


async def start_attempts(
    store: Store, keys: list[str], owner: str, now: datetime, lease: timedelta, rules: Rules
) -> list[SendOrder]:
    """The attempt markers of several claimed rows in one transaction: the orders to send.

    Each row is checked alone, exactly as `start_attempt` checks it: one whose lease was lost
    is left to its new owner, one that must not go is cancelled or expired, and neither stops
    the others.
    """
    orders = []
    async with store.begin() as tx:
        for key in keys:
            try:
                order = await _mark(tx, key, owner, now, lease, rules)
            except LeaseLost:
                # Raised before anything of this row was written: the transaction goes on.
                log.info("lease on %s lost before the attempt; another runner has it", key)
                continue
            if order is not None:
                orders.append(order)
    return orders


async def _mark(
    tx: Tx, key: str, owner: str, now: datetime, lease: timedelta, rules: Rules
) -> SendOrder | None:
    """The checks and the marker of one attempt, inside the caller's transaction."""
    effect = await tx.effect(key)
    if effect.status is not EffectStatus.CLAIMED or effect.lease_owner != owner:
        raise LeaseLost(f"{key} is no longer leased to {owner}")
    if _calls_off(effect):
        return await calling_off.mark(tx, effect, owner, now, lease)
    if effect.kind in NOTES:
        return await notes.mark(tx, effect, owner, now, lease)
    job = await tx.job(effect.job_id)
    stamp = Stamp(f"runner:{owner}", now)
    named = (effect.draft_version, effect.draft_hash)
    if job.state not in _SENDABLE or (job.draft_version, job.draft_hash) != named:
        why = f"job is {job.state.value}, draft v{job.draft_version}"
        await cancel_open_effects(tx, job, now, why)
        log.warning("cancelled %s: job %s is %s", key, job.po_number, job.state.value)
        return None
    if not await _still_approved(tx, job, effect, now, rules):
        await expire_job(tx, job, stamp, "approval expired or approver revoked")
        return None
    document = await tx.document(key)
    if document is None:  # not made yet (see keep_document): the row waits, leased, for it
        log.error("%s has no PO document yet: not sent this pass", key)
        return None
    attempt = effect.attempts + 1
    detail = {"key": key, "attempt": attempt, "document_sha256": document.sha256}
    job = await move(tx, job, Action.START_SEND, stamp, detail)
    effect = await started(tx, effect, now, lease)
    draft = await tx.draft(job.id, effect.draft_version)
    company = await tx.company(draft.company_version) if draft.company_version else None
    return SendOrder(effect, job, draft, document, company)


async def keep_document(store: Store, key: str, pdf: bytes, now: datetime) -> Document:
    """Keep the PDF made for an outbox row, once: the first one kept is the row's for every
    attempt and resend; one made meanwhile by another runner wins over this one."""
    document = Document(pdf, hashlib.sha256(pdf).hexdigest())
    try:
        async with store.begin() as tx:
            await tx.insert_document(key, document, now)
        return document
    except InsertConflict:
        async with store.reading() as tx:
            kept = await tx.document(key)
        assert kept is not None  # it was kept: that is the conflict
        return kept


async def documents_owed(store: Store, effects: list[Effect]) -> list[Effect]:
    """The rows among `effects` whose e-mail carries a PO document not made yet."""
    owed = []
    async with store.reading() as tx:
        for effect in effects:
            if effect.kind == EffectKind.SEND_PO and not await tx.has_document(effect.key):
                owed.append(effect)
    return owed


async def _still_approved(tx: Tx, job: Job, effect: Effect, now: datetime, rules: Rules) -> bool:
    """The route, tallied again at send time: live approvals, in their stages, by people who
    are still approvers and still in the stage's group."""
    if (job.draft_version, job.draft_hash) != (effect.draft_version, effect.draft_hash):
        return False
    where = await standing(tx, job, now, rules.approval.default_policy)
    return where.tally.outcome is Outcome.APPROVED


async def finish_attempt(
    store: Store, order: SendOrder, attempted: Attempted, now: datetime, rules: Rules, rand: float
) -> State:
    """Record the attempt's result and the job's next state in one transaction."""
    async with store.begin() as tx:
        effect = await tx.effect(order.effect.key)
        job = await tx.job(effect.job_id)
        stamp = Stamp(f"runner:{attempted.owner}", now)
        if effect.version != order.effect.version:
            return await _late_result(tx, effect, stamp, attempted)
        if _calls_off(effect):
            outcome = (attempted.result, attempted.error)
            return await calling_off.finished(tx, job, effect, stamp, outcome, rules.retry, rand)
        if effect.kind in NOTES:
            outcome = (attempted.result, attempted.error)
            return await notes.finished(tx, job, effect, stamp, outcome, rules.retry, rand)
        if attempted.error is None:
            await release(tx, effect, now, status=EffectStatus.SUCCEEDED, result=attempted.result)
            return (await move(tx, job, Action.MARK_SENT, stamp, {"key": effect.key})).state
        status, detail = await record_failure(tx, effect, now, attempted.error, rules.retry, rand)
        if status is EffectStatus.UNKNOWN:  # it may have gone: a person reconciles
            return (await move(tx, job, Action.MARK_UNKNOWN, stamp, detail)).state
        if status is EffectStatus.FAILED:
            return (await move(tx, job, Action.FAIL_FINAL, stamp, detail)).state
        retries = job.retry_count + 1
        moved = await move(tx, job, Action.FAIL_RETRYABLE, stamp, detail, retry_count=retries)
        return moved.state


async def _late_result(tx: Tx, effect: Effect, stamp: Stamp, attempted: Attempted) -> State:
    """A result that arrives after recovery gave up on its runner: proof, if it succeeded."""
    job = await tx.job(effect.job_id)
    if attempted.result is None or effect.status is not EffectStatus.UNKNOWN:
        raise LeaseLost(f"{effect.key} moved on while {attempted.owner} was sending")
    if _calls_off(effect):
        return await calling_off.late_success(tx, effect, stamp, attempted.result)
    if effect.kind in NOTES:
        return await notes.late_success(tx, effect, stamp, attempted.result)
    done = {"status": EffectStatus.SUCCEEDED, "result": attempted.result}
    await tx.update_effect(effect, updated_at=stamp.at, **done)
    detail = {"key": effect.key, "note": "late success from the original attempt"}
    return (await move(tx, job, Action.RECONCILE_SENT, stamp, detail)).state


async def recover_stalled(
    store: Store, now: datetime, provider_idempotent: bool, limit: int = 100
) -> list[Effect]:
    """Attempts whose runner died: unknown outcome, unless the provider dedupes the key."""
    stamp = Stamp("runner:recovery", now)
    async with store.begin() as tx:
        recovered = []
        for effect in await tx.stalled(now, limit):
            job = await tx.job(effect.job_id)
            detail = {"key": effect.key, "reason": "runner lost during the attempt"}
            if _calls_off(effect):
                effect = await calling_off.recovered(tx, job, effect, stamp, provider_idempotent)
            elif effect.kind in NOTES:
                effect = await notes.recovered(tx, job, effect, stamp, provider_idempotent)
            elif provider_idempotent:
                due = {"status": EffectStatus.PENDING, "next_attempt_at": now}
                effect = await release(tx, effect, now, **due)
                await move(tx, job, Action.FAIL_RETRYABLE, stamp, detail)
            else:
                effect = await release(tx, effect, now, status=EffectStatus.UNKNOWN)
                await move(tx, job, Action.MARK_UNKNOWN, stamp, detail)
            log.warning("recovered %s after a lost runner: %s", effect.key, effect.status.value)
            recovered.append(effect)
        return recovered


def _calls_off(effect: Effect) -> bool:
    """Whether the row is a called-off PO's cancellation e-mail (core.outbox.calling_off takes
    its steps), not the PO's own."""
    return effect.kind == EffectKind.CANCEL_PO
