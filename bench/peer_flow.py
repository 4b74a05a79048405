"""The peer: manzoori's purchase-order lifecycle written with DBOS Transact, run in its own process.

`python -m bench.peer_flow --kind sqlite --n 2000 --smtp 127.0.0.1:8025 --path /tmp/x/peer.sqlite`
prints one JSON object: how many lifecycles completed, the wall time and the CPU time they took.

The flow is written the way the DBOS documentation teaches it: one `@DBOS.workflow` per purchase
order whose steps are a datasource transaction that records the draft, a durable
`DBOS.recv_async(topic="approval")`, a step that sends the PO e-mail (text body, the PO's PDF
rendered by manzoori's own code, as manzoori's outbox attaches it, and a CSV attachment) over a
fresh SMTP connection with aiosmtplib, and a transaction that records it as sent. The
application tables live in their own database, reached through the same drivers manzoori uses
(aiosqlite, asyncpg); DBOS keeps its system database beside it (SQLite file or PostgreSQL database).

It runs in a subprocess because DBOS is a process-wide singleton with its own executor, background
loop and logging: one process per run measures only this flow's CPU and leaves nothing behind.
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import json
import logging
import sqlite3
import sys
import time
from dataclasses import dataclass
from datetime import date
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import aiosmtplib
import sqlalchemy as sa
from dbos import DBOS, AsyncSQLAlchemyDatasource, DBOSConfig
from sqlalchemy.ext.asyncio import create_async_engine

from bot.documents.pdf import render_po_pdf
from core.drafting.drafts import Draft, DraftLine
from core.purchasing.po_document import po_document

APP_NAME = "manzoori-peer"
MAIL_FROM = "purchasing@manzoori.example"
# Approvals arrive well within this in the bench; a real deployment would wait days, and the
# wait is durable either way, so the value only bounds a run that lost its messages.
APPROVAL_TIMEOUT_S = 600.0
# All n workflows record their drafts at once and SQLAlchemy's default pool (5 + 10 overflow)
# lets a caller wait only 30 s for a connection; a team meeting that TimeoutError would let
# callers queue for the pool rather than fail, keeping the pool's size (the database's pace).
POOL_TIMEOUT_S = 600.0
# The lines of one PO: manzoori's sample orders carry a handful, so the CSV is a few hundred bytes.
LINES = (
    ("SKU-1001", "A4 paper, 80 gsm, box of 5 reams", 4, 6_250),
    ("SKU-2040", "Toner cartridge, black", 2, 18_900),
    ("SKU-3177", "Stapler, heavy duty", 1, 3_400),
    ("SKU-4410", "Ring binders, 2-inch, pack of 10", 3, 2_150),
)

METADATA = sa.MetaData()
PURCHASE_ORDERS = sa.Table(
    "purchase_orders",
    METADATA,
    sa.Column("po_number", sa.String(32), primary_key=True),
    sa.Column("supplier_email", sa.String(254), nullable=False),
    sa.Column("total_pkr", sa.BigInteger, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("approved_by", sa.String(64)),
    sa.Column("message_id", sa.String(255)),
)


@dataclass(frozen=True)
class Databases:
    """Where one run keeps its application tables and DBOS its system tables."""

    app_url: str  # SQLAlchemy async URL of the application database
    system_url: str  # DBOS's system database (DBOS picks its own driver)


def total_pkr() -> int:
    """The PO's total in rupees: the sum of its lines."""
    return sum(quantity * price for _, _, quantity, price in LINES)


def render_pdf(po_number: str, recipient: str) -> bytes:
    """The PO's PDF, made by manzoori's renderer (bot.documents.pdf) from the same lines."""
    draft = Draft(
        po_number=po_number,
        supplier_id="SUP-PEER",
        supplier_name="Peer Supplies",
        recipient_email=recipient,
        terms_version="peer",
        lines=tuple(DraftLine(sku, text, qty, price * 100) for sku, text, qty, price in LINES),
    )
    document = po_document(
        draft, 1, company=None, issued=date.today(), approvals=(), key=po_number, approved=True
    )
    return render_po_pdf(document)


