"""SqlTx's reads of the audit trail for an export (core.records.audit): each event with its job's PO
number and the draft version and hash it names, by time then id."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from core.records.audit import Logged
from store import schema
from store.rows import audit_from_row

_a, _jobs, _effects, _drafts = schema.audit_events, schema.jobs, schema.effects, schema.drafts
# The draft version an event names: its detail's, or that of the outbox row its "key" names
# (a send's events carry only the key). Its hash comes from the drafts row of that version.
_VERSION = func.coalesce(_a.c.detail["draft_version"].as_integer(), _effects.c.draft_version)
_LOGGED = (
    select(
        _a,
        _jobs.c.po_number,
        _VERSION.label("named_version"),
        _drafts.c.hash.label("named_hash"),
    )
    .select_from(
        _a.outerjoin(_jobs, _jobs.c.id == _a.c.job_id)
        .outerjoin(_effects, _effects.c.key == _a.c.detail["key"].as_string())
        .outerjoin(_drafts, and_(_drafts.c.job_id == _a.c.job_id, _drafts.c.version == _VERSION))
    )
    .order_by(_a.c.at, _a.c.id)
)
# Rows fetched from the cursor at a time: a year of events is read a page at a time.
_PAGE = 500


def _logged(row: Any) -> Logged:
    return Logged(audit_from_row(row), row.po_number, row.named_version, row.named_hash)


class AuditQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection

    async def audit_between(self, start: datetime, end: datetime) -> AsyncIterator[Logged]:
        """Every audit event at or after `start` and before `end` (about jobs or people), by
        time then id, streamed from one query a page at a time."""
        query = _LOGGED.where(_a.c.at >= start, _a.c.at < end)
        async for logged in self._stream(query):
            yield logged

    async def audit_logged(self, job_id: str) -> list[Logged]:
        """A job's whole audit trail, by time then id."""
        return [logged async for logged in self._stream(_LOGGED.where(_a.c.job_id == job_id))]

    async def _stream(self, query: Select[Any]) -> AsyncIterator[Logged]:
        result = await self.conn.stream(query.execution_options(yield_per=_PAGE))
        try:
            async for row in result:
                yield _logged(row)
        finally:
            await result.close()
