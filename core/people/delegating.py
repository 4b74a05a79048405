"""Handing an approver's cards to another while they are away (/away, /back): a delegation
set, replaced, ended by the approver, an admin, its time or a lost role; the cards follow."""

from __future__ import annotations

from datetime import datetime

from core.approval.delegations import PAST, Delegation, check_delegation
from core.approval.policies import DEFAULT_GROUP, Policy
from core.approval.standing import (
    alert_if_short,
    held_card,
    standing,
)
from core.errors import (
    DelegationRefused,
    Refusal,
)
from core.jobs import notices
from core.jobs.jobs import AuditEvent, Stamp
from core.jobs.states import State
from core.people.users import Acting, require_admin
from core.ports import ReadTx, Store, Tx


async def active_delegations(tx: ReadTx, now: datetime) -> list[Delegation]:
    return [d for d in await tx.delegations_since(now) if d.active(now)]


async def _may_act_for(tx: ReadTx, user_id: int, acting: Acting | None) -> None:
    """Someone sets or ends their own delegation; only an admin another's."""
    if acting is not None and acting.user_id != user_id:
        await require_admin(tx, acting.user_id, acting.configured_admins)


async def delegate(
    store: Store,
    delegator: int,
    delegate_id: int,
    until: datetime,
    stamp: Stamp,
    default: Policy,
    acting: Acting | None = None,
) -> Delegation:
    """Hand `delegator`'s approvals to `delegate_id` from now until `until` (/away), audited;
    an earlier delegation of theirs ends. `acting`: who asked, from Telegram (the delegator,
    or an admin). The delegate is owed the delegator's cards of every request waiting for
    them."""
    async with store.begin() as tx:
        await _may_act_for(tx, delegator, acting)
        if until <= stamp.at:
            raise DelegationRefused(PAST, Refusal.IN_THE_PAST)
        active = await active_delegations(tx, stamp.at)
        approvers = (await tx.group_members({DEFAULT_GROUP}))[DEFAULT_GROUP]
        check_delegation(delegator, delegate_id, approvers, active)
        made = await tx.insert_delegation(delegator, delegate_id, stamp.at, until, stamp.actor)
        for earlier in active:
            if earlier.delegator == delegator:  # replaced: its cards go to the new delegate
                await end_delegation(tx, earlier, stamp, default)
        detail = {
            "delegation_id": made.id,
            "delegator": delegator,
            "delegate": delegate_id,
            "until": until.isoformat(),
        }
        await tx.append_audit(AuditEvent.stamped(stamp, "delegate", detail))
        for job in await tx.jobs_in_states([State.AWAITING_APPROVAL]):
            where = await standing(tx, job, stamp.at, default)
            if where.cards_to.get(delegate_id) == delegator:
                await tx.insert_notice(held_card(job, delegate_id, delegator, stamp.at))
            await alert_if_short(tx, job, where, stamp.at)  # two members now one person
        return made


async def come_back(
    store: Store,
    delegator: int,
    stamp: Stamp,
    default: Policy,
    acting: Acting | None = None,
) -> Delegation:
    """End `delegator`'s delegation now (/back), audited: their delegate's cards for them stop
    deciding, and they are sent their open cards again."""
    async with store.begin() as tx:
        await _may_act_for(tx, delegator, acting)
        for active in await active_delegations(tx, stamp.at):
            if active.delegator == delegator:
                ended = await end_delegation(tx, active, stamp, default)
                if ended is not None:
                    return ended
        message = f"user {delegator} has no delegation to end"
        raise DelegationRefused(message, Refusal.NOTHING_TO_END, user=delegator)


async def end_due_delegations(
    store: Store, now: datetime, default: Policy, limit: int = 100
) -> list[Delegation]:
    """End the delegations whose time is up (the runner's sweep), as /back would."""
    stamp = Stamp("runner", now)
    async with store.begin() as tx:
        due = await tx.delegations_due(now, limit)
        ended = [await end_delegation(tx, d, stamp, default, at=d.until) for d in due]
        return [d for d in ended if d is not None]  # None: another process ended it first


async def end_delegation(
    tx: Tx, delegation: Delegation, stamp: Stamp, default: Policy, *, at: datetime | None = None
) -> Delegation | None:
    """End one delegation (at `at`, its due time, or now), audited; None if another process
    ended it first. The delegate's cards are edited to what is true now, so that those they
    held for the delegator no longer offer to decide, and the delegator is sent again the
    cards of the requests that wait for them (`default`: the configuration's policy)."""
    ended = await tx.end_delegation(delegation.id, at or stamp.at)
    if ended is None:
        return None
    detail = {
        "delegation_id": ended.id,
        "delegator": ended.delegator,
        "delegate": ended.delegate,
    }
    await tx.append_audit(AuditEvent.stamped(stamp, "end_delegation", detail))
    again = f"back{ended.id}"
    for job in await tx.jobs_in_states([State.AWAITING_APPROVAL]):
        held = {
            n.user_id for n in await tx.notices_for(job.id) if n.kind is notices.NoticeKind.CARD
        }
        if ended.delegate not in held:
            continue  # the delegate never held a card of it: nothing changes
        await tx.insert_notice(notices.card_edits_for(job, stamp.at, because=again))
        where = await standing(tx, job, stamp.at, default)
        if ended.delegator in where.cards_to:
            await tx.insert_notice(notices.card_for(job, ended.delegator, stamp.at, again))
    return ended
