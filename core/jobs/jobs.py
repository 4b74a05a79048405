"""The records a job is made of, as plain immutable values."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from core.drafting.drafts import Draft
from core.jobs.effects import EffectKind, EffectStatus, effect_key
from core.jobs.states import State

if TYPE_CHECKING:  # a value the runner hands over, named here for the type checker only
    from core.company.company import Company

# Bumped when the meaning of the workflow changes, so old jobs can be told apart.
WORKFLOW_VERSION = "po-approval/1"


@dataclass(frozen=True)
class Job:
    """One purchase order's durable position; `version` guards every compare-and-set."""

    id: str
    po_number: str
    state: State
    version: int
    requester_id: int
    input_ref: str
    workflow_version: str
    source_versions: dict[str, str]
    tool_results: dict[str, Any]
    draft_version: int | None
    draft_hash: str | None
    supplier_id: str | None
    total_paisa: int | None
    retry_count: int
    decision_deadline: datetime | None
    created_at: datetime
    updated_at: datetime
    # The current draft's route (core.approval.routes.Route.plain()); None before approval is
    # asked for, and for jobs drafted before routing (they follow the configured default policy).
    route: dict[str, Any] | None = None
    # When its current draft was approved (the last approval its route needed); its month is
    # the budget month it counts in (core.approval.budgets). None until then.
    approved_at: datetime | None = None

    @classmethod
    def received(cls, new: NewJob, po_number: str, now: datetime) -> Job:
        """A request as it arrives: RECEIVED, version 0, no draft yet."""
        return cls(
            id=new.id,
            po_number=po_number,
            state=State.RECEIVED,
            version=0,
            requester_id=new.requester_id,
            input_ref=new.input_ref,
            workflow_version=WORKFLOW_VERSION,
            source_versions=new.source_versions,
            tool_results=new.tool_results,
            draft_version=None,
            draft_hash=None,
            supplier_id=None,
            total_paisa=None,
            retry_count=0,
            decision_deadline=None,
            created_at=now,
            updated_at=now,
        )


@dataclass(frozen=True)
class NewJob:
    """What the intake knows when a request arrives; ids and time come from the shell."""

    id: str
    requester_id: int
    input_ref: str
    source_versions: dict[str, str] = field(default_factory=dict)
    tool_results: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Effect:
    """One outbox row: an external action, named by its idempotency key."""

    key: str
    job_id: str
    kind: str
    draft_version: int
    draft_hash: str
    status: EffectStatus
    version: int
    attempts: int
    next_attempt_at: datetime | None
    first_attempt_at: datetime | None
    lease_owner: str | None
    lease_until: datetime | None
    started_at: datetime | None
    result: dict[str, Any] | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def owed(cls, kind: EffectKind, po_number: str, job_id: str, version: int, hash_: str,
             now: datetime) -> Effect:  # fmt: skip
        """An e-mail of `kind` about one draft version, due now, named by its key
        (`<kind>:<PO>:v<version>:<hash>`)."""
        return cls(
            key=effect_key(kind, po_number, version, hash_),
            job_id=job_id,
            kind=kind.value,
            draft_version=version,
            draft_hash=hash_,
            status=EffectStatus.PENDING,
            version=0,
            attempts=0,
            next_attempt_at=now,
            first_attempt_at=None,
            lease_owner=None,
            lease_until=None,
            started_at=None,
            result=None,
            last_error=None,
            created_at=now,
            updated_at=now,
        )

    @classmethod
    def of_job(cls, kind: EffectKind, job: Job, now: datetime) -> Effect:
        """An e-mail of `kind` about the job's current draft version, due now."""
        assert job.draft_version is not None and job.draft_hash is not None
        return cls.owed(kind, job.po_number, job.id, job.draft_version, job.draft_hash, now)

    @classmethod
    def send_po(cls, job: Job, now: datetime) -> Effect:
        """The e-mail of the job's approved draft version, due now, named by its key."""
        return cls.of_job(EffectKind.SEND_PO, job, now)

    @classmethod
    def cancel_po(cls, job: Job, now: datetime) -> Effect:
        """The e-mail that calls off the job's sent draft version, due now, named by its key;
        the job is CANCELLING (core.outbox.calling_off)."""
        return cls.of_job(EffectKind.CANCEL_PO, job, now)


@dataclass(frozen=True)
class Stamp:
    """Who moves a job and when: what every move's audit event names."""

    actor: str  # "user:<id>", "runner:<owner>", "cli:<login>", "terms:<version>", …
    at: datetime


@dataclass(frozen=True)
class AuditEvent:
    """An append-only line of the audit trail; ids, never personal data."""

    job_id: str | None
    at: datetime
    actor: str
    action: str
    from_state: State | None
    to_state: State | None
    detail: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def stamped(
        cls,
        stamp: Stamp,
        action: str,
        detail: dict[str, Any],
        *,
        job_id: str | None = None,
        states: tuple[State | None, State | None] = (None, None),
    ) -> AuditEvent:
        """An event by `stamp`: about a job (with the states it went from and to), or, with
        no job, about people (a role granted, an invitation made)."""
        return cls(job_id, stamp.at, stamp.actor, action, states[0], states[1], detail)

    @classmethod
    def unmoved(cls, job: Job, stamp: Stamp, action: str, detail: dict[str, Any]) -> AuditEvent:
        """An event about `job` that does not move it: from its state to the same state."""
        return cls.stamped(stamp, action, detail, job_id=job.id, states=(job.state, job.state))


@dataclass(frozen=True)
class Document:
    """The PO document an e-mail carries, made once for its outbox row (before the first
    attempt) and kept with it: every attempt, and every resend, sends exactly these bytes."""

    pdf: bytes
    sha256: str


@dataclass(frozen=True)
class SendOrder:
    """What a runner needs to perform one attempt of one effect."""

    effect: Effect
    job: Job
    draft: Draft
    document: Document | None = None  # None: the row's e-mail carries no PDF (a cancellation)
    company: Company | None = None  # the version the draft cites: the buyer, the branch
    cancellation: Cancellation | None = None  # a cancel-po row's: why, and when the PO went
    note: Note | None = None  # a note's (core.outbox.notes): what it says besides the draft


@dataclass(frozen=True)
class Note:
    """What a note to a supplier says besides its draft (core.outbox.notes): for a proposal
    turned down, the approvers' reason, the version that stands, and the e-mail that carried
    it (whose link the note carries again)."""

    reason: str = ""
    standing: Draft | None = None
    standing_email: Effect | None = None


@dataclass(frozen=True)
class Cancellation:
    """What a cancel-po e-mail says besides the draft: the admin's reason, and when the PO it
    calls off was e-mailed (None when a person recorded that it arrived, not when)."""

    reason: str
    sent_at: datetime | None
