"""The reminder ladder at work: the sweep that owes each nudge once it is due, and what a due nudge
says when it is delivered (core.approval.ladder has the arithmetic, core.jobs.notices the outbox).

The sweep runs in every process, at most once per `every` across all of them (the `ladder`
chore's lease), and reads each waiting request: for each person its current stage waits for
whose card was delivered (or could not be), it owes the ladder's steps that are due, each as a
NUDGE notice whose key names the request, its draft version, the step and the person, with
its audit event, in one transaction (a request is read first without a write lock, and
written only when something is due). The key makes a second one impossible,
however many processes sweep and however often they restart; the audit event is written
only by the transaction whose insert was new. Once a day at `digest_at` (the `digest` chore)
each person with a card waiting gets the day's digest, keyed by day and person.

A nudge is read when it is delivered: one whose request was decided, expired, cancelled or
re-drafted, or no longer waits for that person, or is past its deadline, is cancelled, not
sent. A person's other due nudges of the same step are claimed with it, so that several
requests due at once make one message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, tzinfo

from core.approval.ladder import Ladder, Step, digest_day, digest_moment, due_times
from core.approval.policies import ApprovalPolicy, Policy, Role
from core.approval.standing import held_card, standing
from core.jobs.jobs import AuditEvent, Job, Stamp
from core.jobs.notices import (
    DIGEST,
    EVERYONE,
    Notice,
    NoticeKind,
    NoticeStatus,
    digest_for,
    fanned_out,
    owed,
    settle,
)
from core.jobs.states import State
from core.messaging.cards import CardFacts, card_facts
from core.people.users import called
from core.ports import ReadTx, Store, Tx

LADDER_CHORE = "ladder"
DIGEST_CHORE = "digest"
# A sweep that dies keeps the chore this long; then another process takes it over.
SWEEP_LEASE = timedelta(minutes=2)
ESCALATED = "escalated:"  # the event of one admin's copy of an escalation, then the person's id
# Requests one digest lists: a phone screen's worth; the rest are named by count.
DIGEST_LIMIT = 20


@dataclass(frozen=True)
class Sweep:
    """One sweep's stamp, the configuration's ladder (for a policy with no [reminders]) and
    default policy, the zone of the working hours, and how often processes sweep."""

    stamp: Stamp
    configured: Ladder | None
    default: Policy
    zone: tzinfo
    every: timedelta


def ladder_in_force(policy: Policy | None, configured: Ladder | None) -> Ladder | None:
    """The ladder waiting requests follow: the [reminders] of the policy in force, else the
    configuration's (None: no nudges at all)."""
    return policy.reminders if policy is not None and policy.reminders else configured


def nudge_for(job: Job, step: Step, person: int, now: datetime, escalate_to: str | None) -> Notice:
    """The notice of one step for one person on the job's current draft version; an escalation
    is owed to EVERYONE and fanned out to the admins (and `escalate_to`) on delivery."""
    key = f"{step.value}:{job.po_number}:v{job.draft_version}:{person}"
    if step is Step.ESCALATE:
        event = f"{step.value}:{person}" + (f":{escalate_to}" if escalate_to else "")
        return owed(NoticeKind.NUDGE, key=key, user_id=EVERYONE, job=job, now=now, event=event)
    return owed(NoticeKind.NUDGE, key=key, user_id=person, job=job, now=now, event=step.value)


async def sweep(store: Store, run: Sweep, owner: str) -> int | None:
    """Owe every nudge due now, unless another process swept within `run.every`: how many
    were owed, or None when it was not this process's turn. Each request is read without a
    write lock; only one with a step due and not yet owed takes a write transaction."""
    now = run.stamp.at
    async with store.begin() as tx:
        if not await tx.claim_chore(LADDER_CHORE, owner, now, now - run.every, now + SWEEP_LEASE):
            return None
        ladder = ladder_in_force(await tx.current_policy(), run.configured)
        jobs = [job.id for job in await tx.jobs_in_states([State.AWAITING_APPROVAL])]
    count, holding = 0, dict[int, datetime]()
    if ladder is not None:
        for job_id in jobs:
            async with store.reading() as reading:
                due = await _due_steps(reading, job_id, ladder, run, holding)
            if due:
                async with store.begin() as tx:
                    count += await _owe(tx, due)
        count += await _owe_digests(store, ladder, run, owner, holding)
    async with store.begin() as tx:
        await tx.finish_chore(LADDER_CHORE, owner, now)
    return count


async def _owe(tx: Tx, due: list[tuple[Notice, AuditEvent]]) -> int:
    """Owe each notice, and audit those whose insert was new (another process may have owed
    one since it was read)."""
    count = 0
    for notice, event in due:
        if await tx.owe_notice(notice):
            await tx.append_audit(event)
            count += 1
    return count


