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
    # A sent PO an admin called off: the supplier is owed a cancellation e-mail (a cancel-po
    # outbox row), then CANCELLED; or a person must find out whether it went, or tell the
    # supplier another way.
    CANCELLING = "CANCELLING"  # the cancellation notice is owed
    CANCEL_UNKNOWN = "CANCEL_UNKNOWN"  # it may or may not have left: a person reconciles
    CANCEL_FAILED = "CANCEL_FAILED"  # it failed for good: a person phones the supplier


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
    # calling off a PO that was sent, through its cancel-po e-mail
    CANCEL_SENT = "cancel_sent"
    MARK_CANCEL_SENT = "mark_cancel_sent"
    MARK_CANCEL_UNKNOWN = "mark_cancel_unknown"
    CANCEL_FAIL_FINAL = "cancel_fail_final"
    RECONCILE_CANCEL_SENT = "reconcile_cancel_sent"
    RECONCILE_CANCEL_NOT_SENT = "reconcile_cancel_not_sent"
    RECONCILE_CANCEL_FAILED = "reconcile_cancel_failed"
    SETTLE_CANCEL = "settle_cancel"
    # a sent PO's supplier proposes changes (quantities, prices, a later date) from the link in
    # its e-mail: a new draft version goes to the approvers; rejected (or left undecided until
    # it expires), the version the supplier has stands again
    SUPPLIER_PROPOSE = "supplier_propose"
    REJECT_PROPOSAL = "reject_proposal"
    # a restore from a backup: an e-mail the snapshot shows unsettled may have left since
    HOLD_RESTORED = "hold_restored"


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
    # a sent PO called off: its cancellation e-mail, retried in CANCELLING (the job does not
    # move), sent, maybe sent (reconcile), or failed for good (a person tells the supplier)
    (S.SENT, A.CANCEL_SENT): S.CANCELLING,
    (S.CANCELLING, A.MARK_CANCEL_SENT): S.CANCELLED,
    (S.CANCELLING, A.MARK_CANCEL_UNKNOWN): S.CANCEL_UNKNOWN,
    (S.CANCELLING, A.CANCEL_FAIL_FINAL): S.CANCEL_FAILED,
    (S.CANCEL_UNKNOWN, A.RECONCILE_CANCEL_SENT): S.CANCELLED,
    (S.CANCEL_UNKNOWN, A.RECONCILE_CANCEL_NOT_SENT): S.CANCELLING,  # the same key once more
    (S.CANCEL_UNKNOWN, A.RECONCILE_CANCEL_FAILED): S.CANCEL_FAILED,
    (S.CANCEL_FAILED, A.SETTLE_CANCEL): S.CANCELLED,  # a person told the supplier (phoned)
    # the supplier's proposal: approved, it is sent as the new version (APPROVED -> SENDING);
    # rejected or expired, the PO is back where it was, SENT, at the version the supplier has
    (S.SENT, A.SUPPLIER_PROPOSE): S.AWAITING_APPROVAL,
    (S.AWAITING_APPROVAL, A.REJECT_PROPOSAL): S.SENT,
    # restored from a backup: an e-mail owed or under way in the snapshot may have left after
    # it was taken, so it is never sent blindly: a person (or the relay's copy) settles it
    (S.APPROVED, A.HOLD_RESTORED): S.UNKNOWN_OUTCOME,
    (S.SENDING, A.HOLD_RESTORED): S.UNKNOWN_OUTCOME,
    (S.FAILED_RETRYABLE, A.HOLD_RESTORED): S.UNKNOWN_OUTCOME,
    (S.CANCELLING, A.HOLD_RESTORED): S.CANCEL_UNKNOWN,
}

# Closed: nothing moves them, but for SENT's two ways out: an admin calling the PO off
# (CANCEL_SENT), which e-mails the supplier a cancellation, and the supplier proposing changes
# (SUPPLIER_PROPOSE), which go to the approvers.
TERMINAL: frozenset[State] = frozenset({S.SENT, S.REJECTED, S.CANCELLED})
# A sent PO being called off: a cancellation e-mail is owed, unsure, or failed.
CALLING_OFF: frozenset[State] = frozenset({S.CANCELLING, S.CANCEL_UNKNOWN, S.CANCEL_FAILED})
# The manual-review queue: a person must look at these.
NEEDS_REVIEW: frozenset[State] = frozenset(
    {S.UNKNOWN_OUTCOME, S.FAILED_FINAL, S.CANCEL_UNKNOWN, S.CANCEL_FAILED}
)


def next_state(state: State, action: Action) -> State:
    """Return the state `action` leads to from `state`, or raise IllegalTransition."""
    try:
        return TRANSITIONS[(state, action)]
    except KeyError:
        raise IllegalTransition(state, action) from None
