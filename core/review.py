"""The manual-review queue: an admin settles a PO whose send failed for good or whose outcome is
unknown, with one of three choices. The same findings as `manzoori jobs reconcile / reissue /
cancel`, but the admin is checked inside the transaction that acts, and all of a choice's moves
commit together or not at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import partial
from typing import Any

from core.errors import AlreadyResolved, IllegalTransition, NotAnAdmin
from core.jobs import Job
from core.people import is_admin
from core.ports import Store, Tx
from core.service import Rules, revise_in, settle_unknown
from core.states import NEEDS_REVIEW, Action, State
from core.workflow import cancel_open_effects, load, move, retry_stale

# Every move a choice makes carries this, so the trail tells the queue from the CLI.
NOTE = "from the Telegram review queue"


class Choice(StrEnum):
    """What an admin may decide about a PO in the queue."""

    MARK_SENT = "mark_sent"  # the supplier has the e-mail
    SEND_AGAIN = "send_again"  # unknown: same key once more; failed: a new version to approve
    CANCEL = "cancel"  # withdraw the PO


def choices(job: Job) -> tuple[Choice, ...]:
    """The choices an admin has for `job`, in button order; none outside the queue or without
    a draft."""
    if job.draft_version is None:
        return ()
    return tuple(choice for state, choice in _ACTS if state is job.state)


@dataclass(frozen=True)
class Resolution:
    """What a choice did: the job after it, and the queue state it left."""

    job: Job
    choice: Choice
    was: State


async def resolve(
    store: Store,
    po_number: str,
    draft_version: int,
    choice: Choice,
    admin_id: int,
    configured_admins: frozenset[int],
    now: datetime,
    rules: Rules,
) -> Resolution:
    """Apply an admin's choice to a PO still in the queue at `draft_version`, in one
    transaction; a concurrent choice by another admin makes this one AlreadyResolved."""
    once = partial(_resolve_once, store, po_number, draft_version, choice, admin_id,
                   configured_admins, now, rules)  # fmt: skip
    return await retry_stale(once)  # the loser re-reads the job and is refused


async def _resolve_once(
    store: Store,
    po_number: str,
    draft_version: int,
    choice: Choice,
    admin_id: int,
    configured_admins: frozenset[int],
    now: datetime,
    rules: Rules,
) -> Resolution:
    async with store.begin() as tx:
        if not is_admin(admin_id, await tx.roles(admin_id), configured_admins):
            raise NotAnAdmin(f"user {admin_id} is not an admin")
        job = await load(tx, po_number)
        if job.state not in NEEDS_REVIEW or job.draft_version != draft_version:
            raise AlreadyResolved(po_number, job.state, job.draft_version)
        if choice not in choices(job):
            raise IllegalTransition(job.state, choice.value)
        act = _ACTS[(job.state, choice)]
        moved = await act(tx, job, f"user:{admin_id}", now, rules, {"choice": choice.value})
        return Resolution(moved, choice, job.state)


_Act = Callable[[Tx, Job, str, datetime, Rules, dict[str, Any]], Awaitable[Job]]


async def _mark_sent(
    tx: Tx, job: Job, actor: str, now: datetime, _rules: Rules, detail: dict[str, Any]
) -> Job:
    return await settle_unknown(tx, job, Action.RECONCILE_SENT, actor, NOTE, now, detail)


async def _send_same_key(
    tx: Tx, job: Job, actor: str, now: datetime, _rules: Rules, detail: dict[str, Any]
) -> Job:
    return await settle_unknown(tx, job, Action.RECONCILE_NOT_SENT, actor, NOTE, now, detail)


async def _cancel(
    tx: Tx, job: Job, actor: str, now: datetime, _rules: Rules, detail: dict[str, Any]
) -> Job:
    if job.state is State.UNKNOWN_OUTCOME:  # it may be at the supplier: settle that first
        job = await settle_unknown(tx, job, Action.RECONCILE_FAILED, actor, NOTE, now, detail)
    cancelled = await move(tx, job, Action.CANCEL, now, actor, {"note": NOTE, **detail})
    await cancel_open_effects(tx, cancelled, now, "cancelled")
    return cancelled


async def _reissue(
    tx: Tx, job: Job, actor: str, now: datetime, rules: Rules, detail: dict[str, Any]
) -> Job:
    """The same content as a new draft version: a new key, and it needs a fresh approval."""
    assert job.draft_version is not None
    draft = await tx.draft(job.id, job.draft_version)
    return await revise_in(tx, job, draft, actor, now, rules, NOTE, detail)


# What each choice does in each queue state, in button order. No "Mark sent" for a failed send:
# it was refused or never delivered, so it would record something nobody saw happen.
_ACTS: dict[tuple[State, Choice], _Act] = {
    (State.UNKNOWN_OUTCOME, Choice.MARK_SENT): _mark_sent,
    (State.UNKNOWN_OUTCOME, Choice.SEND_AGAIN): _send_same_key,
    (State.UNKNOWN_OUTCOME, Choice.CANCEL): _cancel,
    (State.FAILED_FINAL, Choice.SEND_AGAIN): _reissue,
    (State.FAILED_FINAL, Choice.CANCEL): _cancel,
}
