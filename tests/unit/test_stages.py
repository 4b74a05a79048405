"""Routes and their tally: stages in order, N different people of a group in each, a person
counted once per request, the requester never, one rejection ends it; and, whatever the
decisions, no request passes with fewer distinct eligible people than its route asks for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.approval import routes
from core.approval.policies import Decision, Outcome, Policy, Role, Stage, Verdict
from core.approval.policy_file import parse_policy
from core.approval.routes import Route, StageReason, route_for
from core.approval.tally import People, stage_for, tally
from core.drafting.drafts import Flag
from core.drafting.flags import FlagCode
from core.errors import AlreadyDecided, NotYourTurn, SelfApproval

T0 = datetime(2026, 12, 1, 9, tzinfo=UTC)
HASH = "ab" * 32
REQUESTER = 1
POLICY, _ = parse_policy(
    (Path(__file__).parents[2] / "samples" / "approval-policy.toml").read_text()
)
assert POLICY is not None
MEMBERS = {"managers": frozenset({10, 11, 12}), "owners": frozenset({20, 21, 12})}
TWO_STAGES = route_for(POLICY, 2_000_000 * 100, "SUP-1")


def decision(
    reviewer: int, stage: int = 0, verdict: Verdict = Verdict.APPROVE, minute: int = 0,
    *, version: int = 1, expires: timedelta = timedelta(days=1), for_: int | None = None,
) -> Decision:  # fmt: skip
    at = T0 + timedelta(minutes=minute)
    return Decision(
        "job", reviewer, Role.APPROVER, verdict, version, HASH, at, at + expires, "", None, stage,
        on_behalf_of=for_,
    )  # fmt: skip


def count(
    route: Route, *decisions: Decision, now: datetime = T0 + timedelta(hours=1),
    people: People | None = None,
):  # fmt: skip
    return tally(route, decisions, 1, HASH, now, REQUESTER, MEMBERS, people)


def test_the_route_is_the_rule_then_what_drift_and_budget_add() -> None:
    assert TWO_STAGES.rule == "large"
    assert TWO_STAGES.stages == (Stage("managers", 1), Stage("owners", 1))
    both = route_for(POLICY, 100 * 100, "SUP-1", drifted=True, over_budget=True)
    assert both.rule == "default"
    assert both.stages == (Stage("managers", 1), Stage("owners", 1), Stage("owners", 1))
    assert both.reasons == (StageReason.RULE, StageReason.DRIFT, StageReason.BUDGET)
    assert both.basis(1) == "policy default, rule default, stage 2 of 3: 1 of owners, drift"


def test_stages_go_in_order_and_each_needs_its_own_people() -> None:
    waiting = count(TWO_STAGES)
    assert (waiting.outcome, waiting.stage) == (Outcome.PENDING, 0)
    first = count(TWO_STAGES, decision(10))
    assert (first.outcome, first.stage, first.counted) == (
        Outcome.PENDING, 1, (frozenset({10}), frozenset()),
    )  # fmt: skip
    done = count(TWO_STAGES, decision(10), decision(20, stage=1, minute=1))
    assert (done.outcome, done.stage) == (Outcome.APPROVED, 2)


def test_one_person_counts_once_whatever_groups_they_are_in() -> None:
    # 12 is a manager and an owner: their approval in stage 1 does not also satisfy stage 2.
    twice = count(TWO_STAGES, decision(12), decision(12, stage=1, minute=1))
    assert (twice.outcome, twice.stage) == (Outcome.PENDING, 1)
    with pytest.raises(AlreadyDecided, match="already counts"):
        stage_for(TWO_STAGES, twice, 12, REQUESTER, MEMBERS, {})
    assert stage_for(TWO_STAGES, twice, 21, REQUESTER, MEMBERS, {}) == (1, None)


def test_a_committee_needs_n_different_members() -> None:
    committee = route_for(POLICY, 500_000 * 100, "SUP-1")
    assert committee.stages == (Stage("managers", 2),)
    assert count(committee, decision(10)).outcome is Outcome.PENDING
    assert count(committee, decision(10), decision(10, minute=1)).outcome is Outcome.PENDING
    assert count(committee, decision(10), decision(20)).outcome is Outcome.PENDING  # an owner
    assert count(committee, decision(10), decision(11, minute=1)).outcome is Outcome.APPROVED


def test_the_requester_leavers_the_expired_and_other_drafts_never_count() -> None:
    committee = route_for(POLICY, 500_000 * 100, "SUP-1")
    with_requester = {**MEMBERS, "managers": MEMBERS["managers"] | {REQUESTER}}
    mine = tally(committee, [decision(REQUESTER), decision(10)], 1, HASH, T0, REQUESTER,
                 with_requester)  # fmt: skip
    assert mine.outcome is Outcome.PENDING
    left = {**MEMBERS, "managers": frozenset({10})}  # 11 left the group after approving
    assert tally(committee, [decision(10), decision(11)], 1, HASH, T0, REQUESTER, left).outcome \
        is Outcome.PENDING  # fmt: skip
    late = T0 + timedelta(days=2)
    assert count(committee, decision(10), decision(11), now=late).outcome is Outcome.PENDING
    old = [decision(10, version=0), decision(11, version=0)]
    assert count(committee, *old).outcome is Outcome.PENDING


def test_one_rejection_at_any_stage_ends_it() -> None:
    ended = count(TWO_STAGES, decision(10), decision(20, 1, Verdict.REJECT, 1))
    assert (ended.outcome, ended.stage) == (Outcome.REJECTED, 1)


def test_who_may_decide_now() -> None:
    waiting = count(TWO_STAGES)
    with pytest.raises(SelfApproval):
        stage_for(TWO_STAGES, waiting, REQUESTER, REQUESTER, MEMBERS, {})
    with pytest.raises(NotYourTurn, match="stage 1 waits for managers"):
        stage_for(TWO_STAGES, waiting, 20, REQUESTER, MEMBERS, {})
    assert stage_for(TWO_STAGES, waiting, 10, REQUESTER, MEMBERS, {}) == (0, None)
    approved = count(TWO_STAGES, decision(10), decision(20, 1))
    with pytest.raises(AlreadyDecided, match="approved"):
        stage_for(TWO_STAGES, approved, 21, REQUESTER, MEMBERS, {})


def test_the_default_policy_is_one_stage_of_one_or_two() -> None:
    default = Policy.default(500_000 * 100)
    members = {"approvers": frozenset({10, 11})}
    small, large = route_for(default, 100, "S"), route_for(default, 500_001 * 100, "S")
    assert tally(small, [decision(10)], 1, HASH, T0, REQUESTER, members).outcome \
        is Outcome.APPROVED  # fmt: skip
    one = tally(large, [decision(10)], 1, HASH, T0, REQUESTER, members)
    assert one.outcome is Outcome.PENDING
    assert tally(large, [decision(10), decision(11)], 1, HASH, T0, REQUESTER, members).outcome \
        is Outcome.APPROVED  # fmt: skip


# Delegation: 30 is away and 11 decides for them (30 is a manager only through 11's card).
AWAY = {**MEMBERS, "managers": MEMBERS["managers"] | {30}}


def test_a_delegate_decides_for_the_one_away_in_their_groups() -> None:
    committee = route_for(POLICY, 500_000 * 100, "SUP-1")
    linked = People(frozenset({(30, 40)}))  # 40, not a manager, acts for 30
    waiting = tally(committee, [], 1, HASH, T0, REQUESTER, AWAY, linked)
    assert stage_for(committee, waiting, 40, REQUESTER, AWAY, {30: 40}) == (0, 30)
    with pytest.raises(NotYourTurn):  # the delegation is over: 40 decides for nobody
        stage_for(committee, waiting, 40, REQUESTER, AWAY, {})
    for_30 = decision(40, for_=30)
    one = tally(committee, [for_30, decision(10, minute=1)], 1, HASH, T0, REQUESTER, AWAY, linked)
    assert one.outcome is Outcome.APPROVED  # 30 (by 40) and 10: two managers
    assert one.has_counted(30) and one.has_counted(40)


def test_a_delegator_and_their_delegate_are_one_person_in_a_request() -> None:
    committee = route_for(POLICY, 500_000 * 100, "SUP-1")
    pair = People(frozenset({(10, 11)}))  # 10 handed over to 11; both are managers
    both = tally(committee, [decision(10), decision(11, minute=1)], 1, HASH, T0, REQUESTER,
                 MEMBERS, pair)  # fmt: skip
    assert both.outcome is Outcome.PENDING  # as themselves, still one person
    for_each = [decision(11, for_=10), decision(10, minute=1)]
    assert tally(committee, for_each, 1, HASH, T0, REQUESTER, MEMBERS).outcome is Outcome.PENDING
    first = tally(committee, [decision(10)], 1, HASH, T0, REQUESTER, MEMBERS, pair)
    with pytest.raises(AlreadyDecided):
        stage_for(committee, first, 11, REQUESTER, MEMBERS, {10: 11})


def test_nobody_approves_their_own_request_through_a_delegate() -> None:
    linked = People(frozenset({(REQUESTER, 10)}))  # the requester handed over to 10
    waiting = count(TWO_STAGES, people=linked)
    with pytest.raises(SelfApproval, match="through a delegate"):
        stage_for(TWO_STAGES, waiting, 10, REQUESTER, MEMBERS, {REQUESTER: 10})
    # Nor does a decision 10 made (before, as themselves) count for it.
    assert count(TWO_STAGES, decision(10), people=linked).counted == (frozenset(),)


PEOPLE = st.integers(min_value=1, max_value=6)  # 1 is the requester
ROUTES = st.lists(
    st.builds(Stage, st.sampled_from(["a", "b", "c"]), st.integers(min_value=1, max_value=3)),
    min_size=1,
    max_size=3,
).map(lambda s: Route("v", "r", tuple(s), (StageReason.RULE,) * len(s)))
GROUPS = st.fixed_dictionaries({g: st.frozensets(PEOPLE, min_size=2) for g in ("a", "b", "c")})
DECISIONS = st.lists(
    st.builds(
        decision,
        PEOPLE,
        st.integers(min_value=0, max_value=2),
        st.sampled_from([Verdict.APPROVE] * 9 + [Verdict.REJECT]),
        st.integers(min_value=0, max_value=60),
        version=st.sampled_from([1, 1, 1, 0]),
        expires=st.sampled_from([timedelta(days=1), timedelta(days=1), timedelta(minutes=1)]),
        for_=st.one_of(st.none(), st.none(), PEOPLE),  # a delegate's, for someone away
    ),
    max_size=20,
)
# Delegations the request saw (delegator, delegate), any of them since ended.
LINKS = st.frozensets(st.tuples(PEOPLE, PEOPLE), max_size=3)


def persons(links: set[tuple[int, int]]) -> dict[int, frozenset[int]]:
    """Each user's person, worked out the slow way: everyone reachable through links."""
    reach: dict[int, set[int]] = {}
    for a, b in links:
        reach.setdefault(a, {a}).add(b)
        reach.setdefault(b, {b}).add(a)
    found: dict[int, frozenset[int]] = {}
    for start in reach:
        seen, todo = {start}, [start]
        while todo:
            for other in reach[todo.pop()] - seen:
                seen.add(other)
                todo.append(other)
        found[start] = frozenset(seen)
    return found


