"""The protocols the shell implements for core's use cases."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from core.drafts import Draft
from core.intake import History
from core.jobs import AuditEvent, Effect, Job
from core.policies import Decision, Role
from core.states import State
from core.terms import Terms

if TYPE_CHECKING:  # core.notices and core.people use these ports themselves
    from core.notices import Notice
    from core.people import TelegramUser


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

    async def grant(self, user_id: int, role: Role, by: str, now: datetime) -> bool:
        """Give a user a role and audit it; False if they held it already."""

    async def revoke(self, user_id: int, by: str, now: datetime) -> frozenset[Role]:
        """Take every role from a user and audit it; what they held (nothing: nothing written)."""

    async def telegram_user(self, user_id: int) -> TelegramUser | None:
        """What the bot knows of a user, if it met them."""

    async def insert_invite(
        self, invite_id: str, role: Role, created_by: int, at: datetime, expires_at: datetime
    ) -> None:
        """Record an invitation that has been handed out."""

    async def use_invite(self, invite_id: str, user_id: int, at: datetime) -> Role | None:
        """Mark an unused, unexpired invitation used by `user_id`; its role, or None."""

    async def holders(self, role: Role) -> list[int]:
        """Every user holding `role` now, by id."""

    async def insert_notice(self, notice: Notice) -> None:
        """Owe a Telegram message; a notice with the same key already owed stays as it is."""

    async def jobs_in_states(self, states: Collection[State]) -> list[Job]:
        """Every job in one of `states`, oldest first."""

    async def terms_version(self, *, for_update: bool = False) -> str | None:
        """The terms version in force, or None before any import."""

    async def current_terms(self) -> Terms | None:
        """The terms in force, or None if none were ever imported."""

    async def terms(self, version: str) -> Terms | None:
        """One stored terms version, or None."""

    async def terms_sha256(self, version: str) -> str | None:
        """The content hash of a stored terms version, or None if there is none."""

    async def insert_terms(self, terms: Terms, sha256: str, at: datetime, by: str) -> None:
        """Store a new terms version and make it the current one."""

    async def set_current_terms(self, version: str, at: datetime) -> None:
        """Put a stored terms version in force."""

    async def terms_redrafts(self, actor: str) -> list[tuple[Job, dict[str, Any]]]:
        """Jobs re-drafted or cancelled by `actor` (a terms version), with the event's detail."""

    async def submission(self, requester_id: int, sha256: str) -> list[str] | None:
        """The PO numbers made from this requester's sheet with these bytes, if any."""

    async def insert_submission(
        self, requester_id: int, sha256: str, name: str, po_numbers: list[str], at: datetime
    ) -> None:
        """Remember a sheet's POs; raise StaleJob if the same sheet was recorded meanwhile."""

    async def next_po_serial(self, year: int) -> int:
        """The next PO serial of `year`, unique across processes."""

    async def history(self, pairs: Iterable[tuple[str, str]]) -> History:
        """For each (supplier id, SKU), the line of the last PO that was sent with it."""


class Store(Protocol):
    """Hands out transactions."""

    def begin(self) -> AbstractAsyncContextManager[Tx]:
        """Open a transaction that commits on success and rolls back on error."""
