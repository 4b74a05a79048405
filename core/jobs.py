"""The records a job is made of, as plain immutable values."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from core.drafts import Draft
from core.effects import EffectStatus
from core.states import State

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


@dataclass(frozen=True)
class SendOrder:
    """What a runner needs to perform one attempt of one effect."""

    effect: Effect
    job: Job
    draft: Draft
