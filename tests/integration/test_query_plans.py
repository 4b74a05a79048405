"""The reads a person or a runner's pass waits for find their rows through an index: none of
them reads a table that grows with the years (jobs, their lines, decisions, outbox rows,
notices, the audit trail, the people) from end to end. SQLite's plans, asked with EXPLAIN
QUERY PLAN of the very statements the store ran; PostgreSQL chooses its plans from its
statistics, and `make bench`'s "As the data grows" rows measure them on 100,000 POs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event

from core.approval.policies import Role
from core.jobs.notices import NoticeKind
from core.jobs.states import State
from core.records.retention import CLOSED
from store.sql import SqlStore, SqlTx
from tests.helpers.factories import APPROVER_A, REQUESTER, T0

# Tables that grow with every PO; a plan may SCAN only the small ones (terms, delegations, …).
GROWING = (
    "jobs",
    "drafts",
    "order_lines",
    "decisions",
    "effects",
    "notices",
    "audit_events",
    "user_roles",
    "telegram_users",
    "processed_updates",
)
LATER = T0 + timedelta(days=30)

READS: dict[str, Callable[[SqlTx], Awaitable[Any]]] = {
    "/status: a requester's newest jobs": lambda tx: tx.jobs_of(REQUESTER, 10),
    "/pending: the jobs waiting": lambda tx: tx.jobs_in_states([State.AWAITING_APPROVAL]),
    "jobs list --state": lambda tx: tx.list_jobs({State.AWAITING_APPROVAL}, 1000),
    "a PO's last sent prices": lambda tx: tx.history([("SUP-1", "SKU-1"), ("SUP-1", "sku-2")]),
    "a job by its PO number": lambda tx: tx.job_by_po("PO-2026-0001"),
    "a job's decisions": lambda tx: tx.decisions("job-1"),
    "a job's audit trail": lambda tx: tx.audit("job-1"),
    "a job's outbox rows": lambda tx: tx.effects_for("job-1"),
    "a job's notices": lambda tx: tx.notices_for("job-1"),
    "the card a tap came from": lambda tx: tx.notice_of_message(APPROVER_A, 42),
    "who holds a role": lambda tx: tx.holders(Role.APPROVER),
    "a tap's update id": lambda tx: tx.claim_update(1, T0),
    "expiry pass: deadlines passed": lambda tx: tx.jobs_past_deadline(
        State.AWAITING_APPROVAL, LATER, 100
    ),
    "outbox pass: rows due": lambda tx: tx.claim_due(LATER, "runner", LATER, 10),
    "outbox pass: attempts stalled": lambda tx: tx.stalled(LATER, 10),
    "outbox: open work": lambda tx: tx.open_work(LATER),
    "notice pass: rows due": lambda tx: tx.claim_notices(LATER, "runner", LATER, 10, None),
    "notice pass: one user's due": lambda tx: tx.claim_notices_of(
        APPROVER_A, NoticeKind.NUDGE, "ladder", LATER, "runner", LATER
    ),
    "chasing: POs sent lately": lambda tx: tx.jobs_sent_since(T0),
    "daily purge: jobs to purge": lambda tx: tx.jobs_to_purge(CLOSED, T0, 100),
}


def _full_scans(plan: list[str]) -> list[str]:
    """The plan's steps that read a growing table from end to end (SQLite says SCAN, with no
    index to SEARCH by)."""
    return [
        step
        for step in plan
        if step.startswith("SCAN ") and step.split()[1] in GROWING and "INDEX" not in step
    ]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("name", list(READS))
async def test_a_read_that_grows_with_the_years_finds_its_rows_through_an_index(
    store: SqlStore, name: str
) -> None:
    ran: list[tuple[str, Any]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "UPDATE", "INSERT", "DELETE")):
            ran.append((statement, parameters))

    event.listen(store.engine.sync_engine, "before_cursor_execute", seen)
    try:
        async with store.begin() as tx:
            await READS[name](tx)
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", seen)
    assert ran, "the read ran no statement"
    async with store.engine.connect() as conn:
        for statement, parameters in ran:
            rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            plan = [str(row[-1]) for row in rows]
            assert not _full_scans(plan), (statement, plan)
