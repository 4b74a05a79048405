"""Silence is chased: a sent PO whose supplier has not answered from the link in its e-mail is
reminded once, then put before the requester and the admins.

A policy's [suppliers] (core.approval.ladder.Chase; DEFAULT_CHASE without one) says how long
after the e-mail left: `remind_after`, one reminder e-mail to the supplier (its own business
action, `remind-po:<PO>:v<n>:<hash>`, through the outbox: core.outbox.notes), and
`escalate_after`, a Telegram message to the requester and the admins naming the PO and the
supplier, with a WhatsApp button to the supplier's phone when the terms give one. Both are
shifted into the working hours of [reminders] (every hour counts without them). Each is owed
under its own key, so it happens once across restarts and processes however often the sweep
runs. Nothing is chased once the supplier answered, nor for a PO called off or replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from core.approval.ladder import ALWAYS, DEFAULT_CHASE, ChaseStep
from core.errors import InsertConflict
from core.jobs import notices
from core.jobs.answers import awaiting_answer
from core.jobs.effects import EffectKind, remind_po_key
from core.jobs.jobs import AuditEvent, Effect, Job, Stamp
from core.jobs.notices import EVERYONE, SILENT, NoticeKind, owed
from core.messaging.nudges import Sweep, ladder_in_force
from core.ports import ReadTx, Store, Tx

CHASE_CHORE = "supplier_chase"
SWEEP_LEASE = timedelta(minutes=5)
# A PO sent longer ago than its escalation plus this was chased already (or the bot was down
# for weeks): the sweep reads only POs sent within it, however many years of them there are.
LOOK_BACK = timedelta(days=30)


@dataclass(frozen=True)
class Awaiting:
    """A sent PO that waits for its supplier's answer: its job, and the e-mail that went."""

    job: Job
    sent: Effect


async def awaiting(tx: ReadTx, job: Job) -> Awaiting | None:
    """`job` and its e-mail, if it waits for its supplier's answer (awaiting_answer)."""
    sent = await awaiting_answer(tx, job)
    return None if sent is None else Awaiting(job, sent)


# /pending all lists the POs that wait for their supplier's answer, sent within this long.
LISTED_WITHIN = timedelta(days=90)


async def awaiting_suppliers(tx: ReadTx, now: datetime) -> list[Awaiting]:
    """Every PO sent within LISTED_WITHIN whose supplier has not answered, oldest first."""
    found = []
    for job in await tx.jobs_sent_since(now - LISTED_WITHIN):
        waiting = await awaiting(tx, job)
        if waiting is not None:
            found.append(waiting)
    return found


def silent_news(job: Job, now: datetime) -> tuple[notices.Notice, notices.Notice]:
    """The requester's and the admins' news that the supplier of `job`'s sent version has not
    answered: one each per version, whoever sweeps."""
    version = f"v{job.draft_version}"
    mine = owed(
        NoticeKind.STATUS,
        key=f"status:{job.po_number}:{SILENT}:{version}",
        user_id=job.requester_id,
        job=job,
        now=now,
        event=SILENT,
    )
    admins = owed(
        NoticeKind.ALERT,
        key=f"alert:{job.po_number}:{SILENT}:{version}",
        user_id=EVERYONE,
        job=job,
        now=now,
        event=SILENT,
    )
    return mine, admins


async def sweep(store: Store, run: Sweep, owner: str) -> int | None:
    """Owe every reminder and escalation due now, unless another process swept within
    `run.every`: how many were owed, or None when it was not this process's turn."""
    now = run.stamp.at
    async with store.begin() as tx:
        if not await tx.claim_chore(CHASE_CHORE, owner, now, now - run.every, now + SWEEP_LEASE):
            return None
        policy = await tx.current_policy()
        chase = policy.suppliers if policy is not None and policy.suppliers else DEFAULT_CHASE
        ladder = ladder_in_force(policy, run.configured)
        hours = ladder.working_hours if ladder is not None else ALWAYS
        since = now - chase.escalate_after - LOOK_BACK
        candidates = [job.id for job in await tx.jobs_sent_since(since)]
    count = 0
    for job_id in candidates:
        async with store.reading() as reading:
            waiting = await awaiting(reading, await reading.job(job_id))
        if waiting is None:
            continue
        due = chase.due(waiting.sent.updated_at, hours, run.zone)
        if due[ChaseStep.REMIND] <= now:
            count += await _owe(store, waiting, ChaseStep.REMIND, run.stamp)
        if due[ChaseStep.ESCALATE] <= now:
            count += await _owe(store, waiting, ChaseStep.ESCALATE, run.stamp)
    async with store.begin() as tx:
        await tx.finish_chore(CHASE_CHORE, owner, now)
    return count


async def _owe(store: Store, waiting: Awaiting, step: ChaseStep, stamp: Stamp) -> int:
    """Owe one rung for `waiting`, read again inside the write: 1 if it was owed now, 0 if it
    was owed before (by this process or another) or is moot by now."""
    async with store.begin() as tx:
        job = await tx.job(waiting.job.id)
        if await awaiting(tx, job) is None or job.version != waiting.job.version:
            return 0
        if step is ChaseStep.REMIND:
            owed_now = await _remind(tx, job, stamp)
        else:
            owed_now = await _escalate(tx, job, stamp)
        if owed_now:
            detail = {"step": step.value, "draft_version": job.draft_version}
            await tx.append_audit(AuditEvent.unmoved(job, stamp, "supplier_chased", detail))
        return int(owed_now)


async def _remind(tx: Tx, job: Job, stamp: Stamp) -> bool:
    """The reminder e-mail owed, once: False if its key was owed already."""
    assert job.draft_version is not None and job.draft_hash is not None
    key = remind_po_key(job.po_number, job.draft_version, job.draft_hash)
    if any(e.key == key for e in await tx.effects_for(job.id)):
        return False
    try:
        await tx.insert_effect(Effect.of_job(EffectKind.REMIND_PO, job, stamp.at))
    except InsertConflict:  # another process owed it meanwhile
        return False
    return True


async def _escalate(tx: Tx, job: Job, stamp: Stamp) -> bool:
    """The requester's and the admins' news owed, once: False if it was owed already."""
    mine, admins = silent_news(job, stamp.at)
    told = await tx.owe_notice(mine)
    return await tx.owe_notice(admins) or told
