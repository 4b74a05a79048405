"""Leasing due outbox rows: the one claim both outboxes (supplier e-mail, Telegram) share."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, Table, and_, or_, select, true, update
from sqlalchemy.ext.asyncio import AsyncConnection


async def claim_rows(
    conn: AsyncConnection,
    table: Table,
    now: datetime,
    owner: str,
    lease_until: datetime,
    limit: int,
    among: ColumnElement[bool] | None = None,
) -> Sequence[Row[Any]]:
    """Lease due pending rows, and claimed rows whose lease ran out, to `owner`.

    The table has key, status ('pending'/'claimed'), next_attempt_at, lease_owner, lease_until,
    version and updated_at. On PostgreSQL several runners share it: each takes rows nobody else
    has locked (SKIP LOCKED), and the UPDATE re-checks that they are still due. `among`
    narrows the claim (one job's rows, say).
    """
    t = table
    due = and_(
        or_(
            and_(t.c.status == "pending", t.c.next_attempt_at <= now),
            and_(t.c.status == "claimed", t.c.lease_until < now),
        ),
        among if among is not None else true(),
    )
    query = select(t.c.key).where(due).order_by(t.c.next_attempt_at).limit(limit)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    keys = list((await conn.execute(query)).scalars())
    if not keys:
        return []
    claim = (
        update(t)
        .where(t.c.key.in_(keys), due)
        .values(status="claimed", lease_owner=owner, lease_until=lease_until,
                version=t.c.version + 1, updated_at=now)
        .returning(*t.c)
    )  # fmt: skip
    return list(await conn.execute(claim))
