"""Manzoori's own lifecycle, as production runs it: a validated draft opened as a job, approved
through the use case the tap handler calls, and e-mailed by the real outbox runner and SMTP
sender. Each phase runs over all N purchase orders before the next starts, so each has a rate.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography.fernet import Fernet
from sqlalchemy import func, select

from bench.databases import Counters, Database, migrated
from bench.smtp_server import SinkProcess
from bot.documents import rendering
from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer, TlsMode
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Role, Rules, Verdict
from core.drafting.drafts import Draft, DraftLine
from core.jobs.jobs import NewJob
from core.jobs.states import State
from store import schema
from store.sql import SqlStore

REQUESTER = 1001
APPROVER = 2001
# The runner's lease: far longer than one send, so no lease ever runs out mid-benchmark.
LEASE = timedelta(minutes=10)
# A runner that sees nothing due sleeps this long; nothing is ever late here, so it is short.
POLL_SECONDS = 0.01
# One send may wait this long for the server (the 200 ms relay needs well under a second).
SMTP_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Phases:
    """Seconds each phase took over all N purchase orders."""

    draft: float
    approve: float
    send: float

    @property
    def total(self) -> float:
        """The whole lifecycle: the three phases end to end."""
        return self.draft + self.approve + self.send


@dataclass(frozen=True)
class LifecycleFigures:
    """What one run of N lifecycles measured."""

    n: int
    phases: Phases
    commits: int
    statements: int
    # CPU time over the three phases of this process and of the workers that render its
    # PDFs (bot.documents.rendering)
    cpu_seconds: float

    @property
    def lifecycles_per_s(self) -> float:
        """Lifecycles per second, end to end."""
        return self.n / self.phases.total

    def rate(self, seconds: float) -> float:
        """N per `seconds`: a phase's rate."""
        return self.n / seconds

    @property
    def commits_per_lifecycle(self) -> float:
        """Committed transactions per lifecycle."""
        return self.commits / self.n

    @property
    def statements_per_lifecycle(self) -> float:
        """Statements handed to the driver per lifecycle."""
        return self.statements / self.n

    @property
    def cpu_ms_per_lifecycle(self) -> float:
        """This process's CPU milliseconds per lifecycle."""
        return self.cpu_seconds * 1000 / self.n


def make_draft(po_number: str) -> Draft:
    """A validated two-line draft; its total (PKR 14,000) needs only one approval."""
    return Draft(
        po_number=po_number,
        supplier_id="SUP-LHR-01",
        supplier_name="Hall Road Electronics",
        recipient_email="orders@supplier.example",
        terms_version="terms-2026-11",
        lines=(
            DraftLine("CBL-USB-C-1M", "USB-C cable 1 m", 4, 125_000),
            DraftLine("ADP-65W", "65 W charger, GaN, PK plug", 2, 450_000),
        ),
    )


def sender_for(smtp: tuple[str, int]) -> SmtpSender:
    """The production SMTP sender, plain text to the local server."""
    host, port = smtp
    server = SmtpServer(host=host, port=port, tls=TlsMode.NONE, timeout=SMTP_TIMEOUT_SECONDS)
    return SmtpSender(server, mail_from="orders@shop.example")


async def _timed(step: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter()
    await step()
    return time.perf_counter() - start


async def run_lifecycles(db: Database, n: int, sink: SinkProcess) -> LifecycleFigures:
    """N purchase orders from draft to SENT on `db`; raise if any is not SENT or the server
    did not accept exactly N distinct messages."""
    engine = await migrated(db)
    store = SqlStore(engine, Fernet.generate_key())
    rules = Rules()
    try:
        await _grant_cast(store)
        await sink.reset()
        run_tag = uuid.uuid4().hex[:8]
        numbers = [f"PO-BENCH-{run_tag}-{i:05d}" for i in range(n)]
        runner = OutboxRunner(store, sender_for(sink.address), rules, lease=LEASE)
        hashes: dict[str, str] = {}

        async def draft() -> None:
            for number in numbers:
                new = NewJob(str(uuid.uuid4()), REQUESTER, f"bench:{number}")
                job = await opening.open_job(store, new, make_draft(number), _now(), rules)
                assert job.draft_hash is not None
                hashes[number] = job.draft_hash

        async def approve() -> None:
            for number in numbers:
                review = Review(number, APPROVER, Verdict.APPROVE, 1, hashes[number])
                result = await decisions.decide(store, review, _now(), rules)
                if result.job.state is not State.APPROVED:
                    raise RuntimeError(f"{number} is {result.job.state}, not APPROVED")

        async def send() -> None:
            await runner.run_until_idle(POLL_SECONDS)

        counters = Counters(engine)
        await rendering.prepare()  # the workers started: their CPU is counted from here
        cpu = time.process_time() + _renderers_cpu()
        phases = Phases(await _timed(draft), await _timed(approve), await _timed(send))
        cpu = time.process_time() + _renderers_cpu() - cpu
        figures = LifecycleFigures(n, phases, counters.commits, counters.statements, cpu)
        await _verify(store, sink, n)
        return figures
    finally:
        await store.close()


def _renderers_cpu() -> float:
    """CPU seconds the renderer's workers have used, from /proc (they are not our children)."""
    seconds = 0.0
    for pid in rendering.worker_pids():
        with contextlib.suppress(FileNotFoundError):  # a worker that has just ended
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            seconds += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return seconds


def _now() -> datetime:
    return datetime.now(UTC)


async def _grant_cast(store: SqlStore) -> None:
    """The requester and the one approver every PO of the run needs."""
    async with store.begin() as tx:
        await tx.grant(REQUESTER, Role.REQUESTER, "bench", _now())
        await tx.grant(APPROVER, Role.APPROVER, "bench", _now())


async def _verify(store: SqlStore, sink: SinkProcess, n: int) -> None:
    """A benchmark that loses or doubles mail measures nothing: check every job and message."""
    async with store.engine.connect() as conn:
        t = schema.jobs
        sent = (
            await conn.execute(select(func.count()).where(t.c.state == State.SENT.value))
        ).scalar_one()
        total = (await conn.execute(select(func.count()).select_from(t))).scalar_one()
    if (sent, total) != (n, n):
        raise RuntimeError(f"{sent} of {total} jobs SENT; expected all {n}")
    accepted = await sink.accepted()
    if (accepted.messages, accepted.distinct) != (n, n):
        raise RuntimeError(
            f"the SMTP server accepted {accepted.messages} messages "
            f"({accepted.distinct} distinct); expected {n}"
        )
