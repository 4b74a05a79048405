"""Builders for test data: drafts, jobs and a controllable clock."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from core.drafting.drafts import Draft, DraftLine
from core.jobs.jobs import NewJob
from core.jobs.retries import RetryPolicy

# Retries fast and few, so tests reach the dead letter in three attempts.
FAST_RETRY = RetryPolicy(
    base_delay=timedelta(seconds=10),
    max_delay=timedelta(minutes=5),
    max_jitter=timedelta(seconds=4),
    max_attempts=3,
    max_elapsed=timedelta(hours=1),
)
T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
REQUESTER = 1001
APPROVER_A = 2001
APPROVER_B = 2002
OUTSIDER = 3001


def make_draft(
    po: str = "PO-2026-001",
    *,
    unit_price_paisa: int = 125_000,
    quantity: int = 4,
    recipient: str = "orders@supplier.example",
    **changes: object,
) -> Draft:
    """A two-line draft; the first line's price and quantity set the total."""
    draft = Draft(
        po_number=po,
        supplier_id="SUP-LHR-01",
        supplier_name="Hall Road Electronics",
        recipient_email=recipient,
        terms_version="terms-2026-11",
        lines=(
            DraftLine("CBL-USB-C-1M", "USB-C cable 1 m", quantity, unit_price_paisa),
            DraftLine("ADP-65W", '65 W charger, "GaN", PK plug', 2, 450_000),
        ),
    )
    return replace(draft, **changes) if changes else draft  # type: ignore[arg-type]


def new_job(requester: int = REQUESTER, input_ref: str | None = None) -> NewJob:
    """A fresh request from the requester."""
    return NewJob(
        id=str(uuid.uuid4()),
        requester_id=requester,
        input_ref=input_ref or f"tg-file:{uuid.uuid4().hex[:12]}",
        source_versions={"supplier_terms": "terms-2026-11"},
    )


@dataclass
class Clock:
    """A clock the test moves by hand."""

    now: datetime = field(default=T0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now
