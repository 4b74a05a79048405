"""The job state machine, cell by cell, against a table written out independently of core."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

import pytest

from core.errors import IllegalTransition
from core.jobs.states import TERMINAL, TRANSITIONS, Action, State, next_state

S, A = State, Action

# The intended machine, written out by hand: one row per allowed transition. This is the
# specification; it must never be built from core.jobs.states.TRANSITIONS, or the test cannot fail.
EXPECTED: dict[tuple[State, Action], State] = {
    # --- the happy path
    (S.RECEIVED, A.VALIDATE): S.VALIDATED,  # input parsed and checked
    (S.VALIDATED, A.RESEARCH): S.RESEARCHED,  # supplier and prices looked up
    (S.RESEARCHED, A.DRAFT): S.DRAFTED,  # first draft version written
    (S.DRAFTED, A.REQUEST_APPROVAL): S.AWAITING_APPROVAL,  # draft shown to reviewers
    (S.AWAITING_APPROVAL, A.APPROVE): S.APPROVED,  # approval policy met on the current hash
    (S.APPROVED, A.START_SEND): S.SENDING,  # attempt marker committed
    (S.SENDING, A.MARK_SENT): S.SENT,  # the supplier's server accepted the mail
    # --- decisions and time
    (S.AWAITING_APPROVAL, A.REJECT): S.REJECTED,  # one rejection ends it
    (S.AWAITING_APPROVAL, A.EXPIRE): S.EXPIRED,  # nobody decided in time
    (S.APPROVED, A.EXPIRE): S.EXPIRED,  # approval lapsed before the send started
    (S.FAILED_RETRYABLE, A.EXPIRE): S.EXPIRED,  # approval lapsed while waiting to retry
    # --- a new draft version asks for approval again
    (S.DRAFTED, A.REVISE): S.AWAITING_APPROVAL,  # revised before it was shown
    (S.AWAITING_APPROVAL, A.REVISE): S.AWAITING_APPROVAL,  # revised while under review
    (S.APPROVED, A.REVISE): S.AWAITING_APPROVAL,  # revised after approval: approvals void
    (S.EXPIRED, A.REVISE): S.AWAITING_APPROVAL,  # an expired request revived by a new draft
    (S.FAILED_RETRYABLE, A.REVISE): S.AWAITING_APPROVAL,  # fix the draft between retries
    (S.FAILED_FINAL, A.REVISE): S.AWAITING_APPROVAL,  # fix the draft after giving up
    # --- failures before any external effect
    (S.RECEIVED, A.FAIL_FINAL): S.FAILED_FINAL,  # input cannot be processed
    (S.VALIDATED, A.FAIL_FINAL): S.FAILED_FINAL,  # research cannot succeed
    (S.RESEARCHED, A.FAIL_FINAL): S.FAILED_FINAL,  # no draft can be made
    (S.DRAFTED, A.FAIL_FINAL): S.FAILED_FINAL,  # the draft cannot be shown
    # --- the send
    (S.SENDING, A.FAIL_RETRYABLE): S.FAILED_RETRYABLE,  # nothing delivered; try later
    (S.SENDING, A.FAIL_FINAL): S.FAILED_FINAL,  # provider refused for good
    (S.FAILED_RETRYABLE, A.START_SEND): S.SENDING,  # the retry starts
    (S.FAILED_RETRYABLE, A.FAIL_FINAL): S.FAILED_FINAL,  # retries exhausted
    (S.SENDING, A.MARK_UNKNOWN): S.UNKNOWN_OUTCOME,  # maybe delivered: reconcile, never retry
    (S.UNKNOWN_OUTCOME, A.RECONCILE_SENT): S.SENT,  # a person found it was delivered
    (S.UNKNOWN_OUTCOME, A.RECONCILE_NOT_SENT): S.APPROVED,  # not delivered: may send again
    (S.UNKNOWN_OUTCOME, A.RECONCILE_FAILED): S.FAILED_FINAL,  # delivered nowhere, give up
    # --- an admin withdraws the request (never while a send is in flight or unknown)
    (S.RECEIVED, A.CANCEL): S.CANCELLED,  # withdrawn on arrival
    (S.VALIDATED, A.CANCEL): S.CANCELLED,  # withdrawn before research
    (S.RESEARCHED, A.CANCEL): S.CANCELLED,  # withdrawn before drafting
    (S.DRAFTED, A.CANCEL): S.CANCELLED,  # withdrawn before review
    (S.AWAITING_APPROVAL, A.CANCEL): S.CANCELLED,  # withdrawn under review
    (S.APPROVED, A.CANCEL): S.CANCELLED,  # withdrawn after approval, before sending
    (S.EXPIRED, A.CANCEL): S.CANCELLED,  # an expired request closed for good
    (S.FAILED_RETRYABLE, A.CANCEL): S.CANCELLED,  # withdrawn between retries
    (S.FAILED_FINAL, A.CANCEL): S.CANCELLED,  # the admin closes a dead letter
}

ALL_CELLS = [(state, action) for state in State for action in Action]
FORBIDDEN_CELLS = [cell for cell in ALL_CELLS if cell not in EXPECTED]


def _cell_id(cell: tuple[State, Action]) -> str:
    return f"{cell[0].value}-{cell[1].value}"


def test_expected_table_is_well_formed() -> None:
    """The hand-written table has 38 rows over real states and actions (guards typos)."""
    assert len(EXPECTED) == 38
    assert all(isinstance(s, State) and isinstance(a, Action) for s, a in EXPECTED)
    assert len(ALL_CELLS) == len(State) * len(Action) == 14 * 17


@pytest.mark.parametrize("cell", list(EXPECTED), ids=[_cell_id(c) for c in EXPECTED])
def test_allowed_cell_leads_to_expected_state(cell: tuple[State, Action]) -> None:
    """Each allowed (state, action) gives exactly the intended target."""
    state, action = cell
    assert next_state(state, action) is EXPECTED[cell]


@pytest.mark.parametrize("cell", FORBIDDEN_CELLS, ids=[_cell_id(c) for c in FORBIDDEN_CELLS])
def test_forbidden_cell_raises_illegal_transition(cell: tuple[State, Action]) -> None:
    """Every other (state, action) is refused, naming the state and the action."""
    state, action = cell
    with pytest.raises(IllegalTransition) as caught:
        next_state(state, action)
    assert caught.value.state is state
    assert caught.value.action is action
    assert str(caught.value) == f"{action} is not allowed from {state}"


def test_core_table_has_exactly_the_expected_cells() -> None:
    """One diff that names every disagreement at once, for the failure message."""
    missing = {_cell_id(c) for c in EXPECTED if c not in TRANSITIONS}
    extra = {_cell_id(c) for c in TRANSITIONS if c not in EXPECTED}
    wrong = {
        _cell_id(c): (TRANSITIONS[c].value, EXPECTED[c].value)
        for c in EXPECTED
        if c in TRANSITIONS and TRANSITIONS[c] is not EXPECTED[c]
    }
    assert (missing, extra, wrong) == (set(), set(), {})


@pytest.mark.parametrize("action", list(Action), ids=[a.value for a in Action])
def test_received_never_reaches_sent_in_one_action(action: Action) -> None:
    """No single action takes a fresh request straight to SENT."""
    try:
        target = next_state(S.RECEIVED, action)
    except IllegalTransition:
        return
    assert target is not S.SENT


@pytest.mark.parametrize(
    "state",
    [S.SENT, S.REJECTED, S.CANCELLED],
    ids=["SENT", "REJECTED", "CANCELLED"],
)
def test_terminal_state_has_no_outgoing_transition(state: State) -> None:
    """Nothing leaves SENT, REJECTED or CANCELLED."""
    for action in Action:
        with pytest.raises(IllegalTransition):
            next_state(state, action)


def test_terminal_set_is_sent_rejected_cancelled() -> None:
    """core.jobs.states.TERMINAL names exactly the states with no way out."""
    assert frozenset({S.SENT, S.REJECTED, S.CANCELLED}) == TERMINAL


def _path(
    table: Mapping[tuple[State, Action], State],
    start: State,
    goal: State,
    avoid: frozenset[State] = frozenset(),
) -> list[str] | None:
    """Breadth-first search: the shortest action path from start to goal avoiding states."""
    queue: deque[tuple[State, list[str]]] = deque([(start, [start.value])])
    seen = {start}
    while queue:
        state, path = queue.popleft()
        if state is goal:
            return path
        for (source, action), target in table.items():
            if source is state and target not in seen and target not in avoid:
                seen.add(target)
                queue.append((target, [*path, f"-{action.value}->", target.value]))
    return None


def test_path_search_finds_a_bypass_when_one_exists() -> None:
    """The search below can fail: on a toy table with a bypass it reports the path."""
    toy = {
        (S.RECEIVED, A.VALIDATE): S.APPROVED,
        (S.APPROVED, A.START_SEND): S.SENDING,
        (S.RECEIVED, A.CANCEL): S.FAILED_RETRYABLE,
        (S.FAILED_RETRYABLE, A.START_SEND): S.SENDING,
    }
    assert _path(toy, S.RECEIVED, S.SENDING, frozenset({S.APPROVED})) == [
        "RECEIVED",
        "-cancel->",
        "FAILED_RETRYABLE",
        "-start_send->",
        "SENDING",
    ]


def test_sending_is_reachable_through_approved() -> None:
    """The search is not vacuous: on the real table it finds the route through APPROVED."""
    route = _path(TRANSITIONS, S.RECEIVED, S.SENDING, frozenset({S.FAILED_RETRYABLE}))
    assert route is not None
    assert route[-3:] == ["APPROVED", "-start_send->", "SENDING"]


def test_no_path_from_received_to_sending_avoids_approved() -> None:
    """Nothing is e-mailed to a supplier unless the job passed through APPROVED."""
    bypass = _path(TRANSITIONS, S.RECEIVED, S.SENDING, frozenset({S.APPROVED}))
    assert bypass is None, " ".join(bypass)
