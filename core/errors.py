"""One tree of domain errors.

ManzooriError
├── WorkflowError              a request the rules refuse
│   ├── IllegalTransition      (state, action) is not in the transition table
│   ├── UnknownJob             no job with that id or PO number
│   ├── DuplicatePurchaseOrder the PO number is taken by another input
│   ├── InvalidDraft           a draft that cannot be priced or sent
│   ├── NotARequester          the sender lacks the requester role
│   ├── NotAnAdmin             the sender may not manage people
│   ├── RefusedError           a refusal the person is told, by its Refusal reason
│   │   ├── InviteRefused      an invitation code that is forged, expired or used
│   │   ├── GroupRefused       not an approver, or no such group in the policy in force
│   │   ├── BranchRefused      not a requester, no company file, or no such branch in it
│   │   └── DelegationRefused  a hand-over to oneself, back, to a non-approver, or already over
│   ├── ReconcileRefused       nothing to reconcile for that job
│   ├── CancelRefused          that PO cannot be cancelled now (its code says why)
│   ├── DraftPurged            the closed PO's draft was removed by the retention purge
│   ├── AlreadyResolved        the PO left the review queue, or moved on, before the choice
│   └── ReadRefused            the viewer may not read that PO (core.purchasing.po_view)
├── InputError                 what a person or a client sent cannot be used as it is
│   ├── UnreadableSheet        the file is not a spreadsheet this product reads
│   ├── BadPeriod              a day that is not YYYY-MM-DD, or a period ending before it starts
│   ├── UnreadableFile         a TOML file (a policy, the company) too large, or not text
│   ├── BadClientId            a client's decision id that is not 1-64 of [A-Za-z0-9_-]
│   ├── EditRefused            an edit of a draft that cannot be made (its code says why)
│   └── InvalidToken           signed data (a button, an invite code) forged, altered or cut
│       └── ExpiredToken       well signed, but past its expiry
├── ConfigError                the configuration is unusable (each bad variable named)
├── ApprovalError              a decision that does not count
│   ├── NotAnApprover          the reviewer lacks the approver role
│   ├── SelfApproval           the reviewer is the requester
│   ├── NotYourTurn            the request waits for a stage of a group the reviewer is not in
│   ├── DelegationEnded        the reviewer held the card for someone whose hand-over ended
│   ├── DraftChanged           the decision names an older draft version or hash
│   ├── AlreadyDecided         this reviewer already decided this draft, or the job is decided
│   ├── ApprovalExpired        the approval's time is up
│   ├── ReasonRequired         an approval that takes a category over its month, without a reason
│   └── ClientIdReused         a client's decision id that already names another request
├── StoredDataError            stored data cannot be read back as written
│   └── SealedDataUnreadable   MANZOORI_DATA_KEY cannot open a sealed field (or it was altered)
├── ConcurrencyError
│   ├── StaleJob               compare-and-set lost: the job moved on since it was read
│   ├── InsertConflict         a concurrent writer inserted the same unique row first
│   ├── LeaseLost              another runner owns the outbox row now
│   └── StoreBusy              the database stayed locked (or PostgreSQL gave up on a
│                              serialization or deadlock) past its wait: try again
└── SendError                  raised by senders, classified for the retry policy
    ├── TransientSendError     nothing was delivered; safe to try again later
    ├── PermanentSendError     the provider refused; trying again will not help
    └── AmbiguousSendError     the provider may have delivered; reconcile, never blind-retry
"""

from __future__ import annotations

from enum import StrEnum

from core.problems import Problem


class ManzooriError(Exception):
    """Base of every error this project raises on purpose."""


class WorkflowError(ManzooriError):
    """A request the workflow rules refuse."""


class IllegalTransition(WorkflowError):
    """The (state, action) pair is not in the transition table."""

    def __init__(self, state: object, action: object) -> None:
        super().__init__(f"{action} is not allowed from {state}")
        self.state = state
        self.action = action


class UnknownJob(WorkflowError):
    """No job with that id or PO number."""


class DuplicatePurchaseOrder(WorkflowError):
    """The PO number already belongs to a job made from another input."""


class InvalidDraft(WorkflowError):
    """A draft that cannot be priced or sent."""


class NotARequester(WorkflowError):
    """The sender of a sheet does not hold the requester role."""


class NotAnAdmin(WorkflowError):
    """The sender is neither a configured admin nor holds the admin role."""


