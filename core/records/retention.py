"""How long stored data is kept, and the purge that removes what is past it (docs/retention.md).

The purge is one use case over the RetentionStore port, run in short transactions of at most
BATCH rows or one job each, so it never holds the write lock for long. It is idempotent: what
is gone is not counted again, and a purge interrupted anywhere is finished by the next one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from core.jobs.jobs import AuditEvent, Stamp
from core.jobs.notices import NoticeStatus
from core.jobs.states import State

# Rows one purge transaction touches: small enough that a live bot's writes never wait long.
BATCH = 500
# The chore's name in the store, and how often it is due.
PURGE_CHORE = "purge"
PURGE_EVERY = timedelta(days=1)
# A purge that dies keeps the chore leased this long; then another process may take it over.
PURGE_LEASE = timedelta(hours=1)
# Telegram redelivers an update for at most a day; two days covers a long outage's backlog.
UPDATE_IDS_KEPT = timedelta(hours=48)
# Long enough to answer "did my card go out last week?", short enough that chat ids fade.
NOTICES_KEPT = timedelta(days=30)
# An invitation's row outlives its expiry this long, so "which link did she use?" is answerable
# for a while; the audit keeps its id, who made it and for which role.
INVITES_KEPT = timedelta(days=30)
# A typed request's summary is valid for a day (core.purchasing.summaries); its row, the
# requester's words sealed, is kept a week, long enough to answer a late tap, then deleted.
TYPED_REQUESTS_KEPT = timedelta(days=7)
# A closed PO's personal data is kept this long by default (MANZOORI_RETENTION_DAYS): over a
# year, so the yearly accounts and a supplier's late questions can still be answered.
RETENTION_DAYS = 400
# Jobs that are closed: nothing more can happen to them but a person's reissue of an expired
# one. FAILED_FINAL and UNKNOWN_OUTCOME wait for a person (NEEDS_REVIEW) and are never purged.
CLOSED: frozenset[State] = frozenset({State.SENT, State.REJECTED, State.CANCELLED, State.EXPIRED})
# Notices whose delivery is over, one way or another.
DELIVERED: frozenset[NoticeStatus] = frozenset(
    {NoticeStatus.SENT, NoticeStatus.FAILED, NoticeStatus.CANCELLED}
)
# Audit-detail keys that hold free text (people's notes and reasons, SMTP replies that may
# name an address, an approver's comment: core.messaging.pending.COMMENT_TEXT); ids, states, hashes,
# totals and times are kept.
FREE_TEXT_KEYS: frozenset[str] = frozenset({"note", "reason", "error", "decision", "text"})
# A LIMIT both databases accept, for a dry run that counts everything.
_UNLIMITED = 2**31 - 1
# The audit action that records a job's purge; its detail counts what was removed.
PURGED = "purged"


class Stale(StrEnum):
    """Rows deleted outright once older than their limit."""

    PROCESSED_UPDATES = "processed_updates"  # Telegram update ids, for de-duplication
    DELIVERED_NOTICES = "delivered_notices"  # Telegram messages owed and delivered (or not)
    SUBMISSIONS = "submissions"  # sheet hashes and file names, for re-upload idempotency
    EXPIRED_INVITES = "expired_invites"  # invitations past their expiry, used or not
    TYPED_REQUESTS = "typed_requests"  # typed requests' lines between summary and Submit


class Removed(StrEnum):
    """What the purge of one closed job removes; the counts its audit event records."""

    DRAFT_BODIES = "draft_bodies"  # sealed draft versions: lines, notes, supplier address
    DECISION_REASONS = "decision_reasons"  # rejection reasons typed by approvers
    AUDIT_TEXTS = "audit_texts"  # notes, reasons and error texts in audit details
    EFFECT_PAYLOADS = "effect_payloads"  # the send's receipt and last error text
    DOCUMENTS = "documents"  # the sealed PDFs the e-mails carried (buyer, supplier, approvers)
    SUPPLIER_TEXTS = "supplier_texts"  # the reasons and notes a supplier typed on its page
    SUPPLIER_MAIL = "supplier_mail"  # suppliers' e-mail replies: sender, subject, text, files


# The counts a purge prints: every Stale and Removed kind, plus these two.
JOBS = "jobs"  # closed jobs purged
STRANGER_NAMES = "stranger_names"  # Telegram first names of people holding no role


@dataclass(frozen=True)
class Retention:
    """How long each kind of data is kept; MANZOORI_RETENTION_DAYS sets `closed_jobs`."""

    closed_jobs: timedelta = timedelta(days=RETENTION_DAYS)
    update_ids: timedelta = UPDATE_IDS_KEPT
    notices: timedelta = NOTICES_KEPT

    def cutoff(self, kind: Stale, now: datetime) -> datetime:
        """Rows of `kind` older than this are deleted."""
        kept = {
            Stale.PROCESSED_UPDATES: self.update_ids,
            Stale.DELIVERED_NOTICES: self.notices,
            Stale.SUBMISSIONS: self.closed_jobs,  # a sheet's POs are closed by then
            Stale.EXPIRED_INVITES: INVITES_KEPT,
            Stale.TYPED_REQUESTS: TYPED_REQUESTS_KEPT,
        }[kind]
        return now - kept


@dataclass(frozen=True)
class Purge:
    """One purge: when, by whom (the audit actor), under which retention; `keep_names`: the
    configured admins (MANZOORI_ADMIN_IDS), who hold no role row but are not strangers."""

    stamp: Stamp
    retention: Retention
    keep_names: frozenset[int]


class RetentionTx(Protocol):
    """The store's side of the purge; every method runs inside one transaction."""

    async def count_stale(self, kind: Stale, before: datetime) -> int:
        """Rows of `kind` older than `before`."""

    async def delete_stale(self, kind: Stale, before: datetime, limit: int) -> int:
        """Delete up to `limit` rows of `kind` older than `before`; how many went."""

    async def stranger_names(self, keep: frozenset[int], limit: int) -> list[int]:
        """Up to `limit` users whose name is stored though they hold no role (nor are in
        `keep`)."""

    async def forget_names(self, user_ids: Collection[int]) -> int:
        """Blank the stored names of these users; how many were blanked."""

    async def jobs_to_purge(
        self, states: Collection[State], closed_before: datetime, limit: int
    ) -> list[str]:
        """Ids of unpurged jobs in `states` last changed before `closed_before`, oldest first."""

    async def purge_job(
        self, job_id: str, at: datetime, free_text: frozenset[str], *, apply: bool
    ) -> dict[Removed, int]:
        """Count (and, if `apply`, remove) a job's personal data and mark it purged at `at`."""

    async def append_audit(self, *events: AuditEvent) -> None:
        """Append audit events, in order."""

    async def claim_chore(
        self, name: str, owner: str, now: datetime, done_before: datetime, lease_until: datetime
    ) -> bool:
        """Lease the chore to `owner` until `lease_until` if it was last done at or before
        `done_before` and no lease on it runs at `now`; whether it was leased."""

    async def finish_chore(self, name: str, owner: str, done_at: datetime) -> None:
        """Record the chore done at `done_at` and release `owner`'s lease."""


