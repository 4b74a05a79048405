"""The mechanics every use case shares: one audited compare-and-set move that owes its news in
the same transaction, the approvers' cards, and the retry of a use case that lost a race."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from core import notices
from core.errors import InsertConflict, StaleJob, StoreBusy, UnknownJob
from core.jobs import AuditEvent, Job, Stamp
from core.notices import Notice
from core.policies import Decision, Role
from core.ports import ReadTx, Tx
from core.states import Action, State, next_state

P = ParamSpec("P")
T = TypeVar("T")
# Concurrent writers on one job race on its version; a handful of re-reads settles them.
CAS_ATTEMPTS = 5
# A busy database (StoreBusy) is tried this many times in all. No backoff here (core has no
# clock): each attempt has already waited the store's own busy timeout for the lock (SQLite's
# busy_timeout, store.engine), so the attempts together stay inside a tap's 15 seconds.
BUSY_ATTEMPTS = 3


def retry_on_stale(use_case: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """Run a use case again, from its first read, when a concurrent writer won: a
    compare-and-set lost (StaleJob) or an insert beaten to its key (InsertConflict), up to
    CAS_ATTEMPTS times; or when the database was busy (StoreBusy), up to BUSY_ATTEMPTS times.
    Safe because each attempt's transaction either committed whole or left nothing."""

    @functools.wraps(use_case)
    async def again(*args: P.args, **kwargs: P.kwargs) -> T:
        lost = busy = 0
        while True:
            try:
                return await use_case(*args, **kwargs)
            except (StaleJob, InsertConflict):
                lost += 1
                if lost == CAS_ATTEMPTS:
                    raise
            except StoreBusy:
                busy += 1
                if busy == BUSY_ATTEMPTS:
                    raise

    return again


async def move(
    tx: Tx,
    job: Job,
    action: Action,
    stamp: Stamp,
    detail: dict[str, Any] | None = None,
    **changes: Any,
) -> Job:
    """Apply one transition with compare-and-set and its audit event, in `tx`."""
    target = next_state(job.state, action)
    moved = await tx.update_job(job, state=target, updated_at=stamp.at, **changes)
    audit = {"job_version": moved.version, **(detail or {})}
    states = (job.state, target)
    await tx.append_audit(
        AuditEvent.stamped(stamp, action.value, audit, job_id=job.id, states=states)
    )
    # In the same transaction: the news is owed if, and only if, it happened.
    owed: list[Notice] = []
    if action in notices.TOLD_TO_REQUESTER:
        owed.append(notices.status_for(moved, stamp.at))
    if notices.refreshes_cards(job.state, action):
        owed.append(notices.card_edits_for(moved, stamp.at))
    if notices.alerts_admins(target):
        owed.append(notices.alert_for(moved, stamp.at, target.value))
    for notice in owed:
        await tx.insert_notice(notice)
    return moved


async def ask_approvers(tx: Tx, job: Job, now: datetime) -> list[Notice]:
    """Owe an approval card for the job's current draft to every approver but the requester."""
    assert job.draft_version is not None
    owed = []
    for approver in await tx.holders(Role.APPROVER):
        if approver == job.requester_id:
            continue  # nobody approves their own request, so nobody is asked to
        card = notices.card_for(job, approver, now)
        await tx.insert_notice(card)
        owed.append(card)
    return owed


async def ask_new_approver(tx: Tx, approver: int, now: datetime) -> list[Notice]:
    """Owe someone who just became an approver the card of every request still waiting that
    they may decide: not their own, and not a draft version they decided before."""
    owed = []
    for job in await tx.jobs_in_states([State.AWAITING_APPROVAL]):
        if job.requester_id == approver:
            continue
        decided = {(d.reviewer_id, d.draft_version) for d in await tx.decisions(job.id)}
        if (approver, job.draft_version) in decided:
            continue  # a returning approver's earlier decision on this version stands
        card = notices.card_for(job, approver, now)
        await tx.insert_notice(card)
        owed.append(card)
    return owed


async def load(tx: ReadTx, po_number: str) -> Job:
    """The job with that PO number, or raise UnknownJob."""
    job = await tx.job_by_po(po_number)
    if job is None:
        raise UnknownJob(f"no purchase order {po_number}")
    return job


async def standing_decisions(tx: ReadTx, job_id: str) -> list[Decision]:
    """A job's decisions by people who still hold the approver role: the ones that count."""
    return [d for d in await tx.decisions(job_id) if Role.APPROVER in await tx.roles(d.reviewer_id)]
