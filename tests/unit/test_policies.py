"""Approval policy: how many approvers, who may approve, and what still counts."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from core.approval.policies import (
    DEFAULT_GROUP,
    ApprovalPolicy,
    Decision,
    Outcome,
    Role,
    Verdict,
    check_reviewer,
)
from core.approval.routes import route_for
from core.approval.tally import tally
from core.errors import NotAnApprover, SelfApproval

POLICY = ApprovalPolicy()  # defaults: dual approval above PKR 500,000, one-day validity
THRESHOLD = 500_000 * 100  # PKR 500,000 in paisa, written out independently of the default
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CURRENT = "a" * 64  # the hash of the draft under review
OLDER = "b" * 64  # the hash of a superseded draft version
SMALL = 10_000 * 100  # PKR 10,000: one approver
BIG = 750_000 * 100  # PKR 750,000: two approvers
REQUESTER = 1


def evaluate(
    policy: ApprovalPolicy,
    total: int,
    decisions: list[Decision],
    version: int,
    draft_hash: str,
    now: datetime,
) -> Outcome:
    """The default policy's tally, every reviewer an approver: what decide() counts."""
    route = route_for(policy.default_policy, total, "SUP-1")
    members = {DEFAULT_GROUP: frozenset(d.reviewer_id for d in decisions)}
    return tally(route, decisions, version, draft_hash, now, REQUESTER, members).outcome


def _decision(
    reviewer: int,
    verdict: Verdict = Verdict.APPROVE,
    *,
    on: str = CURRENT,
    expires_at: datetime = NOW + timedelta(hours=1),
    role: Role = Role.APPROVER,
) -> Decision:
    return Decision(
        job_id="job-1",
        reviewer_id=reviewer,
        reviewer_role=role,
        verdict=verdict,
        draft_version=2 if on == CURRENT else 1,
        draft_hash=on,
        at=NOW - timedelta(minutes=5),
        expires_at=expires_at,
        policy_basis="test",
    )


def required(policy: ApprovalPolicy, total: int) -> int:
    """Approvals the default policy's one stage needs for a total."""
    (stage,) = route_for(policy.default_policy, total, "SUP-1").stages
    return stage.approvals


@pytest.mark.parametrize(
    ("total", "needed"),
    [
        pytest.param(0, 1, id="zero"),  # a free order still needs one approver
        pytest.param(1, 1, id="one_paisa"),  # the smallest priced order
        pytest.param(THRESHOLD - 1, 1, id="threshold_minus_1"),  # just under the line
        pytest.param(THRESHOLD, 1, id="at_threshold"),  # "above" is strict: equal is single
        pytest.param(THRESHOLD + 1, 2, id="threshold_plus_1"),  # one paisa over: dual
        pytest.param(10 * THRESHOLD, 2, id="far_above"),  # large orders stay dual
    ],
)
def test_required_approvers_around_threshold(total: int, needed: int) -> None:
    """One approver up to and including the threshold, two above it."""
    assert required(POLICY, total) == needed


def test_required_follows_a_configured_threshold() -> None:
    """The threshold is the configuration's, not a constant baked into the default policy."""
    policy = ApprovalPolicy(dual_above_paisa=100)
    assert (required(policy, 100), required(policy, 101)) == (1, 2)


@pytest.mark.parametrize(
    ("total", "basis"),
    [
        pytest.param(
            THRESHOLD, "policy default, rule single, stage 1 of 1: 1 of approvers", id="at"
        ),
        pytest.param(
            THRESHOLD + 1, "policy default, rule dual, stage 1 of 1: 2 of approvers", id="above"
        ),
    ],
)
def test_basis_names_the_rule_for_the_audit_trail(total: int, basis: str) -> None:
    """The audit trail says in words which rule and stage applied."""
    assert route_for(POLICY.default_policy, total, "SUP-1").basis(0) == basis


@pytest.mark.parametrize(
    "roles",
    [
        pytest.param(set(), id="no_roles"),  # an unregistered user
        pytest.param({Role.ADMIN}, id="admin_only"),  # admins manage, they do not approve
        pytest.param({Role.REQUESTER}, id="requester_only"),  # asking is not approving
        pytest.param({Role.ADMIN, Role.REQUESTER}, id="admin_and_requester"),  # neither adds up
    ],
)
def test_reviewer_without_approver_role_is_refused(roles: set[Role]) -> None:
    """Only the approver role lets a user decide."""
    with pytest.raises(NotAnApprover, match="user 7 does not hold the approver role"):
        check_reviewer(roles, 7, REQUESTER)


def test_requester_cannot_approve_own_request() -> None:
    """An approver who requested the job may not decide it."""
    with pytest.raises(SelfApproval):
        check_reviewer({Role.APPROVER, Role.REQUESTER}, REQUESTER, REQUESTER)