class RetentionStore(Protocol):
    """Hands out the purge's transactions."""

    def begin(self) -> AbstractAsyncContextManager[RetentionTx]:
        """Open a transaction that commits on success and rolls back on error."""


async def survey(store: RetentionStore, purge: Purge) -> Counter[str]:
    """What `run` would remove now, per kind, changing nothing (`manzoori purge --dry-run`);
    each job is counted in a transaction of its own, as `run` purges it."""
    now, counts = purge.stamp.at, Counter[str]()
    async with store.begin() as tx:
        for kind in Stale:
            counts[kind.value] = await tx.count_stale(kind, purge.retention.cutoff(kind, now))
        counts[STRANGER_NAMES] = len(await tx.stranger_names(purge.keep_names, limit=_UNLIMITED))
        closed_before = now - purge.retention.closed_jobs
        job_ids = await tx.jobs_to_purge(CLOSED, closed_before, limit=_UNLIMITED)
    counts[JOBS] = len(job_ids)
    for job_id in job_ids:
        async with store.begin() as tx:
            removed = await tx.purge_job(job_id, now, FREE_TEXT_KEYS, apply=False)
        counts.update({kind.value: n for kind, n in removed.items()})
    return _every_kind(counts)


async def run(store: RetentionStore, purge: Purge) -> Counter[str]:
    """Remove everything past its retention, in short transactions; what was removed, per
    kind. Each purged job gets a `purged` audit event saying what went."""
    now, counts = purge.stamp.at, Counter[str]()
    for kind in Stale:
        before = purge.retention.cutoff(kind, now)
        while True:
            async with store.begin() as tx:
                deleted = await tx.delete_stale(kind, before, BATCH)
            counts[kind.value] += deleted
            if deleted < BATCH:
                break
    while True:
        async with store.begin() as tx:
            strangers = await tx.stranger_names(purge.keep_names, BATCH)
            counts[STRANGER_NAMES] += await tx.forget_names(strangers)
        if len(strangers) < BATCH:
            break
    await _purge_closed_jobs(store, purge, counts)
    return _every_kind(counts)


async def _purge_closed_jobs(store: RetentionStore, purge: Purge, counts: Counter[str]) -> None:
    """One transaction per job: its data removed and its `purged` event, or neither."""
    closed_before = purge.stamp.at - purge.retention.closed_jobs
    while True:
        async with store.begin() as tx:
            job_ids = await tx.jobs_to_purge(CLOSED, closed_before, BATCH)
        for job_id in job_ids:
            async with store.begin() as tx:
                removed = await tx.purge_job(job_id, purge.stamp.at, FREE_TEXT_KEYS, apply=True)
                detail = {
                    "removed": {kind.value: removed.get(kind, 0) for kind in Removed},
                    "retention_days": purge.retention.closed_jobs.days,
                }
                event = AuditEvent.stamped(purge.stamp, PURGED, detail, job_id=job_id)
                await tx.append_audit(event)
            counts[JOBS] += 1
            counts.update({kind.value: n for kind, n in removed.items()})
        if len(job_ids) < BATCH:
            return


def _every_kind(counts: Counter[str]) -> Counter[str]:
    """Every kind present, zeros included, so a report always has the same lines."""
    kinds = [*(k.value for k in Stale), STRANGER_NAMES, JOBS, *(k.value for k in Removed)]
    return Counter({kind: counts[kind] for kind in kinds})


async def run_if_due(store: RetentionStore, purge: Purge, owner: str) -> Counter[str] | None:
    """The daily purge: run it if no process did in the last PURGE_EVERY and none is at it
    now; what it removed, or None when it was not due. A restart neither repeats nor skips a
    day: the last run's time is stored, and a run that died is taken over once its lease ends."""
    now = purge.stamp.at
    async with store.begin() as tx:
        due_before, lease_until = now - PURGE_EVERY, now + PURGE_LEASE
        if not await tx.claim_chore(PURGE_CHORE, owner, now, due_before, lease_until):
            return None
    counts = await run(store, purge)
    async with store.begin() as tx:  # done as of its start, so the days do not drift
        await tx.finish_chore(PURGE_CHORE, owner, now)
    return counts
