"""SqlTx's queries for supplier terms, submitted sheets, PO serials, price history and the
budgets' committed spend."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Select, String, any_, bindparam, func, insert, select, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from core.approval.budgets import COMMITTED
from core.drafting.drafts import Draft
from core.drafting.intake import History, PastLine
from core.drafting.terms import Offer, Supplier, Terms, match_key
from core.errors import InsertConflict
from core.jobs.jobs import Job
from core.jobs.states import State
from store import schema
from store.rows import job_from_row
from store.sealing import Sealer
from store.versioned import head_version, set_head

# Terms versions never change once stored, so a process may keep the last few in memory.
TERMS_CACHE_SIZE = 4
# Pairs one price-history query asks for: two IN lists of at most this many bound values,
# well under either database's limit, for a terms import of thousands of SKUs.
HISTORY_PAIRS = 500


class PurchasingQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection
    _sealer: Sealer
    _postgres: bool
    _reading: bool  # a read-only transaction: PostgreSQL refuses row locks in one
    _terms_cache: dict[str, Terms]

    async def terms_version(self, *, for_update: bool = False) -> str | None:
        """The terms version in force, or None before any import.

        Intake's write transaction reads it FOR SHARE and an import FOR UPDATE (PostgreSQL), so
        a sheet is never recorded on a version that is being replaced; SQLite's BEGIN IMMEDIATE
        already serialises. A read-only transaction takes no lock: it reads a snapshot.
        """
        lock: Literal["share", "update"] | None = "update" if for_update else "share"
        if not self._postgres or self._reading:
            lock = None
        return await head_version(self.conn, schema.terms_head, lock)

    async def current_terms(self) -> Terms | None:
        """The terms in force, or None if none were ever imported."""
        version = await self.terms_version()
        return None if version is None else await self.terms(version)

    async def terms(self, version: str) -> Terms | None:
        """One stored terms version, or None if there is no such version."""
        if version in self._terms_cache:
            return self._terms_cache[version]
        s, o = schema.terms_suppliers, schema.terms_offers
        suppliers = {
            row.supplier_id: Supplier(
                row.supplier_id,
                row.name,
                self._sealer.open(row.email_encrypted).decode(),
                row.payment_terms or "",
                self._sealer.open(row.phone_encrypted).decode() if row.phone_encrypted else "",
            )
            for row in await self.conn.execute(select(s).where(s.c.terms_version == version))
        }
        if not suppliers:
            return None
        # The columns in Offer's order, NULLs already as Offer's defaults: each row is an
        # Offer's arguments as they are (10,000 offers load in a third of the time).
        columns = (
            o.c.supplier_id,
            o.c.sku,
            o.c.description,
            o.c.unit_price_paisa,
            o.c.min_qty,
            o.c.max_qty,
            func.coalesce(o.c.category, ""),
            o.c.lead_days,
            func.coalesce(o.c.gst_basis_points, 0),
        )
        found = await self.conn.execute(select(*columns).where(o.c.terms_version == version))
        offers = tuple(Offer(*row) for row in found.tuples())
        terms = Terms(suppliers, offers, version)
        while len(self._terms_cache) >= TERMS_CACHE_SIZE:
            self._terms_cache.pop(next(iter(self._terms_cache)))
        self._terms_cache[version] = terms
        return terms

    async def terms_sha256(self, version: str) -> str | None:
        """The content hash of a stored version, or None if there is no such version."""
        t = schema.terms_versions
        query = select(t.c.sha256).where(t.c.id == version)
        found = (await self.conn.execute(query)).scalar_one_or_none()
        return None if found is None else str(found)

    async def insert_terms(self, terms: Terms, sha256: str, at: datetime, by: str) -> None:
        """Store a new version (suppliers' addresses sealed) and put it in force."""
        try:
            await self.conn.execute(
                insert(schema.terms_versions).values(
                    id=terms.version,
                    sha256=sha256,
                    imported_at=at,
                    imported_by=by,
                    supplier_count=len(terms.suppliers),
                    offer_count=len(terms.offers),
                )
            )
        except IntegrityError as error:  # a concurrent import stored this version first
            raise InsertConflict("another import stored this terms version meanwhile") from error
        await self.conn.execute(
            insert(schema.terms_suppliers),
            [
                {
                    "terms_version": terms.version,
                    "supplier_id": s.supplier_id,
                    "name": s.name,
                    "email_encrypted": self._sealer.seal(s.email.encode()),
                    "payment_terms": s.payment_terms or None,
                    "phone_encrypted": self._sealer.seal(s.phone.encode()) if s.phone else None,
                }
                for s in terms.suppliers.values()
            ],
        )
        await self.conn.execute(
            insert(schema.terms_offers),
            [
                {
                    "terms_version": terms.version,
                    "supplier_id": o.supplier_id,
                    "sku": o.sku,
                    "description": o.description,
                    "unit_price_paisa": o.unit_price_paisa,
                    "min_qty": o.min_qty,
                    "max_qty": o.max_qty,
                    "category": o.category or None,
                    "lead_days": o.lead_days,
                    "gst_basis_points": o.gst_basis_points or None,
                }
                for o in terms.offers
            ],
        )
        await self.set_current_terms(terms.version, at)

    async def set_current_terms(self, version: str, at: datetime) -> None:
        """Put a stored version in force."""
        await set_head(self.conn, schema.terms_head, version, at)

    async def terms_record(self, version: str) -> dict[str, Any] | None:
        """A stored version's row (import time, who, counts), or None."""
        t = schema.terms_versions
        row = (await self.conn.execute(select(t).where(t.c.id == version))).first()
        return None if row is None else dict(row._mapping)

    async def terms_redrafts(self, actor: str) -> list[tuple[Job, dict[str, Any]]]:
        """Jobs re-drafted or cancelled by `actor` (a terms version), with the event's detail."""
        events, jobs = schema.audit_events, schema.jobs
        query = (
            select(jobs, events.c.detail.label("event_detail"))
            .join(events, events.c.job_id == jobs.c.id)
            .where(events.c.actor == actor, events.c.action.in_(["revise", "cancel"]))
            .order_by(events.c.id)
        )
        rows = await self.conn.execute(query)
        return [(job_from_row(row), dict(row.event_detail)) for row in rows]

    async def submission(self, requester_id: int, sha256: str) -> list[str] | None:
        """The PO numbers made from this requester's sheet with these bytes, if any."""
        t = schema.submissions
        query = select(t.c.po_numbers).where(
            t.c.requester_id == requester_id, t.c.sheet_sha256 == sha256
        )
        found = (await self.conn.execute(query)).scalar_one_or_none()
        return None if found is None else list(found)

    async def insert_submission(
        self, requester_id: int, sha256: str, name: str, po_numbers: list[str], at: datetime
    ) -> None:
        """Remember a sheet's POs; the same sheet submitted concurrently raises InsertConflict."""
        try:
            await self.conn.execute(
                insert(schema.submissions).values(
                    requester_id=requester_id,
                    sheet_sha256=sha256,
                    sheet_name=name[:255],
                    po_numbers=po_numbers,
                    created_at=at,
                )
            )
        except IntegrityError as error:
            raise InsertConflict("the same sheet was submitted meanwhile") from error

    async def next_po_serial(self, year: int) -> int:
        """The next PO serial of `year`; the row lock makes it unique across processes."""
        t = schema.po_serials
        bump = (
            update(t)
            .where(t.c.year == year)
            .values(last_serial=t.c.last_serial + 1)
            .returning(t.c.last_serial)
        )
        serial = (await self.conn.execute(bump)).scalar_one_or_none()
        if serial is not None:
            return int(serial)
        try:
            await self.conn.execute(insert(t).values(year=year, last_serial=1))
        except IntegrityError as error:  # another process opened the year first
            raise InsertConflict(f"PO serials for {year} were started meanwhile") from error
        return 1

    async def insert_order_lines(self, job_id: str, version: int, draft: Draft) -> None:
        """The draft's lines in the clear, for the price history: rows of plain tuples in
        the driver's own SQL, since SQLAlchemy's per-row parameter processing took 24 ms of
        the loop for a 10,000-line draft inside its write transaction (the driver's, 2 ms)."""
        supplier = draft.supplier_id
        await self.conn.exec_driver_sql(
            _insert_order_lines(self.conn.dialect.paramstyle),
            [
                (
                    job_id,
                    version,
                    line.sku,
                    supplier,
                    line.quantity,
                    line.unit_price_paisa,
                    line.category or None,
                    line.gross_paisa,
                )
                for line in draft.lines
            ],
        )

    async def history(
        self, pairs: Iterable[tuple[str, str]], *, excluding: str | None = None
    ) -> History:
        """For each (supplier, SKU) pair, the line of the last PO that was sent with it, and
        when (SENT is final: its job's last change is its sending); `excluding` one job.
        Only the lines of the pairs asked for are read (the supplier and SKU index), a few
        hundred pairs a query, so a year of POs costs a PO's view no more than a week's."""
        wanted = {(match_key(s), match_key(k)) for s, k in pairs}
        found: dict[tuple[str, str], PastLine] = {}
        ordered = sorted(wanted)
        for start in range(0, len(ordered), HISTORY_PAIRS):
            found |= await self._history(ordered[start : start + HISTORY_PAIRS], excluding)
        return found

    async def _history(
        self, pairs: list[tuple[str, str]], excluding: str | None
    ) -> dict[tuple[str, str], PastLine]:
        # supplier ids and SKUs match without regard to case, as everywhere else; the pairs
        # are match_key()s, so Python checks each row the database found
        keys = {
            "suppliers": sorted({s.lower() for s, _ in pairs}),
            "skus": sorted({k.lower() for _, k in pairs}),
        }
        query = _history_query(self._postgres, excluding is not None)
        params = keys if excluding is None else {**keys, "excluding": excluding}
        wanted: set[tuple[str, str]] = set(pairs)
        last: dict[tuple[str, str], tuple[str, int, int, datetime]] = {}
        rows = (await self.conn.execute(query, params)).tuples()
        for supplier_id, sku, quantity, price, po_number, sent_at in rows:
            pair = (match_key(supplier_id), match_key(sku))
            if pair in wanted:  # later rows overwrite: the last sent PO wins
                last[pair] = (po_number, price, quantity, sent_at)
        return {pair: PastLine(*line) for pair, line in last.items()}

    async def committed_spend(
        self, start: datetime, end: datetime, excluding: str | None = None
    ) -> dict[str, int]:
        """Line totals with sales tax by category of the current drafts of POs approved in
        [start, end) and still committed (core.approval.budgets.COMMITTED), from the lines in the
        clear; `excluding` one job."""
        lines, jobs = schema.order_lines, schema.jobs
        total = func.sum(
            func.coalesce(lines.c.gross_paisa, lines.c.quantity * lines.c.unit_price_paisa)
        )
        query = (
            select(lines.c.category, total)
            .join(jobs, jobs.c.id == lines.c.job_id)
            .where(
                jobs.c.state.in_(sorted(s.value for s in COMMITTED)),
                jobs.c.approved_at >= start,
                jobs.c.approved_at < end,
                lines.c.draft_version == jobs.c.draft_version,
                lines.c.category.is_not(None),
            )
            .group_by(lines.c.category)
        )
        if excluding is not None:
            query = query.where(jobs.c.id != excluding)
        return {str(c): int(paisa) for c, paisa in await self.conn.execute(query)}


@functools.cache
def _history_query(postgres: bool, excluding: bool) -> Select[tuple[Any, ...]]:
    """The price history's query, made once: the key lists are bound at execution, so that
    SQLAlchemy neither coerces each key into the statement nor compiles it again. PostgreSQL
    takes each list as one array, lower(key) = ANY(:keys), the same test as IN (PostgreSQL
    plans an IN list as = ANY(ARRAY[...]) itself), without rendering and casting a placeholder
    per key on every execution (150 ms of the loop for a 10,000-line sheet); SQLite expands
    an IN list."""
    lines, jobs = schema.order_lines, schema.jobs
    tests = []
    for column, name in ((lines.c.supplier_id, "suppliers"), (lines.c.sku, "skus")):
        if postgres:
            keys = bindparam(name, type_=postgresql.ARRAY(String))
            tests.append(func.lower(column) == any_(keys))
        else:
            tests.append(func.lower(column).in_(bindparam(name, expanding=True)))
    query = (
        select(
            lines.c.supplier_id,
            lines.c.sku,
            lines.c.quantity,
            lines.c.unit_price_paisa,
            jobs.c.po_number,
            jobs.c.updated_at,
        )
        .join(jobs, jobs.c.id == lines.c.job_id)
        .where(
            *tests,
            jobs.c.state == State.SENT.value,
            lines.c.draft_version == jobs.c.draft_version,
        )
        .order_by(jobs.c.updated_at, jobs.c.id)
    )
    return query.where(jobs.c.id != bindparam("excluding")) if excluding else query


_ORDER_LINE_COLUMNS = (
    "job_id",
    "draft_version",
    "sku",
    "supplier_id",
    "quantity",
    "unit_price_paisa",
    "category",
    "gross_paisa",
)


@functools.cache
def _insert_order_lines(paramstyle: str) -> str:
    """INSERT INTO order_lines with positional placeholders in the driver's paramstyle: qmark
    (sqlite3) or numeric_dollar (asyncpg)."""
    count = len(_ORDER_LINE_COLUMNS)
    marks = {"qmark": ["?"] * count, "numeric_dollar": [f"${n}" for n in range(1, count + 1)]}
    columns = ", ".join(_ORDER_LINE_COLUMNS)
    values = ", ".join(marks[paramstyle])
    return f"INSERT INTO {schema.order_lines.name} ({columns}) VALUES ({values})"  # noqa: S608