@settings(max_examples=500, deadline=None)
@given(ROUTES, GROUPS, DECISIONS, LINKS)
def test_property_no_request_passes_with_fewer_eligible_people_than_its_route_asks(
    route: Route,
    members: dict[str, frozenset[int]],
    decisions: list[Decision],
    links: frozenset[tuple[int, int]],
) -> None:
    """Whatever the approvals, delegations (the one away and their delegate are one person)
    and rejections, an approved request had, in each stage, that many different people, each
    with a live approval of their own or their delegate's in that stage, in the capacity of
    a member of its group; none of them one person with the requester or with another."""
    now = T0 + timedelta(minutes=30)
    result = tally(route, decisions, 1, HASH, now, REQUESTER, members, People(links))
    if result.outcome is not Outcome.APPROVED:
        return
    live = [
        d
        for d in decisions
        if d.verdict is Verdict.APPROVE and d.draft_version == 1 and now < d.expires_at
    ]
    pairs = set(links) | {(d.reviewer_id, d.on_behalf_of) for d in live if d.on_behalf_of}
    person = persons(pairs)

    def of(user: int) -> frozenset[int]:
        return person.get(user, frozenset({user}))

    seen: list[frozenset[int]] = []
    for index, stage in enumerate(route.stages):
        people = [of(p) for p in result.counted[index]]
        assert len(set(people)) == len(people) >= stage.approvals
        for who in people:
            assert REQUESTER not in who
            assert any(  # a live approval in that stage, by them, for a member of the group
                d.stage == index and d.reviewer_id in who
                and (d.on_behalf_of or d.reviewer_id) in members[stage.group]
                for d in live
            )  # fmt: skip
            assert who not in seen  # nobody counts twice, through a delegate or not
            seen.append(who)
    assert len(seen) >= sum(stage.approvals for stage in route.stages)
    assert not any(d.verdict is Verdict.REJECT and d.draft_version == 1 and now < d.expires_at
                   for d in decisions)  # fmt: skip


@pytest.mark.parametrize(
    ("before", "after", "drifts"),
    [
        (10_000, 10_300, False),  # exactly 3%: not above the tolerance
        (10_000, 10_301, True),  # a paisa above it
        (10_000, 10_200, False),  # 2%: the ordinary price-changed flag only
        (10_000, 9_000, False),  # cheaper is no drift
        (0, 100, True),  # free on the last PO, priced now
    ],
)
def test_a_line_drifts_only_above_the_policy_percent(before: int, after: int, drifts: bool) -> None:
    flag = Flag(FlagCode.PRICE_CHANGED, "SKU-1", (before, after), "PO-2026-0001")
    other = Flag(FlagCode.QUANTITY_JUMP, "SKU-1", (50, 5), "PO-2026-0001")
    assert POLICY.drift is not None and POLICY.drift.percent == 3
    assert routes.drifts([other, flag], POLICY.drift) == ((flag,) if drifts else ())
    assert routes.drifted([other, flag], POLICY.drift) is drifts
    assert routes.drifts([flag], None) == ()  # a policy without [drift]
