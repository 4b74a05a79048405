"""Stages that can no longer be completed: a request must never wait, silently, for approvals
that nobody left may give.

A stage needs `approvals` different people of its group. Who may still give one is a member
of the group (holding the approver role now), not one person with the requester (nobody
approves their own request, alone or through a delegate), and not one person with someone whose
approval counts already in this request (a person counts once). Two members one person with
each other (a delegator and their delegate) count once. When the approvals a stage still needs
exceed the distinct people left who may give them, the request cannot pass as things stand,
and the admins are told (core.approval.standing.alert_if_short): a group grew smaller, a
member lost the role, a delegation joined two members, or the requester is one of too few.

A policy is checked the same way against the groups as they are when it is checked or put in
force (thin_stages): a stage asking for more approvals than its group has members is a
warning to the admin before any request meets it.

Each stage is judged on its own, as the policy file states it ("2 of owners"): a person who
is in the groups of two stages and could be needed in both shows up once their approval has
counted in the first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from core.approval.policies import Outcome, Policy, Stage
from core.approval.routes import Route, StageReason
from core.approval.tally import Tally


@dataclass(frozen=True)
class Shortfall:
    """A stage of a request's route that cannot be completed as things stand: it still needs
    `needed` approvals and only `eligible` distinct people may still give one. Why: of the
    group's `members`, the requester is one (`requester`: one person with a member), `counted`
    count already in another stage, and `joined` are one person with another member."""

    stage: int  # its index in Route.stages
    group: str
    needed: int
    eligible: int
    members: int
    requester: bool
    counted: int
    joined: int


def shortfalls(
    route: Route, counted: Tally, members: Mapping[str, frozenset[int]], requester_id: int
) -> tuple[Shortfall, ...]:
    """The stages still to complete (the waiting one and those after it), in order, whose
    approvals still needed exceed the distinct people who may still give them; none if every
    one can still be completed, or the request is decided."""
    if counted.outcome is not Outcome.PENDING:
        return ()
    found = []
    for index in range(counted.stage, len(route.stages)):
        stage = route.stages[index]
        here = counted.counted[index] if index < len(counted.counted) else frozenset()
        short = _stage_shortfall(index, stage, here, counted, members, requester_id)
        if short is not None:
            found.append(short)
    return tuple(found)


def _stage_shortfall(
    index: int,
    stage: Stage,
    here: frozenset[int],
    counted: Tally,
    members: Mapping[str, frozenset[int]],
    requester_id: int,
) -> Shortfall | None:
    """Whether this stage, with `here` (the people counted in it), can still be completed."""
    people = counted.people
    group = members.get(stage.group, frozenset())
    requester = people.of(requester_id)
    needed = stage.approvals - len(here)
    persons = {people.of(m) for m in group}
    is_requester = requester in persons
    elsewhere = {p for p in persons - {requester} - here if counted.has_counted(p)}
    eligible = persons - {requester} - here - elsewhere
    if needed <= len(eligible):
        return None
    left = {m for m in group if people.of(m) in eligible}
    return Shortfall(
        stage=index,
        group=stage.group,
        needed=needed,
        eligible=len(eligible),
        members=len(group),
        requester=is_requester,
        counted=len(elsewhere),
        joined=len(left) - len(eligible),
    )


@dataclass(frozen=True)
class ThinStage:
    """A stage of a policy asking for more approvals than its group has members now: every
    request routed through it waits until the group grows. `rule`: the rule's name, for one of
    its own stages; "" for the drift or over-budget stage (`reason`)."""

    rule: str
    reason: StageReason
    group: str
    approvals: int
    members: int


def thin_stages(policy: Policy, members: Mapping[str, frozenset[int]]) -> tuple[ThinStage, ...]:
    """The stages of `policy` (each rule's, then the drift and the over-budget stage) that
    ask for more approvals than their group has members (`members`: each group's approvers);
    a group with nobody in it is core.approval.approval_policy.unreachable_groups' to name."""
    stages = [(r.name, StageReason.RULE, s) for r in policy.rules for s in r.stages]
    if policy.drift is not None:
        stages.append(("", StageReason.DRIFT, policy.drift.add_stage))
    if policy.budgets is not None and policy.budgets.over_budget_stage is not None:
        stages.append(("", StageReason.BUDGET, policy.budgets.over_budget_stage))
    return tuple(
        ThinStage(rule, reason, stage.group, stage.approvals, len(members.get(stage.group, ())))
        for rule, reason, stage in stages
        if 0 < len(members.get(stage.group, ())) < stage.approvals
    )
