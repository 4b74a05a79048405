"""Rows with a version column: the one compare-and-set update they share, and the lease claim
both outboxes (supplier e-mail, Telegram) use."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, Table, and_, or_, select, true, update
from sqlalchemy.ext.asyncio import AsyncConnection


@dataclass(frozen=True)
class Lease:
    """Who claims outbox rows, and until when they are theirs."""

    owner: str
    until: datetime


async def compare_and_set(
    conn: AsyncConnection, table: Table, where: ColumnElement[bool], **changes: Any
) -> Row[Any] | None:
    """Update the one row `where` names (its key and the version it was read at) with
    `changes`, bumping its version; the new row, or None when another writer got there first."""
    query = (
        update(table)
        .where(where)
        .values(version=table.c.version + 1, **changes)
        .returning(*table.c)
    )
    return (await conn.execute(query)).first()


async def claim_rows(
    conn: AsyncConnection,
    table: Table,
    now: datetime,
    lease: Lease,
    limit: int,
    among: ColumnElement[bool] | None = None,
) -> Sequence[Row[Any]]:
    """Lease due pending rows, and claimed rows whose lease ran out, to `lease.owner`.

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
        .values(
            status="claimed",
            lease_owner=lease.owner,
            lease_until=lease.until,
            version=t.c.version + 1,
            updated_at=now,
        )
        .returning(*t.c)
    )
    return list(await conn.execute(claim))
