"""SqlStore: core's ports on SQLAlchemy Core, for SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Collection, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import and_, bindparam, delete, func, insert, or_, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from core.approval.policies import Decision, Role
from core.drafting.drafts import Draft, canonical_bytes, draft_hash, from_canonical
from core.drafting.terms import Terms
from core.errors import (
    AlreadyDecided,
    DraftPurged,
    InsertConflict,
    StaleJob,
    StoreBusy,
    StoredDataError,
    UnknownJob,
)
from core.jobs.effects import EffectStatus
from core.jobs.jobs import AuditEvent, Document, Effect, Job, Stamp
from core.jobs.states import State
from store import schema, wakeups
from store.audit import AuditQueries
from store.clients import ClientDecisionQueries
from store.counts import CountQueries
from store.engine import READING, is_busy
from store.files import FileQueries
from store.group_commit import GroupCommit
from store.mailbox import MailboxQueries
from store.notices import NoticeQueries
from store.people import PeopleQueries
from store.purchasing import PurchasingQueries
from store.retention import RetentionQueries
from store.rows import (
    audit_from_row,
    decision_from_row,
    effect_from_row,
    job_from_row,
    plain,
    values_of,
)
from store.sealing import Sealer
from store.suppliers import SupplierQueries
from store.typed import TypedRequestQueries
from store.versioned import Lease, claim_rows, compare_and_set, update_leased

if TYPE_CHECKING:
    from store.batched import SqlBatchTx

T = TypeVar("T", bound="SqlTx")

# The statements every use case runs, built once (building one costs more than running it).
_jobs, _drafts, _decisions = schema.jobs, schema.drafts, schema.decisions
_effects, _roles = schema.effects, schema.user_roles
_JOB = select(_jobs).where(_jobs.c.id == bindparam("id"))
_JOB_BY_PO = select(_jobs).where(_jobs.c.po_number == bindparam("po_number"))
_INSERT_JOB = insert(_jobs)
_INSERT_DRAFT = insert(_drafts)
# A sealed draft this long (some 300 lines) or longer is opened in a thread, not on the loop.
_OPEN_ON_LOOP = 64 * 1024
_DRAFT = select(_drafts).where(
    _drafts.c.job_id == bindparam("job_id"), _drafts.c.version == bindparam("version")
)
_DECISIONS = (
    select(_decisions).where(_decisions.c.job_id == bindparam("job_id")).order_by(_decisions.c.id)
)
_INSERT_DECISION = insert(_decisions)
_INSERT_AUDIT = insert(schema.audit_events)
_INSERT_EFFECT = insert(_effects)
_NOTIFY = text(f"SELECT pg_notify('{wakeups.CHANNEL}', :payload)")
_DOCUMENT = select(schema.effect_documents).where(schema.effect_documents.c.key == bindparam("key"))
_INSERT_DOCUMENT = insert(schema.effect_documents)
_HAS_DOCUMENT = select(schema.effect_documents.c.key).where(
    schema.effect_documents.c.key == bindparam("key")
)
_EFFECT = select(_effects).where(_effects.c.key == bindparam("key"))
_EFFECTS_FOR = (
    select(_effects)
    .where(_effects.c.job_id == bindparam("job_id"))
    .order_by(_effects.c.created_at, _effects.c.key)
)
_ROLES = select(_roles.c.role).where(_roles.c.user_id == bindparam("user_id"))
_ROLES_OF = select(_roles.c.user_id, _roles.c.role).where(
    _roles.c.user_id.in_(bindparam("user_ids", expanding=True))
)


class SqlTx(
    CountQueries,
    PurchasingQueries,
    FileQueries,
    PeopleQueries,
    NoticeQueries,
    RetentionQueries,
    AuditQueries,
    ClientDecisionQueries,
    SupplierQueries,
    MailboxQueries,
    TypedRequestQueries,
):
    """One transaction on one connection; implements core.ports.Tx."""

    def __init__(
        self,
        conn: AsyncConnection,
        sealer: Sealer,
        terms_cache: dict[str, Terms],
        *,
        reading: bool = False,
    ) -> None:
        self.conn = conn
        self._sealer = sealer
        self._postgres = conn.dialect.name == "postgresql"
        self._reading = reading
        # The runners this transaction gives work to (store.wakeups), woken once it commits.
        self.owed: set[str] = set()
        self._terms_cache = terms_cache

    async def job(self, job_id: str) -> Job:
        """The job with that id, or raise UnknownJob."""
        row = (await self.conn.execute(_JOB, {"id": job_id})).first()
        if row is None:
            raise UnknownJob(f"no job {job_id}")
        return job_from_row(row)

    async def job_by_po(self, po_number: str) -> Job | None:
        """The job with that PO number, if any."""
        row = (await self.conn.execute(_JOB_BY_PO, {"po_number": po_number})).first()
        return None if row is None else job_from_row(row)

    async def jobs_past_deadline(self, state: State, now: datetime, limit: int) -> list[Job]:
        """Jobs in a state whose decision deadline has passed, oldest first."""
        t = schema.jobs
        query = (
            select(t)
            .where(t.c.state == state.value, t.c.decision_deadline <= now)
            .order_by(t.c.created_at)
            .limit(limit)
        )
        return [job_from_row(row) for row in await self.conn.execute(query)]

    async def insert_job(self, job: Job) -> None:
        """Add a new job row; a PO number taken by a concurrent request raises InsertConflict."""
        try:
            await self.conn.execute(_INSERT_JOB, values_of(job))
        except IntegrityError as error:
            raise InsertConflict(f"{job.po_number} was taken meanwhile") from error

    async def update_job(self, job: Job, **changes: Any) -> Job:
        """Compare-and-set on (id, state, version); bump version; raise StaleJob on a miss."""
        if "state" in changes:
            changes["state"] = State(changes["state"])
        read_at = {"id": job.id, "state": job.state.value}
        if not await compare_and_set(self.conn, _jobs, read_at, job.version, plain(changes)):
            raise StaleJob(f"job {job.po_number} moved on from {job.state.value} v{job.version}")
        return replace(job, version=job.version + 1, **changes)

    async def insert_draft(self, job_id: str, version: int, draft: Draft, at: datetime) -> None:
        """Append one immutable draft version, its body sealed; InsertConflict if a concurrent
        writer stored that version first (PostgreSQL makes the loser wait, then refuses it)."""
        try:
            await self.conn.execute(
                _INSERT_DRAFT,
                {
                    "job_id": job_id,
                    "version": version,
                    "hash": draft_hash(draft),
                    "supplier_id": draft.supplier_id,
                    "total_paisa": draft.total_paisa,
                    "line_count": len(draft.lines),
                    "body_encrypted": self._sealer.seal(canonical_bytes(draft)),
                    "created_at": at,
                },
            )
        except IntegrityError as error:
            raise InsertConflict(
                f"draft v{version} of job {job_id} was stored meanwhile"
            ) from error
        await self.insert_order_lines(job_id, version, draft)

    async def draft(self, job_id: str, version: int) -> Draft:
        """One stored draft version, opened and checked against its hash."""
        row = (await self.conn.execute(_DRAFT, {"job_id": job_id, "version": version})).one()
        if not row.body_encrypted:
            raise DraftPurged(
                f"draft v{version} of job {job_id} was removed by the retention purge"
            )
        if len(row.body_encrypted) < _OPEN_ON_LOOP:
            draft = self._opened(row.body_encrypted, row.hash)
        else:  # a long sheet's draft: a tenth of a second, which taps must not wait for
            draft = await asyncio.to_thread(self._opened, row.body_encrypted, row.hash)
        if draft is None:
            raise StoredDataError(f"stored draft {job_id} v{version} does not match its hash")
        return draft

    def _opened(self, sealed: bytes, expected_hash: str) -> Draft | None:
        """The draft sealed in `sealed`; None if it is not the one `expected_hash` names."""
        draft = from_canonical(self._sealer.open(sealed))
        return draft if draft_hash(draft) == expected_hash else None

    async def decisions(self, job_id: str) -> list[Decision]:
        """Every decision on the job, oldest first."""
        rows = await self.conn.execute(_DECISIONS, {"job_id": job_id})
        return [decision_from_row(row) for row in rows]

    async def insert_decision(self, decision: Decision) -> None:
        """Record a decision; the unique constraint turns a repeat into AlreadyDecided."""
        await self.insert_decisions([decision])

    async def insert_decisions(self, decisions: Sequence[Decision]) -> None:
        """Record decisions in one statement (insert_decision's)."""
        if decisions:
            try:
                await self.conn.execute(_INSERT_DECISION, [values_of(d) for d in decisions])
            except IntegrityError as error:
                raise AlreadyDecided("this reviewer already decided this draft") from error

    async def append_audit(self, *events: AuditEvent) -> None:
        """Append audit events, in order, in one statement."""
        if events:
            await self.conn.execute(_INSERT_AUDIT, [values_of(event) for event in events])

    async def insert_effect(self, effect: Effect) -> None:
        """Add an outbox row; its key is the primary key."""
        await self.insert_effects([effect])

    async def insert_effects(self, effects: Sequence[Effect]) -> None:
        """Add outbox rows in one statement (insert_effect's)."""
        if effects:
            await self.conn.execute(_INSERT_EFFECT, [values_of(effect) for effect in effects])
            self.owed.add(wakeups.OUTBOX)

    async def finish(self) -> None:
        """Write what the transaction held back, before its COMMIT: nothing, here (a burst's
        transaction holds some of its inserts back, store.batched)."""

    async def document(self, key: str) -> Document | None:
        """The PDF kept for an outbox row, opened and checked against its sha256."""
        row = (await self.conn.execute(_DOCUMENT, {"key": key})).one_or_none()
        if row is None:
            return None
        if not row.pdf_encrypted:
            raise DraftPurged(f"the document of {key} was removed by the retention purge")
        pdf = self._sealer.open(row.pdf_encrypted)
        if hashlib.sha256(pdf).hexdigest() != row.sha256:
            raise StoredDataError(f"the stored document of {key} does not match its sha256")
        return Document(pdf, row.sha256)

    async def has_document(self, key: str) -> bool:
        """Whether a PDF was kept for the outbox row."""
        found = await self.conn.execute(_HAS_DOCUMENT, {"key": key})
        return found.first() is not None

    async def insert_document(self, key: str, document: Document, at: datetime) -> None:
        """Keep an outbox row's PDF, sealed; InsertConflict if one was kept meanwhile."""
        values = {
            "key": key,
            "pdf_encrypted": self._sealer.seal(document.pdf),
            "sha256": document.sha256,
            "size": len(document.pdf),
            "created_at": at,
        }
        try:
            await self.conn.execute(_INSERT_DOCUMENT, values)
        except IntegrityError as error:
            raise InsertConflict(f"a document for {key} was kept meanwhile") from error

    async def effect(self, key: str) -> Effect:
        """The outbox row with that key."""
        return effect_from_row((await self.conn.execute(_EFFECT, {"key": key})).one())

    async def effects_for(self, job_id: str) -> list[Effect]:
        """A job's outbox rows, oldest first."""
        rows = await self.conn.execute(_EFFECTS_FOR, {"job_id": job_id})
        return [effect_from_row(row) for row in rows]

    async def update_effect(self, effect: Effect, **changes: Any) -> Effect:
        """Compare-and-set on (key, version); bump version; raise LeaseLost on a miss."""
        updated = await update_leased(self.conn, _effects, effect, changes, "runner")
        if changes.get("status") == EffectStatus.PENDING:  # due again: a retry, Send again
            self.owed.add(wakeups.OUTBOX)
        return updated

    async def claim_due(
        self, now: datetime, owner: str, lease_until: datetime, limit: int
    ) -> list[Effect]:
        """Lease due pending rows, and claimed rows whose lease ran out, to `owner`."""
        rows = await claim_rows(self.conn, schema.effects, now, Lease(owner, lease_until), limit)
        return [effect_from_row(row) for row in rows]

    async def stalled(self, now: datetime, limit: int) -> list[Effect]:
        """Started rows whose lease ran out: their runner died mid-attempt."""
        t = schema.effects
        query = (
            select(t)
            .where(t.c.status == EffectStatus.STARTED.value, t.c.lease_until < now)
            .limit(limit)
        )
        if self._postgres:
            query = query.with_for_update(skip_locked=True)
        return [effect_from_row(row) for row in await self.conn.execute(query)]

    async def open_work(self, now: datetime) -> int:
        """Rows that are due now, leased, or mid-attempt."""
        t = schema.effects
        busy = or_(
            t.c.status.in_([EffectStatus.CLAIMED.value, EffectStatus.STARTED.value]),
            and_(t.c.status == EffectStatus.PENDING.value, t.c.next_attempt_at <= now),
        )
        return int((await self.conn.execute(select(func.count()).where(busy))).scalar_one())

    async def roles(self, user_id: int) -> frozenset[Role]:
        """The roles a user holds now."""
        rows = await self.conn.execute(_ROLES, {"user_id": user_id})
        return frozenset(Role(role) for role in rows.scalars())

    async def roles_of(self, user_ids: Collection[int]) -> dict[int, frozenset[Role]]:
        """The roles each of these users holds now (none: an empty set), in one query."""
        held: dict[int, set[Role]] = {user_id: set() for user_id in user_ids}
        if held:
            for user_id, role in await self.conn.execute(_ROLES_OF, {"user_ids": list(held)}):
                held[int(user_id)].add(Role(role))
        return {user_id: frozenset(roles) for user_id, roles in held.items()}

    async def grant(self, user_id: int, role: Role, by: str, now: datetime) -> bool:
        """Give a user a role; False if they had it already."""
        if role in await self.roles(user_id):
            return False
        await self.conn.execute(
            insert(schema.user_roles).values(
                user_id=user_id, role=role.value, granted_by=by, granted_at=now
            )
        )
        await self.append_audit(
            AuditEvent.stamped(
                Stamp(by, now), "grant_role", {"user_id": user_id, "role": role.value}
            )
        )
        return True

    async def revoke(self, user_id: int, by: str, now: datetime) -> frozenset[Role]:
        """Take every role from a user; returns what they had (nothing: nothing written)."""
        held = await self.roles(user_id)
        if not held:
            return held
        t, groups = schema.user_roles, schema.user_groups
        left = await self.groups_of(user_id)
        await self.conn.execute(delete(t).where(t.c.user_id == user_id))
        await self.conn.execute(delete(groups).where(groups.c.user_id == user_id))
        detail: dict[str, Any] = {"user_id": user_id, "roles": sorted(r.value for r in held)}
        if left:
            detail["groups"] = sorted(left)
        await self.append_audit(AuditEvent.stamped(Stamp(by, now), "revoke_roles", detail))
        return held

    async def jobs_in_states(self, states: Collection[State]) -> list[Job]:
        """Every job in one of `states`, oldest first."""
        t = schema.jobs
        query = (
            select(t)
            .where(t.c.state.in_([s.value for s in states]))
            .order_by(t.c.created_at, t.c.po_number)  # one sheet's POs share a timestamp
        )
        return [job_from_row(row) for row in await self.conn.execute(query)]

    async def jobs_of(self, requester_id: int, limit: int) -> list[Job]:
        """A requester's jobs, newest first."""
        t = schema.jobs
        query = (
            select(t)
            .where(t.c.requester_id == requester_id)
            .order_by(t.c.created_at.desc(), t.c.po_number.desc())
            .limit(limit)
        )
        return [job_from_row(row) for row in await self.conn.execute(query)]

    async def list_jobs(self, states: Collection[State] | None, limit: int) -> list[Job]:
        """Jobs, newest first, optionally only those in `states`."""
        query = select(schema.jobs).order_by(schema.jobs.c.created_at.desc()).limit(limit)
        if states is not None:
            query = query.where(schema.jobs.c.state.in_([s.value for s in states]))
        return [job_from_row(row) for row in await self.conn.execute(query)]

    async def audit(self, job_id: str) -> list[AuditEvent]:
        """A job's audit trail, oldest first."""
        t = schema.audit_events
        rows = await self.conn.execute(select(t).where(t.c.job_id == job_id).order_by(t.c.id))
        return [audit_from_row(row) for row in rows]


@contextmanager
def _busy_as_store_busy() -> Iterator[None]:
    """Map "the database is busy" to core's StoreBusy at the boundary; nothing else."""
    try:
        yield
    except DBAPIError as error:
        if is_busy(error):
            raise StoreBusy(f"the database is busy: {error.orig}") from error
        raise


class SqlStore:
    """Hands out SqlTx transactions on one engine; implements core.ports.Store."""

    def __init__(self, engine: AsyncEngine, data_key: bytes | str) -> None:  # keys, comma-separated
        self.engine = engine
        # SQLite's one writer at a time: this process's writers share transactions and their
        # COMMITs, each in a savepoint of its own (store/group_commit.py).
        self.group = GroupCommit(engine) if engine.dialect.name == "sqlite" else None
        # The same pool, every connection marked for store.engine's "begin" event as a
        # reader's once, rather than per read.
        self._reader = engine.execution_options(**{READING: True})
        self.sealer = self._sealer = Sealer(data_key)  # its keys: store.resealing
        self._terms_cache: dict[str, Terms] = {}  # versions are immutable: safe to keep
        self.wakeups = wakeups.Wakeups()  # the runners' events, set as their work commits

    def begin(self) -> AbstractAsyncContextManager[SqlTx]:
        """A read-write transaction that commits on success and rolls back on error, and
        returns only once its writes are durable; a busy database raises StoreBusy. On SQLite
        it is a savepoint in a transaction shared with this process's other writers of the
        moment (store.group_commit): an error rolls back this block's writes only."""
        return self.transaction(SqlTx)

    def begin_batch(self) -> AbstractAsyncContextManager[SqlBatchTx]:
        """`begin`, for a burst of decisions made together (store.batched)."""
        from store.batched import SqlBatchTx  # it builds on SqlTx, defined here

        return self.transaction(SqlBatchTx)

    @asynccontextmanager
    async def transaction(self, kind: type[T]) -> AsyncIterator[T]:
        """`begin`, its transaction a `kind` (store.batched's, for a burst of decisions)."""
        with _busy_as_store_busy():
            async with self.group.transaction() if self.group else self.engine.begin() as conn:
                tx = kind(conn, self._sealer, self._terms_cache)
                yield tx
                await tx.finish()
                # On PostgreSQL, delivered to the listeners if, and when, it commits.
                if tx.owed and conn.dialect.name == "postgresql":
                    await conn.execute(_NOTIFY, {"payload": ",".join(sorted(tx.owed))})
        self.wakeups.fire(tx.owed)

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[SqlTx]:
        """A read-only transaction (typed as core.ports.ReadTx by the ports): on SQLite a
        deferred BEGIN that takes no write lock and refuses writes, on PostgreSQL READ ONLY."""
        with _busy_as_store_busy():
            async with self._reader.connect() as conn, conn.begin():
                if conn.dialect.name == "postgresql":
                    await conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                yield SqlTx(conn, self._sealer, self._terms_cache, reading=True)

    async def close(self) -> None:
        """Release the engine's connections."""
        await self.engine.dispose()
