"""The job state machine: one table is the whole machine."""

from __future__ import annotations

from enum import StrEnum

from core.errors import IllegalTransition


class State(StrEnum):
    """Where a job durably stands."""

    RECEIVED = "RECEIVED"
    VALIDATED = "VALIDATED"
    RESEARCHED = "RESEARCHED"
    DRAFTED = "DRAFTED"
    AWAITING_APPROVAL = "AWAITING_APPROVAL"
    APPROVED = "APPROVED"
    SENDING = "SENDING"
    SENT = "SENT"
    REJECTED = "REJECTED"
    EXPIRED = "EXPIRED"
    CANCELLED = "CANCELLED"
    FAILED_RETRYABLE = "FAILED_RETRYABLE"
    FAILED_FINAL = "FAILED_FINAL"
    UNKNOWN_OUTCOME = "UNKNOWN_OUTCOME"


class Action(StrEnum):
    """What moves a job; each is named in the audit trail."""

    VALIDATE = "validate"
    RESEARCH = "research"
    DRAFT = "draft"
    REQUEST_APPROVAL = "request_approval"
    REVISE = "revise"
    APPROVE = "approve"
    REJECT = "reject"
    EXPIRE = "expire"
    CANCEL = "cancel"
    START_SEND = "start_send"
    MARK_SENT = "mark_sent"
    FAIL_RETRYABLE = "fail_retryable"
    FAIL_FINAL = "fail_final"
    MARK_UNKNOWN = "mark_unknown"
    RECONCILE_SENT = "reconcile_sent"
    RECONCILE_NOT_SENT = "reconcile_not_sent"
    RECONCILE_FAILED = "reconcile_failed"


S, A = State, Action

# States before approval. A failure there is final (a bad sheet, missing terms); intake
# retries its own transient errors before it moves the job. FAILED_RETRYABLE is entered
# only from SENDING, so every way into SENDING passes through APPROVED.
_PRE_EFFECT = (S.RECEIVED, S.VALIDATED, S.RESEARCHED, S.DRAFTED)
# States from which a new draft version asks for approval again. Not from SENDING or
# UNKNOWN_OUTCOME: the old version may be at the supplier, reconcile it first.
_REVISABLE = (
    S.DRAFTED,
    S.AWAITING_APPROVAL,
    S.APPROVED,
    S.EXPIRED,
    S.FAILED_RETRYABLE,
    S.FAILED_FINAL,
)
# States an admin may cancel; not while a send is in flight or its outcome is unknown.
_CANCELLABLE = (
    *_PRE_EFFECT,
    S.AWAITING_APPROVAL,
    S.APPROVED,
    S.EXPIRED,
    S.FAILED_RETRYABLE,
    S.FAILED_FINAL,
)

TRANSITIONS: dict[tuple[State, Action], State] = {
    # the happy path
    (S.RECEIVED, A.VALIDATE): S.VALIDATED,
    (S.VALIDATED, A.RESEARCH): S.RESEARCHED,
    (S.RESEARCHED, A.DRAFT): S.DRAFTED,
    (S.DRAFTED, A.REQUEST_APPROVAL): S.AWAITING_APPROVAL,
    (S.AWAITING_APPROVAL, A.APPROVE): S.APPROVED,
    (S.APPROVED, A.START_SEND): S.SENDING,
    (S.SENDING, A.MARK_SENT): S.SENT,
    # decisions and time
    (S.AWAITING_APPROVAL, A.REJECT): S.REJECTED,
    (S.AWAITING_APPROVAL, A.EXPIRE): S.EXPIRED,
    (S.APPROVED, A.EXPIRE): S.EXPIRED,
    (S.FAILED_RETRYABLE, A.EXPIRE): S.EXPIRED,
    # a new draft version needs a new approval
    **{(s, A.REVISE): S.AWAITING_APPROVAL for s in _REVISABLE},
    # failures before approval
    **{(s, A.FAIL_FINAL): S.FAILED_FINAL for s in _PRE_EFFECT},
    # the send: nothing delivered -> retry or give up; maybe delivered -> reconcile
    (S.SENDING, A.FAIL_RETRYABLE): S.FAILED_RETRYABLE,
    (S.SENDING, A.FAIL_FINAL): S.FAILED_FINAL,
    (S.FAILED_RETRYABLE, A.START_SEND): S.SENDING,
    (S.FAILED_RETRYABLE, A.FAIL_FINAL): S.FAILED_FINAL,
    (S.SENDING, A.MARK_UNKNOWN): S.UNKNOWN_OUTCOME,
    (S.UNKNOWN_OUTCOME, A.RECONCILE_SENT): S.SENT,
    (S.UNKNOWN_OUTCOME, A.RECONCILE_NOT_SENT): S.APPROVED,
    (S.UNKNOWN_OUTCOME, A.RECONCILE_FAILED): S.FAILED_FINAL,
    **{(s, A.CANCEL): S.CANCELLED for s in _CANCELLABLE},
}

TERMINAL: frozenset[State] = frozenset({S.SENT, S.REJECTED, S.CANCELLED})
# The manual-review queue: a person must look at these.
NEEDS_REVIEW: frozenset[State] = frozenset({S.UNKNOWN_OUTCOME, S.FAILED_FINAL})


def next_state(state: State, action: Action) -> State:
    """Return the state `action` leads to from `state`, or raise IllegalTransition."""
    try:
        return TRANSITIONS[(state, action)]
    except KeyError:
        raise IllegalTransition(state, action) from None