def render_email(po_number: str, recipient: str, pdf: bytes) -> EmailMessage:
    """The PO e-mail: a plain-text body, the PDF and the lines as a CSV attachment."""
    message = EmailMessage()
    message["From"] = MAIL_FROM
    message["To"] = recipient
    message["Subject"] = f"Purchase order {po_number} from Manzoori"
    message["Date"] = email.utils.formatdate(localtime=False)
    message["Message-ID"] = f"<{po_number}@manzoori.example>"
    body = [f"Dear supplier,\n\nPlease supply the following against purchase order {po_number}.\n"]
    body += [f"  {sku}  {text}  x{qty} @ PKR {price:,}" for sku, text, qty, price in LINES]
    body.append(f"\nTotal: PKR {total_pkr():,}\n\nRegards,\nManzoori purchasing\n")
    message.set_content("\n".join(body))
    rows = ['"sku","description","quantity","unit_price_pkr","line_total_pkr"']
    rows += [f'"{s}","{t}","{q}","{p}","{q * p}"' for s, t, q, p in LINES]
    message.add_attachment(pdf, maintype="application", subtype="pdf", filename=f"{po_number}.pdf")
    message.add_attachment("\r\n".join(rows) + "\r\n", subtype="csv", filename=f"{po_number}.csv")
    return message


def build_flow(ds: AsyncSQLAlchemyDatasource, smtp: tuple[str, int]) -> Any:
    """Register the workflow and its steps on `ds`; returns the workflow function."""

    @ds.transaction()
    async def record_draft(po_number: str, supplier_email: str) -> None:
        """Step 1: the validated draft becomes a PO row."""
        await ds.sql_session().execute(
            PURCHASE_ORDERS.insert().values(
                po_number=po_number,
                supplier_email=supplier_email,
                total_pkr=total_pkr(),
                status="draft",
            )
        )

    @DBOS.step()
    async def send_po_email(po_number: str, supplier_email: str) -> str:
        """Step 3: one message per PO, over its own SMTP connection."""
        pdf = await asyncio.to_thread(render_pdf, po_number, supplier_email)  # as the outbox
        message = render_email(po_number, supplier_email, pdf)
        await aiosmtplib.send(message, hostname=smtp[0], port=smtp[1], timeout=60)
        return str(message["Message-ID"])

    @ds.transaction()
    async def record_sent(po_number: str, approver: str, message_id: str) -> None:
        """Step 4: the PO is marked sent, with who approved it and the Message-ID."""
        await ds.sql_session().execute(
            PURCHASE_ORDERS.update()
            .where(PURCHASE_ORDERS.c.po_number == po_number)
            .values(status="sent", approved_by=approver, message_id=message_id)
        )

    @DBOS.workflow()
    async def purchase_order(po_number: str, supplier_email: str) -> str:
        """Draft, wait durably for the approval message, e-mail the supplier, record it."""
        await record_draft(po_number, supplier_email)
        approval = await DBOS.recv_async(topic="approval", timeout_seconds=APPROVAL_TIMEOUT_S)
        if approval is None:
            return "expired"
        message_id = await send_po_email(po_number, supplier_email)
        await record_sent(po_number, approval["approver"], message_id)
        return "sent"

    return purchase_order


async def drive(workflow: Any, n: int) -> dict[str, Any]:
    """Start n workflows, send each its approval, wait for all; the measured window."""
    wall, cpu = time.perf_counter(), time.process_time()
    handles = [
        await DBOS.start_workflow_async(workflow, f"PO-{i:06d}", f"supplier{i}@example.com")
        for i in range(n)
    ]
    for i, handle in enumerate(handles):
        message = {"approver": f"approver{i % 100}", "decision": "approve"}
        await DBOS.send_async(handle.get_workflow_id(), message, topic="approval")
    outcomes = await asyncio.gather(*(handle.get_result() for handle in handles))
    return {
        "n": n,
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "workflows_sent": sum(1 for outcome in outcomes if outcome == "sent"),
    }


