"""The one way a job moves: a validated transition worked out in memory (step), then written
with compare-and-set, its audit event and the news it owes in one transaction (move); and
the retry of a use case that lost a race or met a busy database (retry_on_stale)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, ParamSpec, TypeVar

from core.errors import InsertConflict, StaleJob, StoreBusy, UnknownJob
from core.jobs import notices
from core.jobs.jobs import AuditEvent, Job, Stamp
from core.jobs.notices import Notice
from core.jobs.states import NEEDS_REVIEW, Action, next_state
from core.ports import ReadTx, Tx

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


@dataclass(frozen=True)
class Step:
    """One transition worked out in memory: the job after it, its audit event, and the news it
    owes (nothing is written until `record` or `move` writes it)."""

    job: Job
    audit: AuditEvent
    owed: tuple[Notice, ...]


def step(
    job: Job,
    action: Action,
    stamp: Stamp,
    detail: dict[str, Any] | None = None,
    **changes: Any,
) -> Step:
    """Apply one transition to `job` in memory, validated like every move (next_state), with
    its audit event and the news that is owed if, and only if, it happens."""
    target = next_state(job.state, action)
    moved = replace(job, state=target, version=job.version + 1, updated_at=stamp.at, **changes)
    audit = {"job_version": moved.version, **(detail or {})}
    event = AuditEvent.stamped(
        stamp, action.value, audit, job_id=job.id, states=(job.state, target)
    )
    owed: list[Notice] = []
    if action in notices.TOLD_TO_REQUESTER:
        owed.append(notices.status_for(moved, stamp.at))
    if notices.refreshes_cards(job.state, action):
        owed.append(notices.card_edits_for(moved, stamp.at))
    if notices.alerts_admins(target):
        owed.append(notices.alert_for(moved, stamp.at, target.value))
    if job.state in NEEDS_REVIEW and target is not job.state:  # out of the queue
        owed.append(notices.queue_edits_for(moved, stamp.at))
    return Step(moved, event, tuple(owed))


async def move(
    tx: Tx,
    job: Job,
    action: Action,
    stamp: Stamp,
    detail: dict[str, Any] | None = None,
    **changes: Any,
) -> Job:
    """Apply one transition with compare-and-set and its audit event, in `tx`; the news it
    owes is owed in the same transaction."""
    done = step(job, action, stamp, detail, **changes)
    moved = await tx.update_job(job, state=done.job.state, updated_at=stamp.at, **changes)
    await tx.append_audit(done.audit)
    await tx.insert_notice(*done.owed)
    return moved


async def load(tx: ReadTx, po_number: str) -> Job:
    """The job with that PO number, or raise UnknownJob."""
    job = await tx.job_by_po(po_number)
    if job is None:
        raise UnknownJob(f"no purchase order {po_number}")
    return job