@pytest.mark.parametrize(
    "roles",
    [
        pytest.param({Role.APPROVER}, id="approver"),
        pytest.param({Role.APPROVER, Role.ADMIN}, id="approver_admin"),
        pytest.param(iter([Role.APPROVER]), id="one_shot_iterable"),  # roles may be a generator
    ],
)
def test_approver_other_than_requester_passes(roles: object) -> None:
    """An approver deciding someone else's job is accepted (no exception)."""
    check_reviewer(roles, 7, REQUESTER)  # type: ignore[arg-type]


def test_one_current_approval_approves_small_total() -> None:
    """A single live approval on the current hash is enough at or below the threshold."""
    assert evaluate(POLICY, SMALL, [_decision(7)], 2, CURRENT, NOW) is Outcome.APPROVED
    assert evaluate(POLICY, THRESHOLD, [_decision(7)], 2, CURRENT, NOW) is Outcome.APPROVED


def test_no_decisions_is_pending() -> None:
    """Nothing decided yet leaves the job pending."""
    assert evaluate(POLICY, SMALL, [], 2, CURRENT, NOW) is Outcome.PENDING


def test_approval_of_older_hash_counts_for_nothing() -> None:
    """An approval of a superseded draft does not approve the current one."""
    assert evaluate(POLICY, SMALL, [_decision(7, on=OLDER)], 2, CURRENT, NOW) is Outcome.PENDING


def test_rejection_of_older_hash_counts_for_nothing() -> None:
    """A rejection of a superseded draft does not reject the revised one."""
    decisions = [_decision(8, Verdict.REJECT, on=OLDER), _decision(7)]
    assert evaluate(POLICY, SMALL, decisions, 2, CURRENT, NOW) is Outcome.APPROVED


@pytest.mark.parametrize(
    ("expires_at", "outcome"),
    [
        pytest.param(NOW - timedelta(seconds=1), Outcome.PENDING, id="expired_before"),
        pytest.param(NOW, Outcome.PENDING, id="expires_exactly_now"),  # now == expiry: gone
        pytest.param(NOW + timedelta(microseconds=1), Outcome.APPROVED, id="still_live"),
    ],
)
def test_expired_approval_does_not_count(expires_at: datetime, outcome: Outcome) -> None:
    """An approval counts strictly before its expiry, not at it."""
    decisions = [_decision(7, expires_at=expires_at)]
    assert evaluate(POLICY, SMALL, decisions, 2, CURRENT, NOW) is outcome


def test_same_reviewer_twice_counts_once_for_dual() -> None:
    """Dual approval needs two people, not two clicks."""
    decisions = [_decision(7), _decision(7)]
    assert evaluate(POLICY, BIG, decisions, 2, CURRENT, NOW) is Outcome.PENDING


def test_one_approver_is_not_enough_above_threshold() -> None:
    """One paisa over the threshold, one approval leaves the job pending."""
    assert evaluate(POLICY, THRESHOLD + 1, [_decision(7)], 2, CURRENT, NOW) is Outcome.PENDING


def test_two_distinct_approvers_approve_big_total() -> None:
    """Two different live approvers on the current hash approve a big order."""
    decisions = [_decision(7), _decision(8)]
    assert evaluate(POLICY, BIG, decisions, 2, CURRENT, NOW) is Outcome.APPROVED


def test_second_approval_on_older_hash_does_not_complete_dual() -> None:
    """Dual approval needs both approvals on the same, current draft."""
    decisions = [_decision(7), _decision(8, on=OLDER)]
    assert evaluate(POLICY, BIG, decisions, 2, CURRENT, NOW) is Outcome.PENDING


def test_one_rejection_rejects_even_with_approvals() -> None:
    """One live rejection ends it, whatever approvals exist."""
    decisions = [_decision(7), _decision(8), _decision(9, Verdict.REJECT)]
    assert evaluate(POLICY, BIG, decisions, 2, CURRENT, NOW) is Outcome.REJECTED
    assert evaluate(POLICY, SMALL, decisions, 2, CURRENT, NOW) is Outcome.REJECTED


def test_decision_recorded_under_another_role_does_not_count() -> None:
    """Only decisions recorded with the approver role count."""
    decisions = [_decision(7, role=Role.ADMIN)]
    assert evaluate(POLICY, SMALL, decisions, 2, CURRENT, NOW) is Outcome.PENDING


def test_same_hash_under_another_version_does_not_count() -> None:
    """An approval binds the version too: a re-issued identical draft needs a new approval."""
    old = replace(_decision(7), draft_version=1)
    assert evaluate(POLICY, SMALL, [old], 2, CURRENT, NOW) is Outcome.PENDING
