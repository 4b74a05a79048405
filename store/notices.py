"""SqlTx's queries for the Telegram outbox (core.notices) and the role holders it serves."""

from __future__ import annotations

from dataclasses import asdict, fields
from datetime import datetime
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from core.errors import LeaseLost
from core.notices import Notice, NoticeKind, NoticeStatus
from core.policies import Role
from store import schema
from store.versioned import Lease, claim_rows, compare_and_set

_FIELDS = [f.name for f in fields(Notice)]


def _notice(row: Any) -> Notice:
    data = {name: row._mapping[name] for name in _FIELDS}
    return Notice(
        **{**data, "kind": NoticeKind(data["kind"]), "status": NoticeStatus(data["status"])}
    )


class NoticeQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection
    _postgres: bool

    async def holders(self, role: Role) -> list[int]:
        """Every user holding `role` now, by id."""
        t = schema.user_roles
        rows = await self.conn.execute(
            select(t.c.user_id).where(t.c.role == role.value).order_by(t.c.user_id)
        )
        return [int(user_id) for user_id in rows.scalars()]

    async def insert_notice(self, notice: Notice) -> None:
        """Owe a Telegram message; a notice with the same key already owed stays as it is."""
        values = {**asdict(notice), "kind": notice.kind.value, "status": notice.status.value}
        insert = (postgresql if self._postgres else sqlite).insert(schema.notices).values(values)
        await self.conn.execute(insert.on_conflict_do_nothing(index_elements=["key"]))

    async def claim_notices(
        self, now: datetime, owner: str, lease_until: datetime, limit: int, job_id: str | None
    ) -> list[Notice]:
        """Lease due pending notices (of one job, if given), and claimed ones whose lease ran
        out, to `owner`."""
        t = schema.notices
        among = None if job_id is None else t.c.job_id == job_id
        rows = await claim_rows(self.conn, t, now, Lease(owner, lease_until), limit, among)
        return [_notice(row) for row in rows]

    async def update_notice(self, notice: Notice, **changes: Any) -> Notice:
        """Compare-and-set on (key, version); bump version; raise LeaseLost on a miss."""
        if "status" in changes:
            changes["status"] = NoticeStatus(changes["status"]).value
        t = schema.notices
        read_at = and_(t.c.key == notice.key, t.c.version == notice.version)
        row = await compare_and_set(self.conn, t, read_at, **changes)
        if row is None:
            raise LeaseLost(f"{notice.key} changed under this sender")
        return _notice(row)

    async def notices_for(self, job_id: str) -> list[Notice]:
        """A job's notices, oldest first."""
        t = schema.notices
        rows = await self.conn.execute(
            select(t).where(t.c.job_id == job_id).order_by(t.c.created_at, t.c.key)
        )
        return [_notice(row) for row in rows]
