"""core.approval.shortfalls: a stage whose approvals still needed exceed the distinct people left
who may give them is found at once, with why; a stage that can still be completed never is."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from core.approval.policies import Decision, Drift, Outcome, Policy, Role, Rule, Stage, Verdict
from core.approval.routes import Route, StageReason
from core.approval.shortfalls import Shortfall, ThinStage, shortfalls, thin_stages
from core.approval.tally import People, tally

T0 = datetime(2026, 12, 1, 9, tzinfo=UTC)
HASH = "cd" * 32
REQUESTER = 1
ALI, SANA, OMAR = 10, 11, 12


def route(*stages: Stage) -> Route:
    return Route("v1", "rule", stages, (StageReason.RULE,) * len(stages))


def approval(reviewer: int, stage: int = 0, *, for_: int | None = None) -> Decision:
    return Decision(
        "job", reviewer, Role.APPROVER, Verdict.APPROVE, 1, HASH, T0, T0 + timedelta(days=1),
        "", None, stage, on_behalf_of=for_,
    )  # fmt: skip


def short(
    way: Route, members: dict[str, frozenset[int]], *decisions: Decision,
    links: frozenset[tuple[int, int]] = frozenset(),
) -> Shortfall | None:  # fmt: skip
    """The first short stage, if any."""
    counted = tally(way, decisions, 1, HASH, T0, REQUESTER, members, People(links))
    return next(iter(shortfalls(way, counted, members, REQUESTER)), None)


TWO_OF_MANAGERS = route(Stage("managers", 2))


def test_two_approvals_from_a_group_of_one_approver_and_the_requester_cannot_be_given() -> None:
    members = {"managers": frozenset({ALI, REQUESTER})}
    assert short(TWO_OF_MANAGERS, members) == Shortfall(
        stage=0, group="managers", needed=2, eligible=1, members=2, requester=True, counted=0,
        joined=0,
    )  # fmt: skip
    # Once Ali approved, one more is needed and nobody is left to give it.
    after = short(TWO_OF_MANAGERS, members, approval(ALI))
    assert after is not None and (after.needed, after.eligible) == (1, 0)


def test_a_stage_that_can_still_be_completed_is_not_short() -> None:
    members = {"managers": frozenset({ALI, SANA, REQUESTER})}
    assert short(TWO_OF_MANAGERS, members) is None
    assert short(TWO_OF_MANAGERS, members, approval(ALI)) is None
    assert short(TWO_OF_MANAGERS, members, approval(ALI), approval(SANA)) is None  # approved


def test_members_who_left_the_group_or_lost_the_role_are_not_counted_on() -> None:
    # The store gives each group's members holding the approver role now: Sana left.
    members = {"managers": frozenset({ALI})}
    found = short(TWO_OF_MANAGERS, members)
    assert found is not None and (found.needed, found.eligible, found.members) == (2, 1, 1)


def test_a_delegation_that_makes_two_members_one_person_leaves_too_few() -> None:
    members = {"managers": frozenset({ALI, SANA})}
    assert short(TWO_OF_MANAGERS, members) is None
    found = short(TWO_OF_MANAGERS, members, links=frozenset({(SANA, ALI)}))  # Sana away, Ali
    assert found is not None and (found.eligible, found.joined) == (1, 1)


def test_someone_counted_in_an_earlier_stage_is_not_counted_on_in_a_later_one() -> None:
    way = route(Stage("managers", 1), Stage("owners", 1))
    members = {"managers": frozenset({ALI, SANA}), "owners": frozenset({ALI})}
    assert short(way, members) is None  # Sana may approve first, Ali then as owner
    found = short(way, members, approval(ALI))  # Ali took the managers' stage
    assert found is not None
    assert (found.stage, found.group, found.needed, found.eligible, found.counted) == (
        1, "owners", 1, 0, 1,
    )  # fmt: skip


def test_a_later_stage_with_nobody_in_it_is_found_before_its_turn() -> None:
    way = route(Stage("managers", 1), Stage("owners", 1))
    members = {"managers": frozenset({ALI}), "owners": frozenset()}
    found = short(way, members)
    assert found is not None and (found.stage, found.members) == (1, 0)


def test_every_short_stage_is_found_not_only_the_first() -> None:
    way = route(Stage("managers", 2), Stage("owners", 1))
    members = {"managers": frozenset({ALI}), "owners": frozenset({REQUESTER})}
    counted = tally(way, [], 1, HASH, T0, REQUESTER, members)
    found = shortfalls(way, counted, members, REQUESTER)
    assert [(s.stage, s.needed, s.eligible, s.requester) for s in found] == [
        (0, 2, 1, False),
        (1, 1, 0, True),
    ]


def test_a_rejected_request_has_no_shortfall() -> None:
    members = {"managers": frozenset({ALI})}
    no = Decision(
        "job", ALI, Role.APPROVER, Verdict.REJECT, 1, HASH, T0, T0 + timedelta(days=1), "",
        "no", 0,
    )  # fmt: skip
    counted = tally(TWO_OF_MANAGERS, [no], 1, HASH, T0, REQUESTER, members)
    assert counted.outcome is Outcome.REJECTED
    assert shortfalls(TWO_OF_MANAGERS, counted, members, REQUESTER) == ()


PEOPLE = st.integers(min_value=1, max_value=5)  # 1 is the requester
ROUTES = st.lists(
    st.builds(Stage, st.sampled_from(["a", "b"]), st.integers(min_value=1, max_value=3)),
    min_size=1,
    max_size=3,
).map(lambda s: route(*s))
GROUPS = st.fixed_dictionaries({g: st.frozensets(PEOPLE, max_size=4) for g in ("a", "b")})
APPROVALS = st.lists(st.builds(approval, PEOPLE, st.integers(min_value=0, max_value=2)), max_size=4)
LINKS = st.frozensets(st.tuples(PEOPLE, PEOPLE), max_size=2)


@settings(max_examples=300, deadline=None)
@given(ROUTES, GROUPS, APPROVALS, LINKS)
def test_property_a_shortfall_means_no_further_approvals_could_pass_the_request(
    way: Route,
    members: dict[str, frozenset[int]],
    decisions: list[Decision],
    links: frozenset[tuple[int, int]],
) -> None:
    """No false alarm: when a stage is reported short, no way of adding one approval by each
    person in some stage (or none) gets the request approved."""
    people = People(links)
    counted = tally(way, decisions, 1, HASH, T0, REQUESTER, members, people)
    found = shortfalls(way, counted, members, REQUESTER)
    if not found:
        return
    assert all(short.needed > short.eligible for short in found)
    everyone = sorted(set().union(*members.values()) | {REQUESTER})
    stages = range(len(way.stages))
    for choice in itertools.product([None, *stages], repeat=len(everyone)):
        more = [approval(p, s) for p, s in zip(everyone, choice, strict=True) if s is not None]
        ordered = [*decisions, *more]
        assert tally(way, ordered, 1, HASH, T0, REQUESTER, members, people).outcome is not (
            Outcome.APPROVED
        ), (found, more)


def test_a_policy_stage_asking_for_more_approvals_than_its_group_has_members_is_thin() -> None:
    policy = Policy(
        {"managers": "Managers", "owners": "Owners"},
        (
            Rule("big", (Stage("managers", 1), Stage("owners", 2))),
            Rule("default", (Stage("managers", 3),)),
        ),
        drift=Drift(Decimal(3), Stage("owners", 2)),
    )
    members = {"managers": frozenset({ALI, SANA, OMAR}), "owners": frozenset({SANA})}
    assert thin_stages(policy, members) == (
        ThinStage("big", StageReason.RULE, "owners", 2, 1),
        ThinStage("", StageReason.DRIFT, "owners", 2, 1),
    )
    # A group with nobody in it is left to the warning that nobody can approve for it.
    assert thin_stages(policy, {"managers": frozenset({ALI, SANA, OMAR})}) == ()
