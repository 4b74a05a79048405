"""Who may approve, how many must, and for how long an approval holds.

The approval policy (Policy) says which groups of approvers must approve a request, in which
stages, and how many of each, and what a price drift or an over-budget month adds. It is a
value: an admin writes it as a TOML file (core.policy_file checks it, line by line), and each
imported version is kept for ever; a request keeps the version it started with. With none
imported, the policy is the one the configuration implies (Policy.default): one group,
`approvers`, one approval, two above MANZOORI_DUAL_APPROVAL_ABOVE_PKR.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from decimal import Decimal
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from core.drafts import Draft, Flag
from core.errors import AlreadyDecided, NotAnApprover, NotYourTurn, SelfApproval
from core.flags import FlagCode
from core.ladder import Ladder
from core.retries import RetryPolicy
from core.terms import match_key


class Role(StrEnum):
    """What a registered user may do."""

    ADMIN = "admin"
    APPROVER = "approver"
    REQUESTER = "requester"


class Verdict(StrEnum):
    """A reviewer's decision."""

    APPROVE = "approve"
    REJECT = "reject"


class Outcome(StrEnum):
    """Where the decisions on the current draft leave the job."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


@dataclass(frozen=True)
class Decision:
    """One reviewer's decision, bound to one draft version and hash."""

    job_id: str
    reviewer_id: int
    reviewer_role: Role
    verdict: Verdict
    draft_version: int
    draft_hash: str
    at: datetime
    expires_at: datetime
    policy_basis: str
    reason: str | None = None
    # The stage of the request's route it was made in (Route.stages), and that route's
    # policy version ("" for the configured default) and rule.
    stage: int = 0
    policy_version: str = ""
    rule: str = ""
    # The approver away (core.delegations) this reviewer decided for, as their delegate: the
    # decision counts as theirs, in their groups. None: the reviewer decided as themselves.
    on_behalf_of: int | None = None

    @property
    def capacity(self) -> int:
        """Whose approval this is: the delegator's, when a delegate made it."""
        return self.reviewer_id if self.on_behalf_of is None else self.on_behalf_of


# The time zone of budgets' calendar months unless configured otherwise (MANZOORI_TIMEZONE).
PAKISTAN = ZoneInfo("Asia/Karachi")


@dataclass(frozen=True)
class ApprovalPolicy:
    """The approval rules in force."""

    ttl: timedelta = timedelta(days=1)
    dual_above_paisa: int = 500_000 * 100
    zone: tzinfo = PAKISTAN  # budgets' months are calendar months here (core.budgets)

    @property
    def default_policy(self) -> Policy:
        """The approval policy this configuration implies while none is imported."""
        return Policy.default(self.dual_above_paisa)


def check_reviewer(roles: Iterable[Role], reviewer_id: int, requester_id: int) -> None:
    """Raise unless the reviewer holds the approver role and did not request the job."""
    if Role.APPROVER not in set(roles):
        raise NotAnApprover(f"user {reviewer_id} does not hold the approver role")
    if reviewer_id == requester_id:
        raise SelfApproval("nobody approves their own request")


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
class Rules:
    """The policies in force, handed in by the shell's configuration."""

    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    retry: RetryPolicy = field(default_factory=RetryPolicy)


# The group of every approver, always: the default policy's one group, and any policy's that
# names it. Other groups have members one by one (store: user_groups).
DEFAULT_GROUP = "approvers"
# What a group's name may be: it is typed in commands (/invite approver managers), so one
# word, lower case.
GROUP_NAME = r"[a-z][a-z0-9_-]{0,31}"
DEFAULT_GROUP_TITLE = "Approvers"
DEFAULT_VERSION = ""  # the version of the policy the configuration implies: none imported


@dataclass(frozen=True)
class Stage:
    """`approvals` different people of `group` must approve before the next stage starts."""

    group: str
    approvals: int = 1


