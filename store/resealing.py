"""Every sealed field, re-sealed with MANZOORI_DATA_KEY's first key, a batch at a time, while
the bot runs (`manzoori keys rotate`); the check that every one opens (`manzoori verify`); and
what MANZOORI_SECRET_KEY has signed that is still in use (`manzoori keys status`).

Each batch is one short transaction. A field already sealed with the first key is left alone,
so a rotation that stopped half way is simply run again. A field is replaced only if it still
holds what was read (a purge may have emptied it meanwhile): nothing the bot wrote is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Table, and_, func, literal, or_, select, tuple_, update

from core.errors import SealedDataUnreadable
from core.jobs.effects import EffectKind
from core.jobs.states import State
from store import schema
from store.sealing import Sealer
from store.sql import SqlStore


@dataclass(frozen=True)
class Sealed:
    """A table's sealed columns, and the key its rows are read in the order of."""

    table: Table
    key: tuple[str, ...]
    columns: tuple[str, ...]


# Every sealed column of the schema (a test fails if one is missing here).
SEALED = (
    Sealed(schema.drafts, ("job_id", "version"), ("body_encrypted",)),
    Sealed(schema.effect_documents, ("key",), ("pdf_encrypted",)),
    Sealed(schema.supplier_answers, ("job_id", "draft_version", "round"), ("text_encrypted",)),
    Sealed(schema.supplier_mail, ("id",), ("mail_encrypted",)),
    Sealed(
        schema.terms_suppliers,
        ("terms_version", "supplier_id"),
        ("email_encrypted", "phone_encrypted"),
    ),
    Sealed(schema.typed_requests, ("request_id",), ("lines_encrypted",)),
)


@dataclass(frozen=True)
class Batch:
    """What one batch of one table did: rows read, fields re-sealed, and where it stopped
    (None: the table is done)."""

    read: int
    resealed: int
    after: tuple[object, ...] | None


async def reseal_batch(
    store: SqlStore, sealed: Sealed, after: tuple[object, ...] | None, limit: int
) -> Batch:
    """Re-seal the fields of up to `limit` rows of `sealed.table` after key `after`."""
    sealer: Sealer = store.sealer
    table = sealed.table
    key = [table.c[name] for name in sealed.key]
    holding = or_(*(func.length(table.c[c]) > 0 for c in sealed.columns))
    query = select(*key, *(table.c[c] for c in sealed.columns)).where(holding)
    if after is not None:
        query = query.where(tuple_(*key) > tuple_(*(literal(v) for v in after)))
    query = query.order_by(*key).limit(limit)
    resealed = 0
    async with store.engine.begin() as conn:
        rows = (await conn.execute(query)).all()
        for row in rows:
            ids, fields = tuple(row[: len(key)]), row[len(key) :]
            for column, token in zip(sealed.columns, fields, strict=True):
                if not token or sealer.current(token):
                    continue
                same_row = and_(*(k == v for k, v in zip(key, ids, strict=True)))
                await conn.execute(
                    update(table)
                    .where(same_row, table.c[column] == token)
                    .values({column: sealer.reseal(token)})
                )
                resealed += 1
    last = tuple(rows[-1][: len(key)]) if len(rows) == limit else None
    return Batch(len(rows), resealed, last)


async def reseal_all(store: SqlStore, limit: int = 200) -> dict[str, int]:
    """Every sealed field re-sealed with the first key; how many, per table."""
    counts: dict[str, int] = {}
    for sealed in SEALED:
        after: tuple[object, ...] | None = None
        total = 0
        while True:
            done = await reseal_batch(store, sealed, after, limit)
            total += done.resealed
            if done.after is None:
                break
            after = done.after
        counts[sealed.table.name] = total
    return counts


async def unopened(store: SqlStore, limit: int = 200) -> dict[str, int]:
    """How many sealed fields per table no configured key opens (all zero: every one does)."""
    counts: dict[str, int] = {}
    for sealed in SEALED:
        table = sealed.table
        key = [table.c[name] for name in sealed.key]
        bad, after = 0, None
        while True:
            query = select(*key, *(table.c[c] for c in sealed.columns))
            if after is not None:
                query = query.where(tuple_(*key) > tuple_(*(literal(v) for v in after)))
            async with store.engine.connect() as conn:
                rows = (await conn.execute(query.order_by(*key).limit(limit))).all()
            for row in rows:
                for token in row[len(key) :]:
                    if token:
                        try:
                            store.sealer.open(token)
                        except SealedDataUnreadable:
                            bad += 1
            if len(rows) < limit:
                break
            after = tuple(rows[-1][: len(key)])
        counts[table.name] = bad
    return counts


def sealed_columns() -> Sequence[tuple[str, str]]:
    """(table, column) of every sealed column listed here."""
    return [(s.table.name, c) for s in SEALED for c in s.columns]


@dataclass(frozen=True)
class Signed:
    """The newest of what MANZOORI_SECRET_KEY has signed that is still in use, by kind: a
    supplier link's e-mail, an open invitation's expiry, a card of a PO awaiting approval."""

    link_sent_at: datetime | None
    invite_expires_at: datetime | None
    awaiting_since: datetime | None


async def signed(store: SqlStore, now: datetime) -> Signed:
    """What is signed and still in use at `now` (store.resealing.Signed)."""
    effects, invites, jobs = schema.effects, schema.invites, schema.jobs
    linked = [EffectKind.SEND_PO.value, EffectKind.REMIND_PO.value]
    async with store.engine.connect() as conn:
        link = await conn.scalar(
            select(func.max(effects.c.created_at)).where(effects.c.kind.in_(linked))
        )
        invite = await conn.scalar(
            select(func.max(invites.c.expires_at)).where(
                invites.c.expires_at > now,
                invites.c.used_at.is_(None),
                invites.c.withdrawn_at.is_(None),
            )
        )
        waiting = await conn.scalar(
            select(func.max(jobs.c.updated_at)).where(jobs.c.state == State.AWAITING_APPROVAL.value)
        )
    return Signed(link, invite, waiting)
