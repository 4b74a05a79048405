"""The manual-review queue: an admin settles a PO whose send failed for good or whose outcome is
unknown, with one of three choices; or a called-off PO whose cancellation e-mail may not have
gone (mark sent, or send again) or failed for good (settled: the supplier was told another
way). The same findings as `manzoori jobs reconcile / reissue / cancel`, but the admin is
checked inside the transaction that acts, and all of a choice's moves commit together or not
at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from core.approval.opening import Revision, revise_in
from core.approval.policies import Rules
from core.errors import AlreadyResolved, IllegalTransition
from core.jobs import notices
from core.jobs.closing import settle_unknown
from core.jobs.jobs import AuditEvent, Job, Stamp
from core.jobs.notices import Notice, NoticeKind
from core.jobs.sends import cancel_open_effects
from core.jobs.states import NEEDS_REVIEW, Action, State
from core.jobs.transitions import load, move, retry_on_stale
from core.outbox.calling_off import settle_call_off
from core.people.users import name_of, require_admin
from core.ports import ReadTx, Store, Tx

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


async def shown(store: Store, job: Job, chat_id: int, message_id: int, now: datetime) -> None:
    """Record that /queue showed `job` in a message, so that it is edited once the job leaves
    the queue (queue_items_left), by whatever route."""
    async with store.begin() as tx:
        await tx.insert_notice(notices.queue_item_shown(job, chat_id, message_id, now))


@dataclass(frozen=True)
class LeftQueue:
    """A PO that left the queue after it was shown to an admin, and how it left."""

    job: Job  # as it is now
    supplier: str
    way_out: AuditEvent  # the move that took it out of the queue
    by: str | None  # the name of the person who made that move, if a person did
    message: Notice | None = None  # the QUEUE_ITEM record of the message that showed it


async def queue_items_left(store: Store, job_id: str) -> list[LeftQueue]:
    """The job's review-queue messages, each with the move that took the job out of the queue
    since it was shown (none for a message of a PO still in the queue since)."""
    async with store.reading() as tx:
        shown = [n for n in await tx.notices_for(job_id) if n.kind is NoticeKind.QUEUE_ITEM]
        left = []
        for message in shown:
            found = await _left(tx, job_id, int(message.event.removeprefix("j") or 0))
            if found is not None:
                left.append(replace(found, message=message))
        return left


async def left_since(store: Store, job_id: str, shown_at: int) -> LeftQueue | None:
    """How the job left the queue after its version `shown_at`; None if it has not."""
    async with store.reading() as tx:
        return await _left(tx, job_id, shown_at)


async def _left(tx: ReadTx, job_id: str, shown_at: int) -> LeftQueue | None:
    out = way_out(await tx.audit(job_id), shown_at)
    if out is None:
        return None
    job = await tx.job(job_id)
    draft = await tx.draft(job.id, job.draft_version) if job.draft_version else None
    supplier = draft.supplier_name if draft else job.supplier_id or "-"
    who = out.actor.removeprefix("user:")
    by = await name_of(tx, int(who)) if who.isdigit() else None
    return LeftQueue(job, supplier, out, by)


def way_out(trail: Sequence[AuditEvent], shown_at: int) -> AuditEvent | None:
    """The first move out of the queue after job version `shown_at`, in the job's trail."""
    for event in trail:
        leaves = event.from_state in NEEDS_REVIEW and event.to_state is not event.from_state
        if leaves and int(event.detail.get("job_version", 0)) > shown_at:
            return event
    return None
