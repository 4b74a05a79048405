"""Who may approve, how many must, and for how long an approval holds.

The approval policy (Policy) says which groups of approvers must approve a request, in which stages,
and how many of each, and what a price drift or an over-budget month adds. It is a value: an admin
writes it as a TOML file (core.approval.policy_file checks it, line by line), and each imported
version is kept for ever; a request keeps the version it started with. With none imported, the
policy is the one the configuration implies (Policy.default): one group, `approvers`, one approval,
two above MANZOORI_DUAL_APPROVAL_ABOVE_PKR.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from decimal import Decimal
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from core.approval.ladder import Chase, Ladder
from core.drafting.terms import match_key
from core.errors import NotAnApprover, SelfApproval
from core.jobs.retries import RetryPolicy


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
    # The approver away (core.approval.delegations) this reviewer decided for, as their delegate:
    # the decision counts as theirs, in their groups. None: the reviewer decided as themselves.
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
    zone: tzinfo = PAKISTAN  # budgets' months are calendar months here (core.approval.budgets)

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
    reminders: Ladder | None = None  # None: the configured ladder (core.messaging.nudges)
    suppliers: Chase | None = None  # None: DEFAULT_CHASE (core.suppliers.chasing)

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
    chase = {} if policy.suppliers is None else {"suppliers": policy.suppliers.canonical()}
    return {
        **ladder,  # only when set: the hash of a policy without one is what it always was
        **chase,
        "groups": [[name, title] for name, title in policy.groups.items()],
        "rules": [[r.name, when(r.when), [stage(s) for s in r.stages]] for r in policy.rules],
        "drift": None
        if policy.drift is None
        else [str(policy.drift.percent), stage(policy.drift.add_stage)],
        "budgets": None
        if budgets is None
        else [budgets.mode.value, dict(budgets.monthly_paisa), stage(budgets.over_budget_stage)],
    }