class Refusal(StrEnum):
    """Why an invitation, a group change, a branch or a delegation was refused: what the shell
    says (bot.words.refusals), from the `values` the error carries (named in each comment)."""

    INVITE_ROLE = "invite_role"  # role
    GROUP_FOR_REQUESTER = "group_for_requester"  # ()
    INVITE_EXPIRED = "invite_expired"  # ()
    INVITE_INVALID = "invite_invalid"  # ()
    INVITE_USED = "invite_used"  # ()
    INVITE_WITHDRAWN = "invite_withdrawn"  # ()
    UNKNOWN_GROUPS = "unknown_groups"  # groups, known (", "-joined)
    NOT_AN_APPROVER_YET = "not_an_approver_yet"  # user
    NOT_A_REQUESTER_YET = "not_a_requester_yet"  # user
    NO_COMPANY = "no_company"  # () no company file was ever imported
    UNKNOWN_BRANCH = "unknown_branch"  # branch, known (", "-joined)
    # An end /away cannot have; each names what it may be: first, last, longest, days.
    NOT_A_DATE = "not_a_date"  # text, and the window
    HAS_PASSED = "has_passed"  # the window
    TOO_LONG = "too_long"  # the window
    IN_THE_PAST = "in_the_past"  # () a delegation ending by the time it is written
    TO_ONESELF = "to_oneself"  # ()
    AWAY_NOT_APPROVER = "away_not_approver"  # user
    DELEGATE_NOT_APPROVER = "delegate_not_approver"  # user
    DELEGATION_BACK = "delegation_back"  # delegate, delegator
    NOTHING_TO_END = "nothing_to_end"  # user


class RefusedError(WorkflowError):
    """A refusal a person reads: the message (English, for logs and the CLI), and `reason`
    and `values`, from which the shell says it in the person's language."""

    def __init__(self, message: str, reason: Refusal, **values: str | int) -> None:
        super().__init__(message)
        self.reason, self.values = reason, values


class InviteRefused(RefusedError):
    """The invitation is forged, altered, expired or already used; the reason says which."""


class ReconcileRefused(WorkflowError):
    """The job is not waiting for reconciliation."""


class CancelRefusal(StrEnum):
    """Why a cancellation was refused: what the shell says, with the PO and its state."""

    REASON_REQUIRED = "reason_required"  # a sent PO's cancellation tells the supplier why
    ALREADY_CANCELLED = "already_cancelled"  # it is cancelled already
    CALLED_OFF_ALREADY = "called_off_already"  # it is being called off already, for another reason
    IN_FLIGHT = "in_flight"  # its e-mail is going out, or whether it went is unknown
    CLOSED = "closed"  # it was rejected: there is nothing to cancel
    CHANGED = "changed"  # it has a newer draft version than the one confirmed


class CancelRefused(WorkflowError):
    """A cancellation that cannot be made now: `why`, about `po_number` in `state`."""

    def __init__(self, po_number: str, state: str, why: CancelRefusal) -> None:
        super().__init__(f"{po_number} is {state}: {why.value.replace('_', ' ')}")
        self.po_number, self.state, self.why = po_number, state, why


class DraftPurged(WorkflowError):
    """The closed PO's draft body was removed by the retention purge (core.records.retention)."""


class GroupRefused(RefusedError):
    """A user cannot be put in those approver groups: not an approver, or no such group."""


class BranchRefused(RefusedError):
    """A user cannot order for that branch: not a requester, no company file imported, or no
    such branch in the one in force."""


class DelegationRefused(RefusedError):
    """A delegation that cannot be: to oneself, back to one's own delegator, to or from
    someone who is not an approver, ending in the past, or none to end."""


class AlreadyResolved(WorkflowError):
    """The PO is no longer in the review queue at the draft version the choice named."""

    def __init__(self, po_number: str, state: object, draft_version: int | None) -> None:
        super().__init__(f"{po_number} is {state} (draft v{draft_version})")
        self.po_number = po_number
        self.state = state
        self.draft_version = draft_version


class ReadRefused(WorkflowError):
    """The viewer may not read that PO: not its requester, an admin, or an approver it asked."""


class InputError(ManzooriError):
    """What a person or a client sent cannot be used as it is; the message says so plainly."""


class UnreadableSheet(InputError):
    """The file is not a spreadsheet this product reads: `text` is one plain sentence (the
    shell's, with `{name}` placeholders; translated where it is sent), `params` their values,
    and the message the sentence filled in."""

    def __init__(self, text: str, /, **params: str | int) -> None:
        super().__init__(text.format(**params))
        self.text, self.params = text, params


class BadPeriod(InputError):
    """A day that is not written YYYY-MM-DD, or a period that ends before it starts."""


