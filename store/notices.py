"""SqlTx's queries for the Telegram outbox (core.jobs.notices) and the role holders it serves."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from core.approval.policies import Role
from core.jobs.notices import Notice, NoticeKind
from store import schema, wakeups
from store.rows import notice_from_row, values_of
from store.versioned import Lease, claim_rows, insert_or_keep, update_leased

_t = schema.notices
_HOLDERS = (
    select(schema.user_roles.c.user_id)
    .where(schema.user_roles.c.role == bindparam("role"))
    .order_by(schema.user_roles.c.user_id)
)
_INSERT = insert_or_keep(_t, "key")  # a notice already owed under the same key stays as it is
# One user's due notices one message lists: far more requests than anyone has waiting.
_OF_ONE = 100
_NOTICES_FOR = (
    select(_t).where(_t.c.job_id == bindparam("job_id")).order_by(_t.c.created_at, _t.c.key)
)


class NoticeQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection
    _postgres: bool
    owed: set[str]

    async def holders(self, role: Role) -> list[int]:
        """Every user holding `role` now, by id."""
        rows = await self.conn.execute(_HOLDERS, {"role": role.value})
        return [int(user_id) for user_id in rows.scalars()]

    async def insert_notice(self, *notices: Notice) -> None:
        """Owe Telegram messages, in one statement; a notice with the same key already owed
        stays as it is."""
        if notices:
            await self.conn.execute(_INSERT, [values_of(notice) for notice in notices])
            self.owed.add(wakeups.NOTICES)

    async def owe_notice(self, notice: Notice) -> bool:
        """insert_notice, and whether it was new: False if a notice of that key was owed."""
        result = await self.conn.execute(_INSERT, values_of(notice))
        self.owed.add(wakeups.NOTICES)
        return bool(result.rowcount)

    async def claim_notices_of(
        self, user_id: int, kind: NoticeKind, prefix: str, now: datetime, owner: str,
        lease_until: datetime,
    ) -> list[Notice]:  # fmt: skip
        """Lease one user's due notices of one kind whose event starts with `prefix` to
        `owner` (claim_notices' rules), so that one message can settle them all."""
        t = schema.notices
        among = and_(
            t.c.user_id == user_id,
            t.c.kind == kind.value,
            t.c.event.startswith(prefix, autoescape=True),
        )
        rows = await claim_rows(self.conn, t, now, Lease(owner, lease_until), _OF_ONE, among)
        return [notice_from_row(row) for row in rows]

    async def claim_notices(
        self, now: datetime, owner: str, lease_until: datetime, limit: int, job_id: str | None
    ) -> list[Notice]:
        """Lease due pending notices (of one job, if given), and claimed ones whose lease ran
        out, to `owner`."""
        t = schema.notices
        among = None if job_id is None else t.c.job_id == job_id
        rows = await claim_rows(self.conn, t, now, Lease(owner, lease_until), limit, among)
        return [notice_from_row(row) for row in rows]

    async def update_notice(self, notice: Notice, **changes: Any) -> Notice:
        """Compare-and-set on (key, version); bump version; raise LeaseLost on a miss."""
        return await update_leased(self.conn, _t, notice, changes, "sender")

    async def notice_of_message(self, user_id: int, message_id: int) -> Notice | None:
        """The notice delivered to `user_id` as their chat's message `message_id`, if any."""
        query = select(_t).where(_t.c.user_id == user_id, _t.c.message_id == message_id)
        row = (await self.conn.execute(query.limit(1))).first()
        return None if row is None else notice_from_row(row)

    async def notices_for(self, job_id: str) -> list[Notice]:
        """A job's notices, oldest first."""
        rows = await self.conn.execute(_NOTICES_FOR, {"job_id": job_id})
        return [notice_from_row(row) for row in rows]
