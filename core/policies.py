"""Who may approve, how many must, and for how long an approval holds."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from core.errors import NotAnApprover, SelfApproval
from core.retries import RetryPolicy


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


@dataclass(frozen=True)
class ApprovalPolicy:
    """The approval rules in force."""

    ttl: timedelta = timedelta(days=1)
    dual_above_paisa: int = 500_000 * 100

    def required(self, total_paisa: int) -> int:
        """Distinct approvers needed for a total."""
        return 2 if total_paisa > self.dual_above_paisa else 1

    def basis(self, total_paisa: int) -> str:
        """The rule that applies to a total, in words for the audit trail."""
        limit = self.dual_above_paisa // 100
        if self.required(total_paisa) == 2:
            return f"dual approval: total above PKR {limit:,}"
        return f"single approval: total at or below PKR {limit:,}"


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


def evaluate(
    policy: ApprovalPolicy,
    total_paisa: int,
    decisions: Iterable[Decision],
    draft_version: int,
    draft_hash: str,
    now: datetime,
) -> Outcome:
    """One rejection ends it; otherwise enough distinct live approvals approve it."""
    live = counting(decisions, draft_version, draft_hash, now)
    if any(d.verdict is Verdict.REJECT for d in live):
        return Outcome.REJECTED
    approvers = {d.reviewer_id for d in live if d.verdict is Verdict.APPROVE}
    return Outcome.APPROVED if len(approvers) >= policy.required(total_paisa) else Outcome.PENDING


@dataclass(frozen=True)
class Rules:
    """The policies in force, handed in by the shell's configuration."""

    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
