"""Ending a request without a decision, or settling one: expiry when the approval window
closes, a cancellation, and a person's finding on an unknown outcome."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.errors import (
    ReconcileRefused,
)
from core.jobs import proposals
from core.jobs.jobs import Job, Stamp
from core.jobs.sends import cancel_open_effects, settle_unknown_sends
from core.jobs.states import Action, State, next_state
from core.jobs.transitions import load, move, retry_on_stale
from core.ports import Store, Tx


@retry_on_stale
async def expire_due(store: Store, now: datetime, limit: int = 100) -> list[Job]:
    """Expire requests whose approval window closed without a decision; a request a tap or
    another process moved meanwhile is read again."""
    stamp = Stamp("runner", now)
    async with store.begin() as tx:
        due = await tx.jobs_past_deadline(State.AWAITING_APPROVAL, now, limit)
        return [await proposals.expire(tx, job, stamp, "approval window closed") for job in due]


async def cancel(store: Store, po_number: str, note: str, stamp: Stamp) -> Job:
    """Withdraw a request that has not been sent; open sends are cancelled with it."""
    async with store.begin() as tx:
        job = await load(tx, po_number)
        next_state(job.state, Action.CANCEL)
        await cancel_open_effects(tx, job, stamp.at, "cancelled")
        return await move(tx, job, Action.CANCEL, stamp, {"note": note})


async def reconcile(store: Store, po_number: str, finding: Action, note: str, stamp: Stamp) -> Job:
    """Record a person's finding on an unknown outcome: sent, not sent, or failed."""
    async with store.begin() as tx:
        job = await load(tx, po_number)
        if job.state is not State.UNKNOWN_OUTCOME:
            raise ReconcileRefused(f"{po_number} is {job.state.value}, not UNKNOWN_OUTCOME")
        return await settle_unknown(tx, job, finding, stamp, {"note": note})


async def settle_unknown(
    tx: Tx, job: Job, finding: Action, stamp: Stamp, detail: dict[str, Any]
) -> Job:
    """Move an UNKNOWN_OUTCOME job on a person's finding (`detail` has their note), and settle
    its send to match."""
    # The job first: its compare-and-set is what a concurrent finding loses on.
    moved = await move(tx, job, finding, stamp, detail)
    await settle_unknown_sends(tx, job, finding, stamp, str(detail.get("note", "")))
    return moved
