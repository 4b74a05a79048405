"""A transaction for many decisions at once (a burst of taps): what they all read is read
once, in a few queries, and remembered for the rest of the transaction; each decision writes
in a savepoint of its own.

A hundred taps that each decided in a transaction of their own read the same approvers,
groups and delegations a hundred times, and their jobs, decisions and roles one row at a
time: eighteen statements a tap, half the bot's CPU in a burst. Here `prefetch` reads the
jobs, decisions, roles, languages, supplier answers and delegations of the whole burst in
one query each; the reads the decisions make then come from memory.

What is remembered stays true for the transaction because it is changed only through this
transaction's own writes, which keep it up to date: a job updated is remembered as written,
a decision or supplier answer inserted makes its job's list be read again, and a change of
roles, groups, delegations or language forgets everything of people. On SQLite the whole
transaction holds the write lock (store.group_commit); on PostgreSQL a concurrent writer of
the same job loses or wins its compare-and-set as it would against single decisions
(core.jobs.transitions), and its decisions' unique keys still refuse a repeat.

The inserts a decision only adds (the decision itself, its audit events, the notices and
outbox rows it owes, the name of the person who tapped, the update id it claims) are held
back and written together before the COMMIT, one statement each for the whole burst instead
of one per tap; a decision held is remembered in its job's list at once, so the next tap on
that job sees it. A statement that touches their tables writes them first (`_Flushing`), so
any read sees them. If writing them fails (an update claimed before, a decision or key that
another transaction took meanwhile), the whole burst is rolled back as InsertConflict, and
each tap is decided again on its own.

A decision's part (`each`) has no savepoint, which would cost two statements a tap. A part
refused before it wrote anything (the usual refusals: a stranger, a repeat, not their turn)
only takes back what it held and remembered. One that fails after it wrote (a concurrent
writer won the job's compare-and-set; a statement failed, which on PostgreSQL breaks the
transaction) cannot be undone alone: it is raised as BurstUndone, the burst rolls back, and
each tap is decided again on its own, as after InsertConflict.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import TextClause, bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.util import find_tables

from core.approval.delegations import Delegation
from core.approval.policies import Decision, Role
from core.drafting.terms import Terms
from core.errors import AlreadyDecided, BurstUndone, InsertConflict
from core.jobs.answers import Answer, Outcome
from core.jobs.jobs import AuditEvent, Effect, Job
from core.jobs.notices import Notice
from store import schema, wakeups
from store.rows import decision_from_row, job_from_row
from store.sealing import Sealer
from store.sql import SqlTx

K = TypeVar("K")
V = TypeVar("V")

_jobs, _decisions, _answers = schema.jobs, schema.decisions, schema.supplier_answers
_JOBS = select(_jobs).where(_jobs.c.id.in_(bindparam("ids", expanding=True)))
_DECISIONS_OF = (
    select(_decisions)
    .where(_decisions.c.job_id.in_(bindparam("ids", expanding=True)))
    .order_by(_decisions.c.id)
)
_updates = schema.processed_updates
_CLAIMED = select(_updates.c.update_id).where(
    _updates.c.update_id.in_(bindparam("ids", expanding=True))
)
_ANSWERS_OF = (
    select(_answers)
    .where(_answers.c.job_id.in_(bindparam("ids", expanding=True)))
    .order_by(_answers.c.answered_at, _answers.c.draft_version, _answers.c.round)
)


@dataclass
class _Memory:
    """What the transaction read, by key; a key missing is read from the database."""

    jobs: dict[str, Job] = field(default_factory=dict)
    decisions: dict[str, list[Decision]] = field(default_factory=dict)
    answers: dict[str, list[Answer]] = field(default_factory=dict)
    roles: dict[int, frozenset[Role]] = field(default_factory=dict)
    languages: dict[int, str | None] = field(default_factory=dict)
    members: dict[str, frozenset[int]] = field(default_factory=dict)
    # Every delegation that did not end before `since` (None: not read).
    delegations: tuple[datetime, list[Delegation]] | None = None

    def copy(self) -> _Memory:
        return _Memory(
            dict(self.jobs), dict(self.decisions), dict(self.answers), dict(self.roles),
            dict(self.languages), dict(self.members), self.delegations,
        )  # fmt: skip

    def forget_people(self) -> None:
        self.roles.clear()
        self.languages.clear()
        self.members.clear()
        self.delegations = None


async def _kept_or_read(kept: dict[K, V], key: K, read: Callable[[K], Awaitable[V]]) -> V:
    """What is kept under `key`, read (and kept) if it is not."""
    found = kept.get(key)
    if found is None:
        found = kept[key] = await read(key)
    return found


async def _all_kept(
    kept: dict[K, V], keys: Collection[K], read: Callable[[list[K]], Awaitable[Mapping[K, V]]]
) -> dict[K, V]:
    """What is kept under each of `keys`, those missing read (and kept) in one call."""
    missing = [key for key in keys if key not in kept]
    if missing:
        kept.update(await read(missing))
    return {key: kept[key] for key in keys}


# The tables of the inserts held back (_Held): a statement on any of them writes them first.
_HELD_TABLES = frozenset(
    ("decisions", "audit_events", "notices", "effects", "telegram_users", "processed_updates")
)


@dataclass(frozen=True)
class _Kind:
    """What a statement may do, as far as SqlBatchTx cares."""

    touches_held: bool  # reads or writes a table of the held inserts
    writes: bool  # anything but a SELECT


@functools.lru_cache(maxsize=512)  # the store's statements are mostly built once, at import
def _kind(statement: object) -> _Kind:
    """What `statement` (a Core statement or SQL text) may do."""
    if isinstance(statement, str | TextClause):
        text = statement if isinstance(statement, str) else statement.text
        touches = any(name in text for name in _HELD_TABLES)
        return _Kind(touches, not text.lstrip()[:6].upper().startswith("SELECT"))
    found = find_tables(
        statement,  # type: ignore[arg-type]
        include_aliases=True,
        include_joins=True,
        include_selects=True,
        include_crud=True,
    )
    touches = any(getattr(table, "name", None) in _HELD_TABLES for table in found)
    return _Kind(touches, not getattr(statement, "is_select", False))


@dataclass
class _Held:
    """Inserts held back to the end of the transaction, in the order they were made."""

    decisions: list[Decision] = field(default_factory=list)
    audit: list[AuditEvent] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    met: dict[int, tuple[str, datetime]] = field(default_factory=dict)  # user id: name, at
    claims: dict[int, datetime] = field(default_factory=dict)  # update id: when

    def __bool__(self) -> bool:
        return bool(
            self.decisions or self.audit or self.notices or self.effects or self.met
            or self.claims
        )  # fmt: skip

    def copy(self) -> _Held:
        return _Held(
            list(self.decisions), list(self.audit), list(self.notices), list(self.effects),
            dict(self.met), dict(self.claims),
        )  # fmt: skip


class _Flushing:
    """The transaction's connection, which writes the held inserts before any statement that
    touches their tables, and counts the statements that changed something (SqlBatchTx.each):
    those that write, and those that failed (on PostgreSQL, a failed statement breaks the
    transaction)."""

    def __init__(self, conn: AsyncConnection, tx: SqlBatchTx) -> None:
        self._conn, self._tx = conn, tx

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    async def _run(
        self, call: Callable[..., Awaitable[Any]], statement: Any, *args: Any, **kwargs: Any
    ) -> Any:
        kind, tx = _kind(statement), self._tx
        if tx.holding and kind.touches_held:
            await tx.flush()
        tx.changes += kind.writes
        try:
            return await call(statement, *args, **kwargs)
        except BaseException:
            tx.changes += not kind.writes
            raise

    async def execute(self, statement: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._run(self._conn.execute, statement, *args, **kwargs)

    async def exec_driver_sql(self, statement: str, *args: Any, **kwargs: Any) -> Any:
        return await self._run(self._conn.exec_driver_sql, statement, *args, **kwargs)

    async def scalar(self, statement: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._run(self._conn.scalar, statement, *args, **kwargs)

    async def stream(self, statement: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._run(self._conn.stream, statement, *args, **kwargs)


class SqlBatchTx(SqlTx):
    """SqlTx, remembering what it read (see the module's text)."""

    def __init__(
        self, conn: AsyncConnection, sealer: Sealer, terms_cache: dict[str, Terms]
    ) -> None:
        super().__init__(conn, sealer, terms_cache)
        self.conn = _Flushing(conn, self)  # type: ignore[assignment]
        self._memory = _Memory()
        self._held = _Held()
        self.changes = 0  # statements that wrote or failed (_Flushing)
        self._claimed: set[int] = set()  # update ids claimed before the burst (prefetch)
        self._undone: BurstUndone | None = None  # a part failed after it wrote

    @property
    def holding(self) -> bool:
        """Whether inserts are held back, to be written before the next statement on their
        tables or the COMMIT."""
        return bool(self._held)

    async def flush(self) -> None:
        """Write the held inserts, one statement for each table; InsertConflict (the whole
        burst rolled back) if one of them cannot be written."""
        held, self._held = self._held, _Held()
        try:
            await super().insert_decisions(held.decisions)
            await super().append_audit(*held.audit)
            await super().insert_notice(*held.notices)
            await super().insert_effects(held.effects)
            await super().met_all(held.met)
            await super().claim_updates(held.claims)
        except (IntegrityError, AlreadyDecided) as error:
            raise InsertConflict(f"a burst's held inserts: {error}") from error

    async def finish(self) -> None:
        """The held inserts, before the COMMIT (flush). BurstUndone again if a part failed
        after it wrote, even if its caller went on: that part's writes must not be committed."""
        if self._undone is not None:
            raise self._undone
        await self.flush()

    async def prefetch(
        self, job_ids: Collection[str], user_ids: Collection[int], update_ids: Collection[int]
    ) -> None:
        """Read the jobs, their decisions and supplier answers, the delegations since the
        oldest of them, the roles and languages of `user_ids` and of every decider, and which
        of `update_ids` were claimed before (claim_update)."""
        memory, ids = self._memory, sorted(set(job_ids))
        if update_ids:
            claimed = await self.conn.execute(_CLAIMED, {"ids": sorted(set(update_ids))})
            self._claimed.update(int(update_id) for (update_id,) in claimed)
        if ids:
            for row in await self.conn.execute(_JOBS, {"ids": ids}):
                memory.jobs[str(row.id)] = job_from_row(row)
            found: dict[str, list[Decision]] = {job_id: [] for job_id in ids}
            for row in await self.conn.execute(_DECISIONS_OF, {"ids": ids}):
                found[str(row.job_id)].append(decision_from_row(row))
            memory.decisions.update(found)
            answers: dict[str, list[Answer]] = {job_id: [] for job_id in ids}
            for row in await self.conn.execute(_ANSWERS_OF, {"ids": ids}):
                answers[str(row.job_id)].append(self._answer(row))
            memory.answers.update(answers)
        people = set(user_ids) | {d.reviewer_id for ds in memory.decisions.values() for d in ds}
        memory.roles.update(await super().roles_of(people))
        chosen = await super().languages(people)
        memory.languages.update({user_id: chosen.get(user_id) for user_id in people})
        if memory.jobs:
            since = min(job.created_at for job in memory.jobs.values())
            memory.delegations = (since, await super().delegations_since(since))

    @asynccontextmanager
    async def each(self) -> AsyncIterator[None]:
        """One decision's part, without a savepoint (see the module's text): an error takes
        back what the part held and remembered, and is raised; as BurstUndone if the part had
        changed the database."""
        kept, held, changes = self._memory.copy(), self._held.copy(), self.changes
        try:
            yield
        except BaseException as error:
            self._memory, self._held = kept, held
            if self.changes != changes and isinstance(error, Exception):
                self._undone = BurstUndone(f"a decision failed after it wrote: {error!r}")
                raise self._undone from error
            raise

    # Reads, from memory when remembered.

    async def job(self, job_id: str) -> Job:
        return await _kept_or_read(self._memory.jobs, job_id, super().job)

    async def job_by_po(self, po_number: str) -> Job | None:
        for job in self._memory.jobs.values():
            if job.po_number == po_number:
                return job
        found = await super().job_by_po(po_number)
        if found is not None:
            self._memory.jobs[found.id] = found
        return found

    async def decisions(self, job_id: str) -> list[Decision]:
        found = await _kept_or_read(self._memory.decisions, job_id, super().decisions)
        return list(found)  # a copy: the caller's changes must not reach what is kept

    async def supplier_answers(self, job_id: str) -> list[Answer]:
        found = await _kept_or_read(self._memory.answers, job_id, super().supplier_answers)
        return list(found)

    async def roles(self, user_id: int) -> frozenset[Role]:
        return (await self.roles_of([user_id]))[user_id]

    async def roles_of(self, user_ids: Collection[int]) -> dict[int, frozenset[Role]]:
        return await _all_kept(self._memory.roles, user_ids, super().roles_of)

    async def languages(self, user_ids: Collection[int]) -> dict[int, str]:
        chosen = await _all_kept(self._memory.languages, user_ids, self._languages_or_none)
        return {user_id: lang for user_id, lang in chosen.items() if lang is not None}

    async def _languages_or_none(self, user_ids: list[int]) -> dict[int, str | None]:
        """The languages people chose, None for those who chose none (remembered too)."""
        found = await super().languages(user_ids)
        return {user_id: found.get(user_id) for user_id in user_ids}

    async def group_members(self, groups: Collection[str]) -> dict[str, frozenset[int]]:
        return await _all_kept(self._memory.members, groups, super().group_members)

    async def delegations_since(self, since: datetime) -> list[Delegation]:
        read = self._memory.delegations
        if read is None or since < read[0]:
            found = await super().delegations_since(since)
            self._memory.delegations = (since, found)
            return list(found)
        return [d for d in read[1] if (d.until if d.ended_at is None else d.ended_at) > since]

    # Inserts held back (_Held).

    async def append_audit(self, *events: AuditEvent) -> None:
        self._held.audit.extend(events)

    async def insert_notice(self, *notices: Notice) -> None:
        if notices:
            self._held.notices.extend(notices)
            self.owed.add(wakeups.NOTICES)

    async def insert_effects(self, effects: Sequence[Effect]) -> None:
        if effects:
            self._held.effects.extend(effects)
            self.owed.add(wakeups.OUTBOX)

    async def claim_update(self, update_id: int, at: datetime) -> bool:
        """False for an update claimed before (as prefetch found) or in this burst already;
        else True, and held: one that another transaction claims meanwhile makes the COMMIT
        fail (flush: InsertConflict)."""
        if update_id in self._claimed or update_id in self._held.claims:
            return False
        self._held.claims[update_id] = at
        return True

    async def met(self, user_id: int, first_name: str, at: datetime, *, started: bool) -> None:
        if started:  # /start is no tap: written at once (_Flushing writes what is held first)
            await super().met(user_id, first_name, at, started=True)
        else:
            self._held.met[user_id] = (first_name, at)

    # Writes that change what is remembered: forgotten after the write, which may read first.

    async def update_job(self, job: Job, **changes: Any) -> Job:
        written = await super().update_job(job, **changes)
        self._memory.jobs[written.id] = written
        return written

    async def insert_job(self, job: Job) -> None:
        try:
            await super().insert_job(job)
        finally:
            self._memory.jobs.pop(job.id, None)

    async def insert_decision(self, decision: Decision) -> None:
        """Held (_Held); remembered in its job's list, if that is remembered (a new list, not
        changed in place: a part's copy of what is remembered keeps the old one)."""
        self._held.decisions.append(decision)
        kept = self._memory.decisions.get(decision.job_id)
        if kept is not None:
            self._memory.decisions[decision.job_id] = [*kept, decision]

    async def insert_supplier_answer(self, answer: Answer) -> None:
        try:
            await super().insert_supplier_answer(answer)
        finally:
            self._memory.answers.pop(answer.job_id, None)

    async def decide_supplier_answer(
        self, answer: Answer, outcome: Outcome, at: datetime, proposal_version: int | None = None
    ) -> None:
        try:
            await super().decide_supplier_answer(answer, outcome, at, proposal_version)
        finally:
            self._memory.answers.pop(answer.job_id, None)

    async def grant(self, user_id: int, role: Role, by: str, now: datetime) -> bool:
        try:
            return await super().grant(user_id, role, by, now)
        finally:  # after: the write itself may have read (and remembered) the roles before it
            self._memory.forget_people()

    async def revoke(self, user_id: int, by: str, now: datetime) -> frozenset[Role]:
        try:
            return await super().revoke(user_id, by, now)
        finally:
            self._memory.forget_people()

    async def set_groups(
        self, user_id: int, groups: Collection[str], by: str, at: datetime
    ) -> tuple[frozenset[str], frozenset[str]]:
        try:
            return await super().set_groups(user_id, groups, by, at)
        finally:
            self._memory.forget_people()

    async def insert_delegation(
        self, delegator: int, delegate: int, starts_at: datetime, until: datetime, by: str
    ) -> Delegation:
        try:
            return await super().insert_delegation(delegator, delegate, starts_at, until, by)
        finally:
            self._memory.forget_people()

    async def end_delegation(self, delegation_id: int, at: datetime) -> Delegation | None:
        try:
            return await super().end_delegation(delegation_id, at)
        finally:
            self._memory.forget_people()

    async def set_language(self, user_id: int, language: str, at: datetime) -> bool:
        try:
            return await super().set_language(user_id, language, at)
        finally:
            self._memory.languages.pop(user_id, None)