class UnreadableFile(InputError):
    """The file cannot be the TOML file it was sent as, an approval policy or the company
    (too large, not text): `problem` says why, as a code and its values (core.problems), which
    the shell says; the message is the code."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(f"{problem.code.value}: {dict(problem.values)}")
        self.problem = problem


class BadClientId(InputError):
    """A decision id a client generated that is not 1 to 64 of A-Z, a-z, 0-9, "_" and "-"."""


class EditProblem(StrEnum):
    """Why an edit of a draft (core.purchasing.edits) cannot be made."""

    UNKNOWN_LINE = "unknown_line"  # a line number the shown draft does not have
    DUPLICATE_LINE = "duplicate_line"  # one line changed twice in one edit
    ABOVE_SHOWN = "above_shown"  # more than the shown quantity: a larger order is a new sheet
    NEGATIVE = "negative"  # a quantity below zero
    NOTHING_LEFT = "nothing_left"  # every line dropped: that is a rejection, not an edit
    NO_CHANGE = "no_change"  # every quantity as shown: that is an approval, not an edit


class EditRefused(InputError):
    """An edit of a draft that cannot be made; `code` says why, `line` names the line."""

    def __init__(self, code: EditProblem, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.line = line


class AnswerProblem(StrEnum):
    """Why a supplier's answer from the link cannot be recorded."""

    ANSWERED = "answered"  # this version has a different answer already
    UNDER_REVIEW = "under_review"  # the supplier's proposal of this version awaits approvers
    SUPERSEDED = "superseded"  # a later version of the PO was sent, or is being decided
    CANCELLED = "cancelled"  # the PO was called off (or never went out)
    STALE = "stale"  # the form names another version or hash than the link
    REASON_REQUIRED = "reason_required"  # a decline without a reason
    DATE_TOO_EARLY = "date_too_early"  # a delivery date before the PO's
    NOTHING_PROPOSED = "nothing_proposed"  # a proposal that changes nothing
    QUANTITY_TOO_HIGH = "quantity_too_high"  # more than ordered: a new order, not a change
    BAD_LINE = "bad_line"  # a line the PO does not have, or a price that is no price
    TOO_LONG = "too_long"  # a reason or note beyond its limit


class AnswerRefused(InputError):
    """A supplier's answer that cannot be recorded; `code` says why, `line` names the line."""

    def __init__(self, code: AnswerProblem, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.line = line


class InvalidToken(InputError):
    """Forged, altered or truncated signed data: the token is worth nothing."""


class ExpiredToken(InvalidToken):
    """A token with a good signature whose expiry has passed."""


class ConfigError(ManzooriError):
    """The configuration is unusable; the message lists each bad variable, one per line."""


class ApprovalError(ManzooriError):
    """A decision that does not count."""


class NotAnApprover(ApprovalError):
    """The reviewer does not hold the approver role."""


class SelfApproval(ApprovalError):
    """The reviewer is the requester of the job."""


class NotYourTurn(ApprovalError):
    """The request waits for a stage whose group the reviewer is not in."""

    def __init__(self, stage: int, group: str) -> None:
        super().__init__(f"stage {stage} waits for {group}")  # for logs; the shell says it
        self.stage, self.group = stage, group  # the stage counted from 1, and its group


class DelegationEnded(ApprovalError):
    """The reviewer held the card for an approver who was away, and that delegation is over."""

    def __init__(self, delegator: int) -> None:
        super().__init__(f"you no longer act for user {delegator}: their delegation has ended")
        self.delegator = delegator  # the approver back now, whose card the reviewer held


class DraftChanged(ApprovalError):
    """The decision or the send names a draft that is no longer current."""


class AlreadyDecided(ApprovalError):
    """This reviewer already decided this draft, or the job is already decided."""


class ApprovalExpired(ApprovalError):
    """The approval's expiry has passed."""


class ReasonRequired(ApprovalError):
    """An approval that takes a category over its monthly budget needs the approver's reason."""


class ClientIdReused(ApprovalError):
    """A client's decision id already recorded for another PO, person, verdict, draft or edit:
    a replay must repeat its request exactly."""


class StoredDataError(ManzooriError):
    """Stored data cannot be read back as it was written."""


class SealedDataUnreadable(StoredDataError):
    """The data key cannot open a sealed field: a different key, or the data was altered."""


class ConcurrencyError(ManzooriError):
    """Another writer got there first."""


class StaleJob(ConcurrencyError):
    """Compare-and-set on (state, version) found the job changed."""


class InsertConflict(ConcurrencyError):
    """A concurrent writer inserted a row with the same unique key first: read again."""


class BurstUndone(ConcurrencyError):
    """A part of a burst of decisions (core.ports.BatchTx.each) failed after it wrote, which
    only a rollback of the whole burst can undo: each of its decisions is made again alone."""


class LeaseLost(ConcurrencyError):
    """The outbox row is no longer leased to this runner."""


class StoreBusy(ConcurrencyError):
    """The database could not take this transaction now (SQLite's lock stayed held past the
    busy timeout; PostgreSQL broke a deadlock or a serialization conflict). Nothing of the
    transaction was kept: running it again is safe."""


class SendError(ManzooriError):
    """A sender failed; the subclass says what a retry may do."""

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class TransientSendError(SendError):
    """Nothing was delivered and the failure is temporary."""


class PermanentSendError(SendError):
    """The provider refused the message for good."""


class AmbiguousSendError(SendError):
    """The provider may or may not have delivered the message."""
