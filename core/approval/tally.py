"""Counting a draft's decisions on its route: which approvals still count (counting), who
is one person within a request (People: a delegator and their delegate), how far the route
has got (Tally), and in which stage a reviewer's decision is made (stage_for)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from core.approval.policies import Decision, Outcome, Role, Verdict
from core.approval.routes import Route
from core.errors import AlreadyDecided, NotYourTurn, SelfApproval


def counting(
    decisions: Iterable[Decision], draft_version: int, draft_hash: str, now: datetime
) -> list[Decision]:
    """Decisions that count now: on this exact version and hash, by an approver, not expired."""
    return [
        d
        for d in decisions
        if (d.draft_version, d.draft_hash) == (draft_version, draft_hash)
        and d.reviewer_role is Role.APPROVER
        and now < d.expires_at
    ]


@dataclass(frozen=True)
class People:
    """Who is one person within a request: a delegator and their delegate
    (core.approval.delegations), linked by a delegation active while the request waited or by a
    decision one made for the other, as themselves or for each other. `links` are such pairs; a
    chain of them is one person too."""

    links: frozenset[tuple[int, int]] = frozenset()

    def linked(self, pairs: Iterable[tuple[int, int]]) -> People:
        """These people, with more pairs linked."""
        more = frozenset(pairs) - self.links
        return self if not more else People(self.links | more)

    @functools.cached_property
    def _root(self) -> dict[int, int]:
        parent: dict[int, int] = {}

        def find(user: int) -> int:
            while parent.setdefault(user, user) != user:
                user = parent[user]
            return user

        for a, b in sorted(self.links):
            first, second = sorted((find(a), find(b)))
            parent[second] = first
        return {user: find(user) for user in parent}

    def of(self, user: int) -> int:
        """The one id that stands for this user and everyone linked to them."""
        return self._root.get(user, user)


@dataclass(frozen=True)
class Tally:
    """Where a draft's decisions leave its route: the outcome, the stage waiting for approvals
    (len(route.stages) once approved), and whom each stage reached counted (as People.of)."""

    outcome: Outcome
    stage: int
    counted: tuple[frozenset[int], ...]
    people: People = field(default_factory=People)

    def has_counted(self, reviewer_id: int) -> bool:
        """Whether this person's approval already counts in some stage: they count once, with
        whoever is one person with them."""
        me = self.people.of(reviewer_id)
        return any(me in people for people in self.counted)


def tally(
    route: Route,
    decisions: Iterable[Decision],
    draft_version: int,
    draft_hash: str,
    now: datetime,
    requester_id: int,
    members: Mapping[str, frozenset[int]],
    people: People | None = None,
) -> Tally:
    """Count a draft's live decisions stage by stage: one rejection ends it; a stage is
    complete when `approvals` different people approved in it, each in the capacity of a
    member of its group (their own, or the delegator's they decided for); one person counts
    once per request whatever groups they are in, with whoever is one person with them
    (`people`), and the requester's person never. `members` is each group's membership now:
    an approval for someone who has left the group counts no more."""
    live = counting(decisions, draft_version, draft_hash, now)
    links = ((d.reviewer_id, d.on_behalf_of) for d in live if d.on_behalf_of is not None)
    people = (people or People()).linked(links)
    rejections = [d.stage for d in live if d.verdict is Verdict.REJECT]
    if rejections:
        return Tally(Outcome.REJECTED, min(rejections), (), people)
    requester = people.of(requester_id)
    used: set[int] = set()
    counted: list[frozenset[int]] = []
    for index, stage in enumerate(route.stages):
        group = members.get(stage.group, frozenset())
        found: set[int] = set()
        for d in sorted(live, key=lambda d: d.at):
            person = people.of(d.reviewer_id)
            if (
                d.stage == index
                and d.verdict is Verdict.APPROVE
                and d.capacity in group
                and person != requester
                and person not in used
            ):
                found.add(person)
        used |= found
        counted.append(frozenset(found))
        if len(found) < stage.approvals:
            return Tally(Outcome.PENDING, index, tuple(counted), people)
    return Tally(Outcome.APPROVED, len(route.stages), tuple(counted), people)


def stage_for(
    route: Route, counted: Tally, reviewer_id: int, requester_id: int,
    members: Mapping[str, frozenset[int]], acting: Mapping[int, int],
) -> tuple[int, int | None]:  # fmt: skip
    """The stage a decision by this reviewer is made in, the one waiting now, and whom they
    decide for: None as themselves (a member of its group), else the approver away whose
    delegate they are (`acting`: delegator -> delegate now) and who is a member. Raise
    SelfApproval for the requester or someone one person with them, AlreadyDecided if their
    person counts already, NotYourTurn if neither they nor one they act for is in the
    waiting stage's group."""
    people = counted.people
    if people.of(reviewer_id) == people.of(requester_id):
        raise SelfApproval("nobody approves their own request, alone or through a delegate")
    if counted.outcome is not Outcome.PENDING:
        raise AlreadyDecided(f"the request is {counted.outcome.value}")
    if counted.has_counted(reviewer_id):
        raise AlreadyDecided("your approval already counts for this request")
    group = route.stages[counted.stage].group
    in_group = members.get(group, frozenset())
    if reviewer_id in in_group:
        return counted.stage, None
    for delegator in sorted(d for d, delegate in acting.items() if delegate == reviewer_id):
        if delegator in in_group:
            return counted.stage, delegator
    raise NotYourTurn(counted.stage + 1, group)
