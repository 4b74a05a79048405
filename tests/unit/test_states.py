"""The job state machine, cell by cell, against a table written out independently of core."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

import pytest

from core.errors import IllegalTransition
from core.jobs.states import (
    CALLING_OFF,
    NEEDS_REVIEW,
    TERMINAL,
    TRANSITIONS,
    Action,
    State,
    next_state,
)

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
    # --- an admin calls off a PO that was sent: the supplier is e-mailed a cancellation
    (S.SENT, A.CANCEL_SENT): S.CANCELLING,  # the cancellation e-mail is owed
    (S.CANCELLING, A.MARK_CANCEL_SENT): S.CANCELLED,  # the supplier's server took it
    (S.CANCELLING, A.MARK_CANCEL_UNKNOWN): S.CANCEL_UNKNOWN,  # maybe delivered: reconcile
    (S.CANCELLING, A.CANCEL_FAIL_FINAL): S.CANCEL_FAILED,  # refused for good, or gave up
    (S.CANCEL_UNKNOWN, A.RECONCILE_CANCEL_SENT): S.CANCELLED,  # a person found it arrived
    (S.CANCEL_UNKNOWN, A.RECONCILE_CANCEL_NOT_SENT): S.CANCELLING,  # the same key once more
    (S.CANCEL_UNKNOWN, A.RECONCILE_CANCEL_FAILED): S.CANCEL_FAILED,  # give up on the e-mail
    (S.CANCEL_FAILED, A.SETTLE_CANCEL): S.CANCELLED,  # the supplier was phoned
    # --- the supplier of a sent PO proposes changes: a new version for the approvers
    (S.SENT, A.SUPPLIER_PROPOSE): S.AWAITING_APPROVAL,  # approved, it is sent as usual
    (S.AWAITING_APPROVAL, A.REJECT_PROPOSAL): S.SENT,  # turned down: the sent version stands
    # --- restored from a backup: an e-mail the snapshot shows unsettled may have left since
    (S.APPROVED, A.HOLD_RESTORED): S.UNKNOWN_OUTCOME,  # owed, maybe sent after the snapshot
    (S.SENDING, A.HOLD_RESTORED): S.UNKNOWN_OUTCOME,  # under way in the snapshot
    (S.FAILED_RETRYABLE, A.HOLD_RESTORED): S.UNKNOWN_OUTCOME,  # a retry may have gone since
    (S.CANCELLING, A.HOLD_RESTORED): S.CANCEL_UNKNOWN,  # the cancellation, likewise
}

ALL_CELLS = [(state, action) for state in State for action in Action]
FORBIDDEN_CELLS = [cell for cell in ALL_CELLS if cell not in EXPECTED]


def _cell_id(cell: tuple[State, Action]) -> str:
    return f"{cell[0].value}-{cell[1].value}"


def test_expected_table_is_well_formed() -> None:
    """The hand-written table has 52 rows over real states and actions (guards typos)."""
    assert len(EXPECTED) == 52
    assert all(isinstance(s, State) and isinstance(a, Action) for s, a in EXPECTED)
    assert len(ALL_CELLS) == len(State) * len(Action) == 17 * 28


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
    [S.REJECTED, S.CANCELLED],
    ids=["REJECTED", "CANCELLED"],
)
def test_terminal_state_has_no_outgoing_transition(state: State) -> None:
    """Nothing leaves REJECTED or CANCELLED."""
    for action in Action:
        with pytest.raises(IllegalTransition):
            next_state(state, action)


_LEAVE_SENT = (A.CANCEL_SENT, A.SUPPLIER_PROPOSE)


@pytest.mark.parametrize(
    "action", [a for a in Action if a not in _LEAVE_SENT], ids=lambda a: a.value
)
def test_sent_is_left_only_by_calling_it_off_or_a_suppliers_proposal(action: Action) -> None:
    """SENT moves on CANCEL_SENT (to CANCELLING) and on the supplier's proposal (to the
    approvers) alone; no other action moves it, a plain cancel, an approver's revision, a
    resend or a reconciliation included (SENT -> SENT moves none)."""
    assert next_state(S.SENT, A.CANCEL_SENT) is S.CANCELLING
    assert next_state(S.SENT, A.SUPPLIER_PROPOSE) is S.AWAITING_APPROVAL
    with pytest.raises(IllegalTransition):
        next_state(S.SENT, action)


def test_terminal_set_is_sent_rejected_cancelled() -> None:
    """core.jobs.states.TERMINAL names the closed states: REJECTED and CANCELLED with no way
    out, SENT with the two of calling it off and of its supplier's proposal."""
    assert frozenset({S.SENT, S.REJECTED, S.CANCELLED}) == TERMINAL
    assert [a for (s, a) in TRANSITIONS if s in TERMINAL] == list(_LEAVE_SENT)


def test_a_proposal_turned_down_is_the_only_way_to_sent_but_the_send() -> None:
    """SENT is reached by a send (MARK_SENT, or a reconciliation that it went) or by turning
    down a sent PO's supplier's proposal, which only a job that was SENT can be waiting on
    (core.jobs.proposals); no other action leads there."""
    into_sent = {a for (s, a), t in TRANSITIONS.items() if t is S.SENT}
    assert into_sent == {A.MARK_SENT, A.RECONCILE_SENT, A.REJECT_PROPOSAL}


def test_the_review_queue_holds_every_state_a_person_settles() -> None:
    """A send or a cancellation e-mail that may have gone, or failed for good, waits for a
    person; CANCELLING waits for the runner, not a person."""
    assert frozenset({S.UNKNOWN_OUTCOME, S.FAILED_FINAL, S.CANCEL_UNKNOWN, S.CANCEL_FAILED}) == (
        NEEDS_REVIEW
    )
    assert frozenset({S.CANCELLING, S.CANCEL_UNKNOWN, S.CANCEL_FAILED}) == CALLING_OFF


@pytest.mark.parametrize(
    "state", sorted(set(State) - {S.SENT}, key=lambda s: s.value), ids=lambda s: s.value
)
def test_only_a_sent_po_is_called_off(state: State) -> None:
    """CANCEL_SENT is refused from every state but SENT: a PO not sent yet is cancelled
    (CANCEL), one being called off already cannot be called off twice."""
    with pytest.raises(IllegalTransition):
        next_state(state, A.CANCEL_SENT)


def test_a_called_off_po_never_reaches_sent_again() -> None:
    """From CANCELLING nothing leads back to SENT, SENDING or APPROVED: a called-off PO is
    never e-mailed again; every path ends CANCELLED."""
    for goal in (S.SENT, S.SENDING, S.APPROVED, S.AWAITING_APPROVAL):
        assert _path(TRANSITIONS, S.CANCELLING, goal) is None, goal
    for start in CALLING_OFF:
        assert _path(TRANSITIONS, start, S.CANCELLED) is not None, start


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
