"""Where a request stands on its route, and who is asked: the policy in force, the route of a
job's draft, the tally with the members and delegations now (Standing), the approvers'
cards, and the admins' alerts when nobody can be asked or a stage can no longer be completed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.approval.delegations import Delegation, acting_for
from core.approval.policies import DEFAULT_GROUP, Decision, Outcome, Policy, Role
from core.approval.routes import Route, route_for
from core.approval.shortfalls import Shortfall, shortfalls
from core.approval.tally import People, Tally, tally
from core.jobs import notices
from core.jobs.jobs import Job
from core.jobs.notices import Notice
from core.jobs.states import State
from core.ports import ReadTx, Tx


async def policy_now(tx: ReadTx, default: Policy) -> Policy:
    """The approval policy new requests and re-drafts follow: the imported one in force, or
    `default` (the configuration's) while none is."""
    return await tx.current_policy() or default


def route_of(job: Job, default: Policy) -> Route:
    """The route of the job's current draft: as recorded when approval was asked for, or, for
    a job drafted before routing, the one `default` (the configuration's) gives it."""
    if job.route is not None:
        return Route.from_plain(job.route)
    assert job.total_paisa is not None and job.supplier_id is not None
    return route_for(default, job.total_paisa, job.supplier_id)


@dataclass(frozen=True)
class Standing:
    """Where the current draft of a job stands on its route: who counted in which stage, the
    members of every group the route names, and who acts for whom now (delegator ->
    delegate, core.approval.delegations) and the delegations the request has seen."""

    route: Route
    tally: Tally
    decisions: list[Decision]  # standing decisions on the job, every version
    members: dict[str, frozenset[int]]
    requester_id: int
    acting: dict[int, int]
    delegations: list[Delegation]  # those active at some time while the request waited

    @property
    def waiting_group(self) -> str | None:
        """The group of the stage waiting for approvals; None once the draft is decided."""
        if self.tally.outcome is not Outcome.PENDING:
            return None
        return self.route.stages[self.tally.stage].group

    @property
    def waiting_for(self) -> frozenset[int]:
        """Whose approval the request waits for now: the waiting stage's group, less those
        (one person with someone who) counted already or requested it."""
        if self.waiting_group is None:
            return frozenset()
        group = self.members.get(self.waiting_group, frozenset())
        requester = self.tally.people.of(self.requester_id)
        return frozenset(
            p
            for p in group
            if not self.tally.has_counted(p) and self.tally.people.of(p) != requester
        )

    @property
    def cards_to(self) -> dict[int, int | None]:
        """Who holds a card now, and for whom: each person waited for (None: for themselves),
        or, while they are away, their delegate (for them)."""
        held: dict[int, int | None] = {}
        for person in sorted(self.waiting_for):
            delegate = self.acting.get(person)
            if delegate is None:
                held[person] = None
            elif delegate not in held:
                held[delegate] = person
        return held

    @property
    def shortfalls(self) -> tuple[Shortfall, ...]:
        """The stages still to complete that can no longer be, as things stand: each one's
        approvals still needed exceed the distinct people left who may give them."""
        return shortfalls(self.route, self.tally, self.members, self.requester_id)

    @property
    def may_approve(self) -> frozenset[int]:
        """Whose tap would count now: those waited for, away or not, and their delegates."""
        waiting = self.waiting_for
        return waiting | {self.acting[p] for p in waiting if p in self.acting}


async def standing(tx: ReadTx, job: Job, now: datetime, default: Policy) -> Standing:
    """Tally the job's current draft on its route, with standing decisions, members and
    delegations now."""
    assert job.draft_version is not None and job.draft_hash is not None
    route = route_of(job, default)
    decisions = await standing_decisions(tx, job.id)
    members = await tx.group_members({s.group for s in route.stages})
    # Who were one person while it waited: from its request to now, or, once decided, to the
    # last decision on this draft (a hand-over after approval does not undo it at send time).
    decided = [d.at for d in decisions if d.draft_version == job.draft_version]
    waiting = job.state is State.AWAITING_APPROVAL or not decided
    until = now if waiting else max(decided)
    seen = [
        d
        for d in await tx.delegations_since(job.created_at)
        if d.overlaps(job.created_at, until, closed=waiting)
    ]
    people = People(frozenset((d.delegator, d.delegate) for d in seen))
    counted = tally(
        route, decisions, job.draft_version, job.draft_hash, now, job.requester_id, members, people
    )
    return Standing(
        route, counted, decisions, members, job.requester_id, acting_for(seen, now), seen
    )


async def ask_approvers(tx: Tx, job: Job, now: datetime, default: Policy) -> str | None:
    """Owe an approval card for the job's current draft to everyone the waiting stage asks for
    (its group, or the delegate of a member away; nobody approves their own request, so the
    requester is never asked). If nobody can be asked, the admins are alerted and the waiting
    stage's group is returned, for the requester to be told whom it waits for; else None, and
    the admins are alerted of each stage that can no longer be completed (alert_if_short)."""
    where = await standing(tx, job, now, default)
    owed = [held_card(job, holder, whom, now) for holder, whom in where.cards_to.items()]
    await tx.insert_notice(*owed)
    group = where.waiting_group
    if owed or group is None:
        await alert_if_short(tx, job, where, now)
        return None
    # Nobody holds its card until an admin puts someone in the group: they are told.
    event = notices.NOBODY_TO_ASK  # no approver at all, or nobody in the group:
    event += "" if group == DEFAULT_GROUP else f":{group}"
    await tx.insert_notice(notices.alert_for(job, now, event))
    return group


async def alert_if_short(tx: Tx, job: Job, where: Standing, now: datetime) -> None:
    """Owe the admins an alert for each stage of the job's route that can no longer be
    completed as things stand (Standing.shortfalls): once per draft version and stage, at the
    first change that makes it so (routing, a decision, a group left, a role revoked, a
    delegation)."""
    alerts = [notices.short_stage_alert(job, short.stage, now) for short in where.shortfalls]
    await tx.insert_notice(*alerts)


async def alert_if_any_short(tx: Tx, now: datetime, default: Policy) -> None:
    """alert_if_short for every request waiting for approval: after a change of people (a
    member left a group, an approver lost the role) that may leave a stage short."""
    for job in await tx.jobs_in_states([State.AWAITING_APPROVAL]):
        await alert_if_short(tx, job, await standing(tx, job, now, default), now)


def held_card(job: Job, holder: int, whom: int | None, now: datetime) -> Notice:
    """The card `holder` is owed: their own, or one they hold for `whom`, who is away (a card
    of its own, so that it reaches them even when they hold one of the same draft already)."""
    return notices.card_for(job, holder, now, "" if whom is None else f"for{whom}")


async def ask_new_approver(tx: Tx, approver: int, now: datetime, default: Policy) -> list[Notice]:
    """Owe someone who just became an approver (or joined a group) the card of every request
    still waiting for a stage of their group: not their own, and not a draft version they
    decided before."""
    owed = []
    for job in await tx.jobs_in_states([State.AWAITING_APPROVAL]):
        if job.requester_id == approver:
            continue
        decided = {(d.reviewer_id, d.draft_version) for d in await tx.decisions(job.id)}
        if (approver, job.draft_version) in decided:
            continue  # a returning approver's earlier decision on this version stands
        if approver not in (await standing(tx, job, now, default)).cards_to:
            continue
        card = notices.card_for(job, approver, now)
        await tx.insert_notice(card)
        owed.append(card)
    return owed


async def standing_decisions(tx: ReadTx, job_id: str) -> list[Decision]:
    """A job's decisions by people who still hold the approver role: the ones that count."""
    decisions = await tx.decisions(job_id)
    roles = await tx.roles_of({d.reviewer_id for d in decisions})
    return [d for d in decisions if Role.APPROVER in roles[d.reviewer_id]]
