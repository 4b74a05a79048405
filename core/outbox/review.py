"""The manual-review queue: an admin settles a PO whose send failed for good or whose outcome is
unknown, with one of three choices; or a called-off PO whose cancellation e-mail may not have
gone (mark sent, or send again) or failed for good (settled: the supplier was told another
way). The same findings as `manzoori jobs reconcile / reissue / cancel`, but the admin is
checked inside the transaction that acts, and all of a choice's moves commit together or not
at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from core.approval.opening import Revision, revise_in
from core.approval.policies import Rules
from core.errors import AlreadyResolved, IllegalTransition
from core.jobs.closing import settle_unknown
from core.jobs.jobs import Job, Stamp
from core.jobs.sends import cancel_open_effects
from core.jobs.states import NEEDS_REVIEW, Action, State
from core.jobs.transitions import load, move, retry_on_stale
from core.outbox.calling_off import settle_call_off
from core.people.users import require_admin
from core.ports import Store, Tx

# Every move a choice makes carries this, so the trail tells the queue from the CLI.
NOTE = "from the Telegram review queue"


class Choice(StrEnum):
    """What an admin may decide about a PO in the queue."""

    MARK_SENT = "mark_sent"  # the supplier has the e-mail
    SEND_AGAIN = "send_again"  # unknown: same key once more; failed: a new version to approve
    CANCEL = "cancel"  # withdraw the PO
    SETTLED = "settled"  # a called-off PO's supplier was told another way (by phone, say)


def choices(job: Job) -> tuple[Choice, ...]:
    """The choices an admin has for `job`, in button order; none outside the queue or without
    a draft."""
    if job.draft_version is None:
        return ()
    return tuple(choice for state, choice in _ACTS if state is job.state)


@dataclass(frozen=True)
class AdminChoice:
    """An admin's choice about a PO still in the queue at `draft_version`."""

    po_number: str
    draft_version: int
    choice: Choice
    admin_id: int  # from the update Telegram signed


@dataclass(frozen=True)
class Resolution:
    """What a choice did: the job after it, and the queue state it left."""

    job: Job
    choice: Choice
    was: State


@retry_on_stale  # the loser of two admins' choices re-reads the job and is refused
async def resolve(
    store: Store,
    chosen: AdminChoice,
    configured_admins: frozenset[int],
    now: datetime,
    rules: Rules,
) -> Resolution:
    """Apply an admin's choice to a PO still in the queue at its draft version, in one
    transaction; a concurrent choice by another admin makes this one AlreadyResolved."""
    async with store.begin() as tx:
        await require_admin(tx, chosen.admin_id, configured_admins)
        job = await load(tx, chosen.po_number)
        if job.state not in NEEDS_REVIEW or job.draft_version != chosen.draft_version:
            raise AlreadyResolved(chosen.po_number, job.state, job.draft_version)
        if chosen.choice not in choices(job):
            raise IllegalTransition(job.state, chosen.choice.value)
        act = _ACTS[(job.state, chosen.choice)]
        detail = {"choice": chosen.choice.value, "note": NOTE}
        moved = await act(tx, job, Stamp(f"user:{chosen.admin_id}", now), rules, detail)
        return Resolution(moved, chosen.choice, job.state)


_Act = Callable[[Tx, Job, Stamp, Rules, dict[str, Any]], Awaitable[Job]]


async def _mark_sent(tx: Tx, job: Job, stamp: Stamp, _rules: Rules, detail: dict[str, Any]) -> Job:
    return await settle_unknown(tx, job, Action.RECONCILE_SENT, stamp, detail)


async def _send_same_key(
    tx: Tx, job: Job, stamp: Stamp, _rules: Rules, detail: dict[str, Any]
) -> Job:
    return await settle_unknown(tx, job, Action.RECONCILE_NOT_SENT, stamp, detail)


def _settling(action: Action) -> _Act:
    """A choice on a called-off PO's cancellation e-mail: a person's finding (core.outbox.
    calling_off.settle_call_off)."""

    async def act(tx: Tx, job: Job, stamp: Stamp, _rules: Rules, detail: dict[str, Any]) -> Job:
        return await settle_call_off(tx, job, action, stamp, detail)

    return act


async def _cancel(tx: Tx, job: Job, stamp: Stamp, _rules: Rules, detail: dict[str, Any]) -> Job:
    if job.state is State.UNKNOWN_OUTCOME:  # it may be at the supplier: settle that first
        job = await settle_unknown(tx, job, Action.RECONCILE_FAILED, stamp, detail)
    cancelled = await move(tx, job, Action.CANCEL, stamp, detail)
    await cancel_open_effects(tx, cancelled, stamp.at, "cancelled")
    return cancelled


async def _reissue(tx: Tx, job: Job, stamp: Stamp, rules: Rules, detail: dict[str, Any]) -> Job:
    """The same content as a new draft version: a new key, and it needs a fresh approval."""
    assert job.draft_version is not None
    draft = await tx.draft(job.id, job.draft_version)
    return await revise_in(tx, job, Revision(draft, detail), stamp, rules)


# What each choice does in each queue state, in button order. No "Mark sent" for a failed send:
# it was refused or never delivered, so it would record something nobody saw happen.
_ACTS: dict[tuple[State, Choice], _Act] = {
    (State.UNKNOWN_OUTCOME, Choice.MARK_SENT): _mark_sent,
    (State.UNKNOWN_OUTCOME, Choice.SEND_AGAIN): _send_same_key,
    (State.UNKNOWN_OUTCOME, Choice.CANCEL): _cancel,
    (State.FAILED_FINAL, Choice.SEND_AGAIN): _reissue,
    (State.FAILED_FINAL, Choice.CANCEL): _cancel,
    # a called-off PO's cancellation e-mail: it arrived, or the same key once more; failed
    # for good, the supplier was told another way
    (State.CANCEL_UNKNOWN, Choice.MARK_SENT): _settling(Action.RECONCILE_CANCEL_SENT),
    (State.CANCEL_UNKNOWN, Choice.SEND_AGAIN): _settling(Action.RECONCILE_CANCEL_NOT_SENT),
    (State.CANCEL_FAILED, Choice.SETTLED): _settling(Action.SETTLE_CANCEL),
}