async def _due_steps(
    tx: ReadTx, job_id: str, ladder: Ladder, run: Sweep, holding: dict[int, datetime]
) -> list[tuple[Notice, AuditEvent]]:
    """The steps due now on one request and not owed yet, each with its audit event; note in
    `holding` whoever can be written to and holds its delivered card, with their earliest
    such delivery (the digest's people)."""
    now, job = run.stamp.at, await tx.job(job_id)
    if job.state is not State.AWAITING_APPROVAL:
        return []
    where = await standing(tx, job, now, run.default)
    if where.waiting_group is None:
        return []
    known = {n.key: n for n in await tx.notices_for(job.id)}
    owed: list[tuple[Notice, AuditEvent]] = []
    for holder, whom in where.cards_to.items():
        card = known.get(held_card(job, holder, whom, now).key)
        if card is None or card.status not in (NoticeStatus.SENT, NoticeStatus.FAILED):
            continue  # not delivered yet: the ladder starts when it is
        user = await tx.telegram_user(holder)
        reachable = card.status is NoticeStatus.SENT and user is not None and user.reachable
        if reachable:
            holding[holder] = min(holding.get(holder, card.updated_at), card.updated_at)
        due = due_times(
            ladder,
            delivered_at=card.updated_at,
            deadline=job.decision_deadline,
            reachable=reachable,
            zone=run.zone,
        )
        for step, at in sorted(due.items(), key=lambda item: item[1]):
            notice = nudge_for(job, step, holder, now, ladder.escalate_to)
            if at <= now and notice.key not in known:
                detail = {"to": holder, "stage": where.tally.stage + 1, "due_at": at.isoformat()}
                event = AuditEvent.stamped(run.stamp, f"ladder_{step.value}", detail, job_id=job.id)
                owed.append((notice, event))
    return owed


async def _owe_digests(
    store: Store, ladder: Ladder, run: Sweep, owner: str, holding: dict[int, datetime]
) -> int:
    """Once a day, at the ladder's digest_at: each person with a card waiting that was
    delivered before then, their digest (a card just delivered is news enough)."""
    now = run.stamp.at
    day = digest_day(ladder, now, run.zone)
    moment = None if day is None else digest_moment(ladder, day, run.zone)
    if day is None or moment is None or not holding:
        return 0
    count = 0
    async with store.begin() as tx:
        before = moment - timedelta(microseconds=1)  # done at or after today's moment: done
        if not await tx.claim_chore(DIGEST_CHORE, owner, now, before, now + SWEEP_LEASE):
            return 0
        for person in sorted(p for p, since in holding.items() if since < moment):
            if await tx.owe_notice(digest_for(person, day, now)):
                detail = {"to": person, "day": day.isoformat()}
                await tx.append_audit(AuditEvent.stamped(run.stamp, "ladder_digest", detail))
                count += 1
        await tx.finish_chore(DIGEST_CHORE, owner, now)
    return count


@dataclass(frozen=True)
class Due:
    """One waiting request a nudge is about: its card, and for an admin's escalation whom it
    waits for, whether the bot can write to them, and since when their card was out."""

    facts: CardFacts
    person: str = ""
    unreachable: bool = False


@dataclass(frozen=True)
class Nudge:
    """One message to send: its step (a Step's value, or DIGEST), the requests it lists,
    oldest first, and the notices it settles."""

    step: str
    items: tuple[Due, ...]
    settles: tuple[Notice, ...]


def _group(notice: Notice) -> tuple[int, str] | None:
    """Whose message, of which step, a person's nudge shares with their others; None for
    any other notice and for a digest (one a day, a list already)."""
    if notice.kind is not NoticeKind.NUDGE or notice.user_id == EVERYONE:
        return None
    if notice.event == DIGEST:
        return None
    prefix = ESCALATED if notice.event.startswith(ESCALATED) else notice.event
    return notice.user_id, prefix


def together(claimed: Sequence[Notice]) -> tuple[dict[str, list[Notice]], set[str]]:
    """A claimed batch's nudges that make one message: the first of each person's step, with
    the others it carries, and the keys of those others (not to be delivered on their own)."""
    first: dict[tuple[int, str], Notice] = {}
    companions: dict[str, list[Notice]] = {}
    carried: set[str] = set()
    for notice in claimed:
        group = _group(notice)
        if group is None:
            continue
        if group in first:
            companions[first[group].key].append(notice)
            carried.add(notice.key)
        else:
            first[group] = notice
            companions[notice.key] = []
    return companions, carried


