"""Rows with a version column: the one compare-and-set update they share, and the lease claim
both outboxes (supplier e-mail, Telegram) use; and the one-row heads that say which
version of the terms or the approval policy is in force.

Statements here are built once per shape and kept (`_cas_statement`): building a SQLAlchemy
construct and its cache key costs more than running it, and a use case makes several of these.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, TypeVar

from sqlalchemy import (
    ColumnElement,
    Row,
    Table,
    TextClause,
    Update,
    and_,
    bindparam,
    insert,
    or_,
    select,
    text,
    true,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from core.errors import InsertConflict, LeaseLost
from core.jobs.jobs import Effect
from core.jobs.notices import Notice
from store.rows import plain


@dataclass(frozen=True)
class Lease:
    """Who claims outbox rows, and until when they are theirs."""

    owner: str
    until: datetime


# Bound parameter names of the WHERE clause; SET values are bound as "set_<column>".
_WHERE = "where_"
_SET = "set_"


@functools.cache
def _cas_statement(table: Table, where: tuple[str, ...], changed: frozenset[str]) -> Update:
    """UPDATE table SET <changed>, version WHERE <where columns> = their values, built once."""
    return (
        update(table)
        .where(*(table.c[name] == bindparam(_WHERE + name) for name in where))
        .values({name: bindparam(_SET + name) for name in (*sorted(changed), "version")})
    )


async def compare_and_set(
    conn: AsyncConnection,
    table: Table,
    read_at: dict[str, Any],
    version: int,
    changes: dict[str, Any],
) -> bool:
    """Update the one row `read_at` names (its key, and any other column it was read with) if
    it is still at `version`, with `changes` and the version after it; False when another
    writer got there first. The caller knows the new row: the one it read, changed so."""
    where = {**read_at, "version": version}
    query = _cas_statement(table, tuple(sorted(where)), frozenset(changes))
    params = {_WHERE + name: value for name, value in where.items()}
    params |= {_SET + name: value for name, value in changes.items()}
    params[_SET + "version"] = version + 1
    result = await conn.execute(query, params)
    return int(result.rowcount) == 1


Leased = TypeVar("Leased", Effect, Notice)


async def update_leased(
    conn: AsyncConnection, table: Table, row: Leased, changes: dict[str, Any], holder: str
) -> Leased:
    """Compare-and-set `changes` on an outbox row at its (key, version): the row as changed,
    its version bumped; LeaseLost, naming `holder`, when another writer got there first."""
    if "status" in changes:
        changes["status"] = type(row.status)(changes["status"])
    if not await compare_and_set(conn, table, {"key": row.key}, row.version, plain(changes)):
        raise LeaseLost(f"{row.key} changed under this {holder}")
    return replace(row, version=row.version + 1, **changes)


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


def upsert(table: Table, key: str, columns: Sequence[str]) -> TextClause:
    """INSERT of `key` and `columns`; a row already stored under the same key has `columns`
    set to the new values instead: ON CONFLICT DO UPDATE with excluded., which SQLite and
    PostgreSQL spell alike. Text with typed parameters, compiled once, as insert_or_keep."""
    names = [key, *columns]
    typed = [bindparam(name, type_=table.c[name].type) for name in names]
    inserted = ", ".join(f'"{name}"' for name in names)
    values = ", ".join(f":{name}" for name in names)
    changes = ", ".join(f'"{name}" = excluded."{name}"' for name in columns)
    # Names from the schema only; every value is a bound parameter.
    sql = (
        f"INSERT INTO {table.name} ({inserted}) VALUES ({values}) "  # noqa: S608
        f'ON CONFLICT ("{key}") DO UPDATE SET {changes}'
    )
    return text(sql).bindparams(*typed)


def insert_or_keep(table: Table, key: str) -> TextClause:
    """INSERT of a whole row that leaves a row already stored under the same `key` as it is:
    ON CONFLICT DO NOTHING, which SQLite and PostgreSQL spell alike. Written as text with
    typed parameters because SQLAlchemy's dialect INSERT constructs have no cache key and
    are compiled again at every execution; this one is compiled once."""
    names = [column.name for column in table.columns]
    columns = ", ".join(f'"{name}"' for name in names)
    values = ", ".join(f":{name}" for name in names)
    # Names from the schema only; every value is a bound parameter.
    sql = f'INSERT INTO {table.name} ({columns}) VALUES ({values}) ON CONFLICT ("{key}") DO NOTHING'  # noqa: S608
    return text(sql).bindparams(
        *(bindparam(column.name, type_=column.type) for column in table.columns)
    )


HEAD = 1  # a *_head table has exactly one row, with this id


async def head_version(
    conn: AsyncConnection, table: Table, lock: Literal["share", "update"] | None
) -> str | None:
    """The version a one-row head table (terms_head, policy_head) puts in force, or None
    before the first import; read FOR SHARE or FOR UPDATE if `lock` says so (PostgreSQL)."""
    query = select(table.c.current_version).where(table.c.id == HEAD)
    if lock is not None:
        query = query.with_for_update(read=lock == "share")
    found = (await conn.execute(query)).scalar_one_or_none()
    return None if found is None else str(found)


async def set_head(conn: AsyncConnection, table: Table, version: str, at: datetime) -> None:
    """Put a stored version in force in a one-row head table (terms_head, policy_head);
    InsertConflict if a concurrent first import created the row meanwhile (retry on it)."""
    moved = await conn.execute(
        update(table).where(table.c.id == HEAD).values(current_version=version, updated_at=at)
    )
    if moved.rowcount:
        return
    try:  # the very first import
        await conn.execute(insert(table).values(id=HEAD, current_version=version, updated_at=at))
    except IntegrityError as error:
        raise InsertConflict(f"another import created {table.name} meanwhile") from error
