"""SqlTx's queries for the purge (core.records.retention): stale rows, strangers' names, closed
jobs' personal data, and the chores table that makes the daily purge run once across processes."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, delete, func, or_, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from core.jobs.states import State
from core.records.retention import DELIVERED, Removed, Stale
from store import schema


def _stale(kind: Stale, before: datetime) -> tuple[Table, ColumnElement[bool]]:
    """The table rows of `kind` live in, and which of them are older than `before`."""
    if kind is Stale.PROCESSED_UPDATES:
        t = schema.processed_updates
        return t, t.c.processed_at < before
    if kind is Stale.DELIVERED_NOTICES:
        t = schema.notices
        delivered = t.c.status.in_([s.value for s in DELIVERED])
        return t, and_(delivered, t.c.updated_at < before)
    if kind is Stale.EXPIRED_INVITES:
        t = schema.invites
        return t, t.c.expires_at < before
    if kind is Stale.TYPED_REQUESTS:
        t = schema.typed_requests
        return t, t.c.created_at < before
    t = schema.submissions
    return t, t.c.created_at < before


def _redacted(detail: dict[str, Any], free_text: frozenset[str]) -> dict[str, Any] | None:
    """The audit detail without its free text, marked purged; None if it holds none."""
    if not any(detail.get(key) for key in free_text):
        return None
    kept = {key: value for key, value in detail.items() if key not in free_text}
    return {**kept, "purged": sorted(key for key in free_text if detail.get(key))}


class RetentionQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection
    _postgres: bool

    async def count_stale(self, kind: Stale, before: datetime) -> int:
        """Rows of `kind` older than `before`."""
        table, old = _stale(kind, before)
        query = select(func.count()).select_from(table).where(old)
        return int((await self.conn.execute(query)).scalar_one())

    async def delete_stale(self, kind: Stale, before: datetime, limit: int) -> int:
        """Delete up to `limit` rows of `kind` older than `before`; how many went."""
        table, old = _stale(kind, before)
        key = tuple_(*table.primary_key.columns)
        keys = [
            tuple(row)
            for row in await self.conn.execute(
                select(*table.primary_key.columns).where(old).limit(limit)
            )
        ]
        if not keys:
            return 0
        result = await self.conn.execute(delete(table).where(key.in_(keys), old))
        return int(result.rowcount)

    async def stranger_names(self, keep: frozenset[int], limit: int) -> list[int]:
        """Up to `limit` users whose name is stored though they hold no role (nor are in
        `keep`), by id."""
        users, roles = schema.telegram_users, schema.user_roles
        query = (
            select(users.c.user_id)
            .where(
                users.c.first_name != "",
                users.c.user_id.not_in(select(roles.c.user_id)),
                users.c.user_id.not_in(sorted(keep)),
            )
            .order_by(users.c.user_id)
            .limit(limit)
        )
        return [int(user_id) for user_id in (await self.conn.execute(query)).scalars()]

    async def forget_names(self, user_ids: Collection[int]) -> int:
        """Blank the stored names of these users; how many were blanked. The row stays: it
        says whether the bot may write to them, which /promote needs."""
        if not user_ids:
            return 0
        t = schema.telegram_users
        result = await self.conn.execute(
            update(t)
            .where(t.c.user_id.in_(list(user_ids)), t.c.first_name != "")
            .values(first_name="")
        )
        return int(result.rowcount)

    async def jobs_to_purge(
        self, states: Collection[State], closed_before: datetime, limit: int
    ) -> list[str]:
        """Ids of unpurged jobs in `states` last changed before `closed_before`, oldest first."""
        t = schema.jobs
        query = (
            select(t.c.id)
            .where(
                t.c.state.in_([s.value for s in states]),
                t.c.updated_at < closed_before,
                t.c.purged_at.is_(None),
            )
            .order_by(t.c.updated_at, t.c.id)
            .limit(limit)
        )
        return [str(job_id) for job_id in (await self.conn.execute(query)).scalars()]

    async def purge_job(
        self, job_id: str, at: datetime, free_text: frozenset[str], *, apply: bool
    ) -> dict[Removed, int]:
        """Count (and, if `apply`, remove) a job's personal data and mark it purged at `at`:
        sealed draft bodies emptied, decision reasons and free text in audit details dropped,
        the send's receipt and error text cleared, the PDFs it sent emptied, the supplier's
        reasons and notes dropped. Hashes, totals,
        states and times stay."""
        drafts, decisions, effects = schema.drafts, schema.decisions, schema.effects
        documents, answers = schema.effect_documents, schema.supplier_answers
        mail = schema.supplier_mail
        keys = select(effects.c.key).where(effects.c.job_id == job_id)
        targets: dict[Removed, tuple[Table, ColumnElement[bool], dict[str, Any]]] = {
            Removed.DRAFT_BODIES: (
                drafts,
                and_(drafts.c.job_id == job_id, func.length(drafts.c.body_encrypted) > 0),
                {"body_encrypted": b""},
            ),
            Removed.DECISION_REASONS: (
                decisions,
                and_(decisions.c.job_id == job_id, decisions.c.reason.is_not(None)),
                {"reason": None},
            ),
            Removed.EFFECT_PAYLOADS: (
                effects,
                and_(
                    effects.c.job_id == job_id,
                    or_(effects.c.result.is_not(None), effects.c.last_error.is_not(None)),
                ),
                {"result": None, "last_error": None, "version": effects.c.version + 1},
            ),
            Removed.DOCUMENTS: (
                documents,
                and_(documents.c.key.in_(keys), func.length(documents.c.pdf_encrypted) > 0),
                {"pdf_encrypted": b""},
            ),
            Removed.SUPPLIER_TEXTS: (
                answers,
                and_(answers.c.job_id == job_id, answers.c.text_encrypted.is_not(None)),
                {"text_encrypted": None},
            ),
            Removed.SUPPLIER_MAIL: (
                mail,
                and_(mail.c.job_id == job_id, mail.c.mail_encrypted.is_not(None)),
                {"mail_encrypted": None},
            ),
        }
        removed: dict[Removed, int] = {}
        for kind, (table, holding, cleared) in targets.items():
            if apply:
                result = await self.conn.execute(update(table).where(holding).values(cleared))
                removed[kind] = int(result.rowcount)
            else:
                query = select(func.count()).select_from(table).where(holding)
                removed[kind] = int((await self.conn.execute(query)).scalar_one())
        removed[Removed.AUDIT_TEXTS] = await self._redact_audit(job_id, free_text, apply=apply)
        if apply:
            t = schema.jobs
            await self.conn.execute(
                update(t)
                .where(t.c.id == job_id, t.c.purged_at.is_(None))
                .values(purged_at=at, version=t.c.version + 1)
            )
        return removed

    async def _redact_audit(self, job_id: str, free_text: frozenset[str], *, apply: bool) -> int:
        """Drop free text from a job's audit details (the trigger lets only this through)."""
        t = schema.audit_events
        rows = await self.conn.execute(select(t.c.id, t.c.detail).where(t.c.job_id == job_id))
        redactions = [
            (row.id, new) for row in rows if (new := _redacted(row.detail, free_text)) is not None
        ]
        if apply:
            for event_id, detail in redactions:
                await self.conn.execute(update(t).where(t.c.id == event_id).values(detail=detail))
        return len(redactions)

    async def claim_chore(
        self, name: str, owner: str, now: datetime, done_before: datetime, lease_until: datetime
    ) -> bool:
        """Lease the chore to `owner` until `lease_until` if it was last done at or before
        `done_before` and no lease on it runs at `now`; whether it was leased. A chore that is
        not due costs one read, not a write: every process asks every few minutes."""
        t = schema.chores
        due = and_(
            t.c.name == name,
            or_(t.c.done_at.is_(None), t.c.done_at <= done_before),
            or_(t.c.lease_until.is_(None), t.c.lease_until < now),
        )
        known = (await self.conn.execute(select(t.c.name).where(t.c.name == name))).first()
        if known is None:
            insert = (postgresql if self._postgres else sqlite).insert(t).values(name=name)
            await self.conn.execute(insert.on_conflict_do_nothing(index_elements=[t.c.name]))
        elif (await self.conn.execute(select(t.c.name).where(due))).first() is None:
            return False
        claimed = await self.conn.execute(
            update(t).where(due).values(lease_owner=owner, lease_until=lease_until)
        )
        return bool(claimed.rowcount)

    async def finish_chore(self, name: str, owner: str, done_at: datetime) -> None:
        """Record the chore done at `done_at` and release `owner`'s lease."""
        t = schema.chores
        await self.conn.execute(
            update(t)
            .where(t.c.name == name, t.c.lease_owner == owner)
            .values(done_at=done_at, lease_owner=None, lease_until=None)
        )