@dataclass(frozen=True)
class Condition:
    """What must hold for a rule to apply; an empty condition holds for every request."""

    total_above_paisa: int | None = None
    total_at_most_paisa: int | None = None
    suppliers: frozenset[str] = frozenset()  # match_key()'d supplier ids
    categories: frozenset[str] = frozenset()  # category names, lower case

    @property
    def always(self) -> bool:
        """Whether it holds for every request."""
        return self == Condition()

    def holds(self, total_paisa: int, supplier_id: str, categories: Iterable[str] = ()) -> bool:
        """For a PO of this total, supplier and line categories (any one of them may match)."""
        if self.total_above_paisa is not None and not total_paisa > self.total_above_paisa:
            return False
        if self.total_at_most_paisa is not None and not total_paisa <= self.total_at_most_paisa:
            return False
        if self.suppliers and match_key(supplier_id) not in self.suppliers:
            return False
        return not self.categories or not self.categories.isdisjoint(c.lower() for c in categories)


@dataclass(frozen=True)
class Rule:
    """A named way through: the stages a request meeting `when` must pass, in order."""

    name: str
    stages: tuple[Stage, ...]
    when: Condition = field(default_factory=Condition)


@dataclass(frozen=True)
class Drift:
    """A line priced more than `percent` above the last sent PO for the same SKU and supplier
    adds `add_stage` after the rule's stages."""

    percent: Decimal
    add_stage: Stage


class BudgetMode(StrEnum):
    """Soft: going over a category's month adds a stage and needs a reason. Hard: a sheet that
    would go over is refused at upload."""

    SOFT = "soft"
    HARD = "hard"


@dataclass(frozen=True)
class Budgets:
    """Monthly budgets per category (Pakistan-time calendar months), in paisa."""

    mode: BudgetMode
    monthly_paisa: Mapping[str, int]
    over_budget_stage: Stage | None = None  # soft mode only


@dataclass(frozen=True)
class Policy:
    """One version of the approval policy."""

    groups: Mapping[str, str]  # name -> what cards and /users call it, in file order
    rules: tuple[Rule, ...]  # the first whose condition holds applies; the last always does
    drift: Drift | None = None
    budgets: Budgets | None = None
    version: str = DEFAULT_VERSION
    reminders: Ladder | None = None  # None: the configured ladder (core.nudges)

    @classmethod
    def default(cls, dual_above_paisa: int) -> Policy:
        """The policy the configuration implies when none is imported."""
        approvers = {DEFAULT_GROUP: DEFAULT_GROUP_TITLE}
        dual = Rule("dual", (Stage(DEFAULT_GROUP, 2),), Condition(dual_above_paisa))
        single = Rule("single", (Stage(DEFAULT_GROUP, 1),))
        return cls(approvers, (dual, single))

    def rule_for(self, total_paisa: int, supplier_id: str, categories: Iterable[str] = ()) -> Rule:
        """The rule that applies to a PO: the first whose condition holds."""
        wanted = tuple(categories)
        for rule in self.rules:
            if rule.when.holds(total_paisa, supplier_id, wanted):
                return rule
        raise AssertionError("a policy's last rule holds for every request")  # policy_file

    def title(self, group: str) -> str:
        """What cards and /users call a group."""
        return self.groups.get(group, group)


