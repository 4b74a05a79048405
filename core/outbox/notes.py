"""The outbox's steps for an e-mail that tells a supplier something without moving its job
(core.jobs.effects.NOTES): that the approvers turned its proposed changes down, or (a
reminder) that a PO it was sent still waits for its answer.

A note is one business action with its own key, sent once in effect like every supplier
e-mail: an attempt is an audit event of its own; a transient failure is retried under the
retry policy; a failure that may have delivered it (or a runner lost mid-send) is never sent
again but recorded as unknown; one that failed for good is recorded. Either of the last two
owes the admins an alert (NOTE_FAILED), since the supplier may not know: a person phones
them. A note whose moment has passed (the PO was called off since) is cancelled, never sent.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from core.errors import SendError
from core.jobs import proposals
from core.jobs.answers import awaiting_answer
from core.jobs.effects import EffectKind, EffectStatus, send_po_key
from core.jobs.jobs import AuditEvent, Effect, Job, Note, SendOrder, Stamp
from core.jobs.notices import NOTE_FAILED, alert_for
from core.jobs.retries import RetryPolicy
from core.jobs.sends import attempt_unmoved, dropped, record_failure, release
from core.jobs.states import CALLING_OFF, State
from core.ports import ReadTx, Tx

# The audit actions of a note's life; the job does not move.
NOTE_ATTEMPT = "note_attempt"
NOTE_SENT = "note_sent"
NOTE_RETRY = "note_retry"
NOTE_UNKNOWN = "note_unknown"
NOTE_GAVE_UP = "note_failed"


async def mark(
    tx: Tx, effect: Effect, owner: str, now: datetime, lease: timedelta
) -> SendOrder | None:
    """The checks and the marker of one attempt of a claimed note; None (the row cancelled)
    when it is moot: the PO was called off since, or (a reminder) its supplier answered or the
    PO is being replaced."""
    job = await tx.job(effect.job_id)
    moot = job.state is State.CANCELLED or job.state in CALLING_OFF
    if effect.kind == EffectKind.REMIND_PO:  # only while the supplier still owes an answer
        waiting = await awaiting_answer(tx, job)
        moot = waiting is None or waiting.draft_hash != effect.draft_hash
    if moot:
        await dropped(tx, effect, job, now)
        return None
    stamp = Stamp(f"runner:{owner}", now)
    effect = await attempt_unmoved(tx, job, effect, NOTE_ATTEMPT, stamp, lease)
    draft = await tx.draft(job.id, effect.draft_version)
    company = await tx.company(draft.company_version) if draft.company_version else None
    document = None
    if effect.kind == EffectKind.REMIND_PO:  # the PO's PDF again, as the supplier first got it
        sent = send_po_key(job.po_number, effect.draft_version, effect.draft_hash)
        document = await tx.document(sent)
    note = await note_of(tx, job, effect)
    return SendOrder(effect, job, draft, document=document, company=company, note=note)


async def note_of(tx: ReadTx, job: Job, effect: Effect) -> Note:
    """What a note says besides its draft: for a turned-down proposal, the approvers' reason
    and the version that stands (its draft and its e-mail, whose link the note carries)."""
    if effect.kind != EffectKind.REJECT_PROPOSAL:
        return Note()
    answers = await tx.supplier_answers(job.id)
    proposal = next(a for a in answers if a.proposal_version == effect.draft_version)
    standing = await tx.draft(job.id, proposal.draft_version)
    sent = [
        e
        for e in await tx.effects_for(job.id)
        if e.kind == EffectKind.SEND_PO and e.draft_version == proposal.draft_version
    ]
    reason = await proposals.rejection_reason(tx, job, effect.draft_version)
    return Note(reason=reason, standing=standing, standing_email=sent[-1] if sent else None)


async def finished(
    tx: Tx,
    job: Job,
    effect: Effect,
    stamp: Stamp,
    outcome: tuple[dict[str, Any] | None, SendError | None],
    policy: RetryPolicy,
    rand: float,
) -> State:
    """Record one attempt's `outcome` on a note still at its marker's version: sent, unknown
    (never sent again), failed for good, or due again. The job stays where it is."""
    result, error = outcome
    if error is None:
        await release(tx, effect, stamp.at, status=EffectStatus.SUCCEEDED, result=result)
        await tx.append_audit(AuditEvent.unmoved(job, stamp, NOTE_SENT, {"key": effect.key}))
        return job.state
    status, detail = await record_failure(tx, effect, stamp.at, error, policy, rand)
    if status is EffectStatus.PENDING:
        await tx.append_audit(AuditEvent.unmoved(job, stamp, NOTE_RETRY, detail))
    else:
        gave_up = NOTE_UNKNOWN if status is EffectStatus.UNKNOWN else NOTE_GAVE_UP
        await _gave_up(tx, job, stamp, gave_up, detail)
    return job.state


async def _gave_up(tx: Tx, job: Job, stamp: Stamp, action: str, detail: dict[str, Any]) -> None:
    """A note that may not have reached the supplier, and will not be sent again: recorded,
    and the admins told, so that a person can tell the supplier another way."""
    await tx.append_audit(AuditEvent.unmoved(job, stamp, action, detail))
    kind = str(detail["key"]).partition(":")[0]
    await tx.insert_notice(alert_for(job, stamp.at, f"{NOTE_FAILED}:{kind}"))


async def late_success(tx: Tx, effect: Effect, stamp: Stamp, result: dict[str, Any]) -> State:
    """A receipt that arrives after recovery gave up on its runner: the note went."""
    job = await tx.job(effect.job_id)
    await tx.update_effect(
        effect, updated_at=stamp.at, status=EffectStatus.SUCCEEDED, result=result
    )
    detail = {"key": effect.key, "note": "late success from the original attempt"}
    await tx.append_audit(AuditEvent.unmoved(job, stamp, NOTE_SENT, detail))
    return job.state


async def recovered(
    tx: Tx, job: Job, effect: Effect, stamp: Stamp, provider_idempotent: bool
) -> Effect:
    """A note whose runner died mid-send: unknown, never sent again (the admins told), unless
    the provider dedupes the key (then due again)."""
    if provider_idempotent:
        return await release(
            tx, effect, stamp.at, status=EffectStatus.PENDING, next_attempt_at=stamp.at
        )
    effect = await release(tx, effect, stamp.at, status=EffectStatus.UNKNOWN)
    detail = {"key": effect.key, "reason": "runner lost during the attempt"}
    await _gave_up(tx, job, stamp, NOTE_UNKNOWN, detail)
    return effect
