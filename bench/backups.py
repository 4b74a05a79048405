"""Backups, restores and key rotation on a shop with years of POs: 10,000 approved POs (their
sealed drafts, decisions, audit trails, outbox rows and owed cards), backed up while nothing
else runs, restored into an empty database (the restore's hold of every unsettled e-mail
included), and re-sealed with a new data key. Times are wall clock on this machine; sizes are
the snapshot's. `python -m bench.backups` prints the figures alone."""

from __future__ import annotations

import asyncio
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common import Context, Result
from bench.databases import Database, databases, migrated
from bench.report import render
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import ApprovalPolicy, Role, Rules, Verdict
from core.drafting.drafts import Draft, DraftLine
from core.jobs.jobs import NewJob
from core.outbox.restoring import hold_unsettled
from store import backups, resealing
from store.engine import make_engine
from store.migrate import upgrade
from store.sql import SqlStore

SECTION = "Backups and key rotation"
POS_QUICK, POS_FULL = 200, 10_000
KEY = Fernet.generate_key()
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(days=3650)))
REQUESTER, APPROVER = 1001, 2001


def _draft(n: int) -> Draft:
    lines = tuple(
        DraftLine(f"SKU-{n % 97}-{k}", f"Item {k} of PO {n}", k + 1, 125_050 + k) for k in range(5)
    )
    return Draft(
        po_number=f"PO-2026-{n:05d}",
        supplier_id="SUP-LHR-01",
        supplier_name="Hall Road Traders",
        recipient_email="orders@hallroad.pk",
        terms_version="terms-2026-01",
        lines=lines,
    )


async def _filled(store: SqlStore, count: int) -> None:
    async with store.begin() as tx:
        for user, role in ((REQUESTER, Role.REQUESTER), (APPROVER, Role.APPROVER)):
            await tx.met(user, f"user {user}", T0, started=True)
            await tx.grant(user, role, "bench", T0)
    for n in range(1, count + 1):
        new = NewJob(str(uuid.uuid4()), REQUESTER, f"bench:{n}", {"supplier_terms": "t"})
        job = await opening.open_job(store, new, _draft(n), T0, RULES)
        review = Review(job.po_number, APPROVER, Verdict.APPROVE, 1, job.draft_hash or "")
        await decisions.decide(store, review, T0, RULES)


def _admin(url: str) -> AsyncEngine:
    """An engine on the server's `postgres` database, outside transactions (CREATE DATABASE)."""
    postgres = make_url(url).set(database="postgres").render_as_string(hide_password=False)
    return make_engine(postgres, isolation_level="AUTOCOMMIT")


async def _empty_like(db: Database, folder: Path) -> tuple[str, Database | None]:
    """A URL of an empty database of the same kind (PostgreSQL: a fresh one to drop after)."""
    if db.kind == "sqlite":
        return f"sqlite+aiosqlite:///{folder / 'restored.sqlite'}", None
    name = f"bench_restore_{uuid.uuid4().hex[:8]}"
    admin = _admin(db.url)
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    await admin.dispose()
    url = make_url(db.url).set(database=name).render_as_string(hide_password=False)
    return url, replace(db, url=url)


async def _drop(db: Database | None, base: str) -> None:
    if db is None:
        return
    admin = _admin(base)
    async with admin.connect() as conn:
        await conn.execute(text(f'DROP DATABASE "{make_url(db.url).database}" WITH (FORCE)'))
    await admin.dispose()


async def _row(db: Database, count: int, folder: Path) -> Result:
    engine = await migrated(db)
    store = SqlStore(engine, KEY)
    await _filled(store, count)
    started = time.perf_counter()
    manifest = await backups.backup(engine, folder / "backups", datetime.now(UTC))
    backup_s = time.perf_counter() - started
    size = (folder / "backups" / manifest.file).stat().st_size
    target_url, made = await _empty_like(db, folder)
    target = SqlStore(make_engine(target_url), KEY)
    try:
        started = time.perf_counter()
        await backups.restore(target.engine, folder / "backups" / manifest.file)
        await upgrade(target.engine)
        held = await hold_unsettled(target, manifest.taken_at, datetime.now(UTC))
        restore_s = time.perf_counter() - started
    finally:
        await target.close()
        await _drop(made, db.url)
    keys = b",".join((Fernet.generate_key(), KEY))  # the new key first, as MANZOORI_DATA_KEY
    rotated = SqlStore(make_engine(db.url), keys)
    try:
        started = time.perf_counter()
        counts = await resealing.reseal_all(rotated)
        rotate_s = time.perf_counter() - started
    finally:
        await rotated.close()
        await store.close()
    return Result(
        SECTION,
        f"{count:,} POs, {db.label}",
        {
            "rows": f"{sum(manifest.rows.values()):,}",
            "backup s": f"{backup_s:.2f}",
            "size MB": f"{size / 1e6:.1f}",
            "restore s": f"{restore_s:.2f}",
            "held": f"{len(held.pos):,}",
            "rotate s": f"{rotate_s:.2f}",
            "re-sealed": f"{sum(counts.values()):,}",
        },
        notes="restore includes the schema check and the hold of every unsettled e-mail",
    )


async def run(ctx: Context) -> list[Result]:
    """One row per database: fill, back up, restore, rotate."""
    count = POS_QUICK if ctx.quick else POS_FULL
    rows = []
    for db in databases(ctx.sqlite_dir, ctx.postgres_url, "backups"):
        with tempfile.TemporaryDirectory() as folder:
            rows.append(await _row(db, count, Path(folder)))
    return rows


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as sqlite_dir:
        context = Context(quick=False, sqlite_dir=sqlite_dir, postgres_url=None)
        print(render(asyncio.run(run(context))), end="")