async def nudge_to_send(
    store: Store,
    claimed: Sequence[Notice],
    now: datetime,
    policy: ApprovalPolicy,
    lease_until: datetime,
) -> Nudge | None:
    """What one person's claimed NUDGE notices (one step's, or a digest) say now, with their
    other due ones of that step claimed beside them; None, and each cancelled, when none
    still waits for them."""
    notice = claimed[0]
    assert notice.lease_owner is not None and notice.user_id != EVERYONE
    async with store.begin() as tx:
        if notice.event == DIGEST:
            items = await _digest_items(tx, notice.user_id, now, policy)
            kept = [notice] if items else []
            if not items:
                await settle(tx, notice, NoticeStatus.CANCELLED, now)
        else:
            group = _group(notice)
            assert group is not None
            more = await tx.claim_notices_of(
                notice.user_id, NoticeKind.NUDGE, group[1], now, notice.lease_owner, lease_until
            )
            items, kept = [], []
            for each in [*claimed, *more]:
                due = await _still_due(tx, each, now, policy)
                if due is None:
                    await settle(tx, each, NoticeStatus.CANCELLED, now)
                else:
                    items.append(due)
                    kept.append(each)
    if not items:
        return None
    step = Step.ESCALATE.value if notice.event.startswith(ESCALATED) else notice.event
    ordered = tuple(sorted(items, key=lambda d: d.facts.job.created_at))
    return Nudge(step, ordered, tuple(kept))


async def _still_due(tx: Tx, notice: Notice, now: datetime, policy: ApprovalPolicy) -> Due | None:
    """The request of a reminder, warning or escalation copy, if it still waits for the person
    it is about, on the same draft version, before its deadline."""
    assert notice.job_id is not None
    job = await tx.job(notice.job_id)
    escalated = notice.event.startswith(ESCALATED)
    person = int(notice.event.removeprefix(ESCALATED)) if escalated else notice.user_id
    if job.decision_deadline is not None and now >= job.decision_deadline:
        return None
    facts = await card_facts(tx, job, notice.draft_version, policy, now)
    if facts is None:
        return None
    where = await standing(tx, job, now, policy.default_policy)
    if person not in where.cards_to:
        return None
    if not escalated:
        return Due(facts)
    user = await tx.telegram_user(person)
    name = called(user, person)
    key = held_card(job, person, where.cards_to[person], now).key
    card = next((n for n in await tx.notices_for(job.id) if n.key == key), None)
    refused = card is not None and card.status is NoticeStatus.FAILED
    unreachable = refused or user is None or not user.reachable
    return Due(facts, f"{name} (Telegram id {person})", unreachable)


async def _digest_items(tx: Tx, person: int, now: datetime, policy: ApprovalPolicy) -> list[Due]:
    """Every request waiting for `person` now."""
    items = []
    for job in await tx.jobs_in_states([State.AWAITING_APPROVAL]):
        if job.decision_deadline is not None and now >= job.decision_deadline:
            continue
        where = await standing(tx, job, now, policy.default_policy)
        if person in where.cards_to:
            facts = await card_facts(tx, job, job.draft_version or 0, policy, now)
            if facts is not None:
                items.append(Due(facts))
    return items


async def nudge_sent(store: Store, nudge: Nudge, message_id: int, now: datetime) -> None:
    """The message went out: every notice it settles is sent."""
    async with store.begin() as tx:
        for notice in nudge.settles:
            attempts = notice.attempts + 1
            await settle(
                tx, notice, NoticeStatus.SENT, now, message_id=message_id, attempts=attempts
            )


async def fan_out_escalation(
    store: Store, notice: Notice, now: datetime, configured: frozenset[int]
) -> int:
    """Turn an escalation owed to EVERYONE into one notice per admin (configured or holding the
    role) and member of the ladder's escalate_to group, unless the person no longer holds the
    request; how many it went to."""
    assert notice.user_id == EVERYONE and notice.job_id is not None
    _step, person, group = [*notice.event.split(":"), ""][:3]
    copy = replace(notice, event=f"{ESCALATED}{person}")
    async with store.begin() as tx:
        job = await tx.job(notice.job_id)
        if job.state is not State.AWAITING_APPROVAL or job.draft_version != notice.draft_version:
            await settle(tx, notice, NoticeStatus.CANCELLED, now)
            return 0
        told = set(configured) | set(await tx.holders(Role.ADMIN))
        if group:
            told |= (await tx.group_members({group})).get(group, frozenset())
        for whom in sorted(told):
            await tx.insert_notice(fanned_out(copy, whom, now))
        await settle(tx, notice, NoticeStatus.SENT, now)
        return len(told)