async def count_sent(app_url: str) -> int:
    """How many PO rows the workflows recorded as sent, read back after the run."""
    engine = create_async_engine(app_url)
    try:
        async with engine.connect() as conn:
            query = sa.select(sa.func.count()).where(PURCHASE_ORDERS.c.status == "sent")
            return int((await conn.execute(query)).scalar_one())
    finally:
        await engine.dispose()


def fresh_sqlite(path: str) -> Databases:
    """Empty SQLite files for the app and for DBOS, in WAL mode as manzoori's own database is."""
    app = Path(path)
    system = app.with_name(f"{app.stem}-dbos-sys.sqlite")
    for file in (app, system):
        for stale in (file, Path(f"{file}-wal"), Path(f"{file}-shm"), Path(f"{file}-journal")):
            stale.unlink(missing_ok=True)
        # WAL persists in the file, so DBOS's own engine inherits it; synchronous stays FULL.
        with sqlite3.connect(file) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
    return Databases(app_url=f"sqlite+aiosqlite:///{app}", system_url=f"sqlite:///{system}")


async def fresh_postgres(base_url: str) -> Databases:
    """Recreate `<db>_peer` (the app) and `<db>_peer_dbos_sys` beside the given database."""
    base = sa.make_url(base_url)
    names = (f"{base.database}_peer", f"{base.database}_peer_dbos_sys")
    admin = create_async_engine(base, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            for name in names:
                await conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                await conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    finally:
        await admin.dispose()
    app = base.set(database=names[0], drivername="postgresql+asyncpg")
    system = base.set(database=names[1], drivername="postgresql")
    return Databases(
        app_url=app.render_as_string(hide_password=False),
        system_url=system.render_as_string(hide_password=False),
    )


async def create_tables(app_url: str) -> None:
    """The application's table, created before DBOS launches."""
    engine = create_async_engine(app_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(METADATA.create_all)
    finally:
        await engine.dispose()


def dbos_config(system_url: str) -> DBOSConfig:
    """Fully offline: no Conductor key, no OTLP export, quiet logs on stderr."""
    return {
        "name": APP_NAME,
        "system_database_url": system_url,
        "enable_otlp": False,
        "log_level": "WARNING",
        "application_version": "bench",
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """One measured run of the peer on the database `args` names."""
    if args.kind == "sqlite":
        dbs = fresh_sqlite(args.path)
    else:
        dbs = await fresh_postgres(args.url)
    await create_tables(dbs.app_url)
    DBOS(config=dbos_config(dbs.system_url))
    ds = await AsyncSQLAlchemyDatasource.create(
        dbs.app_url, engine_kwargs={"pool_timeout": POOL_TIMEOUT_S}
    )
    host, _, port = args.smtp.rpartition(":")
    workflow = build_flow(ds, (host, int(port)))
    DBOS.launch()
    try:
        figures = await drive(workflow, args.n)
    finally:
        DBOS.destroy(destroy_registry=True)
        await ds.engine.dispose()
    figures["rows_sent"] = await count_sent(dbs.app_url)
    figures["kind"] = args.kind
    return figures


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line of one peer run."""
    parser = argparse.ArgumentParser(prog="python -m bench.peer_flow", description=__doc__)
    parser.add_argument("--kind", choices=("sqlite", "postgres"), required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--smtp", required=True, help="host:port of the SMTP server")
    parser.add_argument("--path", required=True, help="the app's SQLite file; DBOS's goes beside")
    parser.add_argument("--url", help="PostgreSQL URL of a database beside which to create ours")
    args = parser.parse_args(argv)
    if args.kind == "postgres" and not args.url:
        parser.error("--kind postgres needs --url")
    return args


def main(argv: list[str] | None = None) -> None:
    """Run the peer once and print its figures as one JSON line on stdout."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    figures = asyncio.run(run(parse(sys.argv[1:] if argv is None else argv)))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
