"""How a review-queue message finds what took its PO out of the queue: the first move out after
the job version it showed, even when the PO came back into the queue and left it again."""

from __future__ import annotations

from datetime import timedelta

from core.jobs.jobs import AuditEvent, Stamp
from core.jobs.states import State
from core.outbox.review import way_out
from tests.helpers.factories import T0

S = State


def event(version: int, was: State, now: State, action: str) -> AuditEvent:
    stamp = Stamp("user:1", T0 + timedelta(minutes=version))
    return AuditEvent.stamped(
        stamp, action, {"job_version": version}, job_id="j", states=(was, now)
    )


TRAIL = [
    event(2, S.APPROVED, S.SENDING, "start_send"),
    event(3, S.SENDING, S.UNKNOWN_OUTCOME, "mark_unknown"),
    event(4, S.UNKNOWN_OUTCOME, S.SENDING, "reconcile_not_sent"),  # Send again
    event(5, S.SENDING, S.UNKNOWN_OUTCOME, "mark_unknown"),
    event(6, S.UNKNOWN_OUTCOME, S.UNKNOWN_OUTCOME, "supplier_note"),  # in the queue still
    event(7, S.UNKNOWN_OUTCOME, S.SENT, "reconcile_sent"),
]


def test_a_message_is_settled_by_the_first_move_out_after_it_was_shown():
    assert way_out(TRAIL, 3) is TRAIL[2]
    assert way_out(TRAIL, 5) is TRAIL[5]  # an event that stays in the queue is not a way out
    assert way_out(TRAIL, 7) is None  # shown after the last move: nothing to say yet
    assert way_out(TRAIL[:4], 5) is None  # back in the queue, not out of it again