def content_hash(policy: Policy) -> str:
    """sha256 of the policy's content in canonical form: the identity of a version, whatever
    the file's layout, comments or key order."""
    data = json.dumps(_plain(policy), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def _plain(policy: Policy) -> dict[str, Any]:
    def stage(s: Stage | None) -> list[Any] | None:
        return None if s is None else [s.group, s.approvals]

    def when(c: Condition) -> list[Any]:
        return [
            c.total_above_paisa,
            c.total_at_most_paisa,
            sorted(c.suppliers),
            sorted(c.categories),
        ]

    budgets = policy.budgets
    ladder = {} if policy.reminders is None else {"reminders": policy.reminders.canonical()}
    return {
        **ladder,  # only when set: the hash of a policy without one is what it always was
        "groups": [[name, title] for name, title in policy.groups.items()],
        "rules": [[r.name, when(r.when), [stage(s) for s in r.stages]] for r in policy.rules],
        "drift": None
        if policy.drift is None
        else [str(policy.drift.percent), stage(policy.drift.add_stage)],
        "budgets": None
        if budgets is None
        else [budgets.mode.value, dict(budgets.monthly_paisa), stage(budgets.over_budget_stage)],
    }


class StageReason(StrEnum):
    """Why a stage is on a request's route."""

    RULE = "rule"  # one of the rule's own stages
    DRIFT = "drift"  # a line priced above the drift tolerance (Policy.drift)
    BUDGET = "budget"  # the PO takes a category over its month (Policy.budgets, soft mode)


@dataclass(frozen=True)
class Route:
    """The way one draft of a request must go: the policy version and rule it follows, and
    its stages in order (the rule's, then those a drift or an over-budget month added). The
    request keeps it until its next draft, which is routed afresh on the policy then in
    force."""

    policy_version: str
    rule: str
    stages: tuple[Stage, ...]
    reasons: tuple[StageReason, ...]  # one per stage

    def plain(self) -> dict[str, Any]:
        """As JSON for the job's row."""
        return {
            "policy_version": self.policy_version,
            "rule": self.rule,
            "stages": [
                [s.group, s.approvals, r.value]
                for s, r in zip(self.stages, self.reasons, strict=True)
            ],
        }

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> Route:
        """Back from plain()."""
        stages = [(Stage(g, int(n)), StageReason(r)) for g, n, r in data["stages"]]
        return cls(
            str(data["policy_version"]),
            str(data["rule"]),
            tuple(s for s, _ in stages),
            tuple(r for _, r in stages),
        )

    def basis(self, index: int) -> str:
        """What a decision in stage `index` satisfies, in words for the audit trail."""
        stage = self.stages[index]
        version = self.policy_version or "default"
        why = "" if self.reasons[index] is StageReason.RULE else f", {self.reasons[index]}"
        return (
            f"policy {version}, rule {self.rule}, stage {index + 1} of {len(self.stages)}: "
            f"{stage.approvals} of {stage.group}{why}"
        )


def drifts(flags: Iterable[Flag], drift: Drift | None) -> tuple[Flag, ...]:
    """The PRICE_CHANGED flags of a draft (the last sent PO's price, the price now) whose line
    is priced more than the drift tolerance above the last sent PO's."""
    if drift is None:
        return ()
    return tuple(
        flag
        for flag in flags
        if flag.code == FlagCode.PRICE_CHANGED
        and (flag.amounts[1] - flag.amounts[0]) * 100 > drift.percent * flag.amounts[0]
    )


def drifted(flags: Iterable[Flag], drift: Drift | None) -> bool:
    """Whether a line of a draft is priced more than the drift tolerance above the last sent
    PO's (drifts)."""
    return bool(drifts(flags, drift))


def route_draft(policy: Policy, draft: Draft, *, over_budget: bool = False) -> Route:
    """The route a draft takes under `policy`: route_for its total, supplier and lines'
    categories, with the drift stage if a line drifted and the budget stage if it goes over
    a category's month (core.budgets.over_budget)."""
    return route_for(
        policy,
        draft.total_paisa,
        draft.supplier_id,
        {line.category for line in draft.lines if line.category},
        drifted=drifted(draft.flags, policy.drift),
        over_budget=over_budget,
    )


def route_for(
    policy: Policy,
    total_paisa: int,
    supplier_id: str,
    categories: Iterable[str] = (),
    *,
    drifted: bool = False,
    over_budget: bool = False,
) -> Route:
    """The route a draft of this total, supplier and line categories takes: its rule's
    stages, then the drift stage if a line drifted, then the budget stage if it goes over a
    category's month (soft mode; hard mode refuses such a sheet before it is drafted)."""
    rule = policy.rule_for(total_paisa, supplier_id, categories)
    stages = list(rule.stages)
    reasons = [StageReason.RULE] * len(stages)
    if drifted and policy.drift is not None:
        stages.append(policy.drift.add_stage)
        reasons.append(StageReason.DRIFT)
    if over_budget and policy.budgets is not None and policy.budgets.over_budget_stage:
        stages.append(policy.budgets.over_budget_stage)
        reasons.append(StageReason.BUDGET)
    return Route(policy.version, rule.name, tuple(stages), tuple(reasons))


@dataclass(frozen=True)
class People:
    """Who is one person within a request: a delegator and their delegate (core.delegations),
    linked by a delegation active while the request waited or by a decision one made for the
    other, as themselves or for each other. `links` are such pairs; a chain of them is one
    person too."""

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
