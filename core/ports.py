"""The protocols the shell implements for core's use cases."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol

from core.drafts import Draft
from core.jobs import AuditEvent, Effect, Job
from core.policies import Decision, Role
from core.states import State


class Tx(Protocol):
    """One database transaction; every method runs inside it."""

    async def job(self, job_id: str) -> Job:
        """The job with that id, or raise UnknownJob."""

    async def job_by_po(self, po_number: str) -> Job | None:
        """The job with that PO number, if any."""

    async def jobs_past_deadline(self, state: State, now: datetime, limit: int) -> list[Job]:
        """Jobs in a state whose decision deadline has passed, oldest first."""

    async def insert_job(self, job: Job) -> None:
        """Add a new job row; raise StaleJob if a concurrent request took the PO number."""

    async def update_job(self, job: Job, **changes: Any) -> Job:
        """Compare-and-set on (id, state, version); bump version; raise StaleJob on a miss."""

    async def insert_draft(self, job_id: str, version: int, draft: Draft, at: datetime) -> None:
        """Append one immutable draft version."""

    async def draft(self, job_id: str, version: int) -> Draft:
        """One stored draft version."""

    async def decisions(self, job_id: str) -> list[Decision]:
        """Every decision on the job, oldest first."""

    async def insert_decision(self, decision: Decision) -> None:
        """Record a decision; raise AlreadyDecided if this reviewer already decided this hash."""

    async def append_audit(self, event: AuditEvent) -> None:
        """Append one audit event."""

    async def insert_effect(self, effect: Effect) -> None:
        """Add an outbox row; the key is unique."""

    async def effect(self, key: str) -> Effect:
        """The outbox row with that key."""

    async def effects_for(self, job_id: str) -> list[Effect]:
        """A job's outbox rows, oldest first."""

    async def update_effect(self, effect: Effect, **changes: Any) -> Effect:
        """Compare-and-set on (key, version); bump version; raise LeaseLost on a miss."""

    async def claim_due(
        self, now: datetime, owner: str, lease_until: datetime, limit: int
    ) -> list[Effect]:
        """Lease due pending rows, and claimed rows whose lease ran out, to `owner`."""

    async def stalled(self, now: datetime, limit: int) -> list[Effect]:
        """Started rows whose lease ran out: their runner died mid-attempt."""

    async def roles(self, user_id: int) -> frozenset[Role]:
        """The roles a user holds now."""


class Store(Protocol):
    """Hands out transactions."""

    def begin(self) -> AbstractAsyncContextManager[Tx]:
        """Open a transaction that commits on success and rolls back on error."""
