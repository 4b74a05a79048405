"""A shop a year old: 100,000 POs in every state a PO rests in, 2,000 people and a year of audit
trail, written straight into a database that already holds the live requests a benchmark
measures (bench.growth), so that what it measures differs only by the history beside them.

The rows are those the product writes, cloned from a live request the real code opened (its
job, sealed draft, lines and audit trail) and carried on through the states a PO ends in: the
decisions that approved or rejected it, the send-po row that mailed it, the notices that told
people, the supplier's answer. The states a PO passes through in minutes (RECEIVED to SENDING,
FAILED_RETRYABLE, CANCELLING) are the live requests' only: a shop with five years of orders
has no more of them in flight than one with five days. What the retention table deletes is
absent as it would be: update ids older than 48 hours, delivered notices older than 30 days.
The PDFs a send kept are left out: they add bytes, not rows any read visits."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Table, insert, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from core.jobs.states import State
from store import schema

# What a year's POs ended as, in proportions a purchasing team would recognise; every state a
# PO rests in is there, the manual-review ones in the few a team leaves waiting.
ENDINGS: dict[State, float] = {
    State.SENT: 0.84,
    State.REJECTED: 0.06,
    State.CANCELLED: 0.04,
    State.EXPIRED: 0.04,
    State.FAILED_FINAL: 0.006,
    State.UNKNOWN_OUTCOME: 0.006,
    State.CANCEL_UNKNOWN: 0.004,
    State.CANCEL_FAILED: 0.004,
}
SUPPLIERS = 20  # the live requests' supplier is one of them
PEOPLE = 2_000
YEAR = timedelta(days=365)
UPDATE_IDS = 20_000  # two days of taps and messages
CHUNK = 5_000  # rows per INSERT batch


@dataclass(frozen=True)
class Template:
    """What the real code wrote for one live request: the rows a grown PO is cloned from."""

    job: dict[str, Any]
    draft: dict[str, Any]
    audit: list[dict[str, Any]]


@dataclass(frozen=True)
class Grown:
    """What grow() wrote: rows per table, and the seconds it took."""

    rows: dict[str, int]
    seconds: float


async def template(engine: AsyncEngine, po_number: str) -> Template:
    """The rows of the live request `po_number`."""
    jobs, drafts, audit = schema.jobs, schema.drafts, schema.audit_events
    async with engine.connect() as conn:
        job = (await conn.execute(select(jobs).where(jobs.c.po_number == po_number))).one()
        draft = (await conn.execute(select(drafts).where(drafts.c.job_id == job.id))).one()
        trail = await conn.execute(
            select(audit).where(audit.c.job_id == job.id).order_by(audit.c.id)
        )
        events = [dict(row._mapping) for row in trail]
    return Template(dict(job._mapping), dict(draft._mapping), events)


class _Rows:
    """The rows of every table, built PO by PO."""

    def __init__(self) -> None:
        self.by_table: dict[Table, list[dict[str, Any]]] = {}

    def add(self, table: Table, **row: Any) -> None:
        self.by_table.setdefault(table, []).append(row)


def _ending(rng: random.Random) -> State:
    return rng.choices(list(ENDINGS), weights=list(ENDINGS.values()))[0]


def _people(rng: random.Random, live: set[int], now: datetime) -> tuple[list[int], _Rows]:
    """2,000 people, the live ones among them: the others requesters at the branches and a
    few admins. The approvers are the live requests' own: under the default policy every
    approver is asked for every PO, so more of them would be more cards per PO, not more
    history. The requesters' ids."""
    rows = _Rows()
    requesters: list[int] = []
    for n in range(PEOPLE - len(live)):
        user_id = 5_000_000 + n
        role = "admin" if n % 50 == 0 else "requester"
        if role == "requester":
            requesters.append(user_id)
        since = now - YEAR * rng.random()
        rows.add(
            schema.user_roles, user_id=user_id, role=role, granted_by="grown", granted_at=since
        )
        rows.add(
            schema.telegram_users, user_id=user_id, first_name=f"P{n}", started_at=since,
            blocked_at=None, updated_at=since, language="ur" if n % 3 == 0 else None,
        )  # fmt: skip
    return requesters, rows


def _po(
    rows: _Rows, t: Template, n: int, ended: State, requester: int, approver: int,
    skus: list[str], rng: random.Random, now: datetime,
) -> None:  # fmt: skip
    """One PO of the year, opened at a random moment of it and carried to `ended`."""
    created = now - YEAR * rng.random() - timedelta(hours=1)
    decided = created + timedelta(minutes=rng.uniform(5, 600))
    updated = decided + timedelta(minutes=rng.uniform(1, 60))
    job_id, supplier = str(uuid.uuid4()), f"SUP-GROWN-{n % SUPPLIERS:02d}"
    if n % SUPPLIERS == 0:
        supplier = t.job["supplier_id"]
    po = f"PO-{created.year}-{100_000 + n}"
    hash_, total = t.draft["hash"], 0
    lines = rng.sample(skus, rng.randint(1, min(6, len(skus))))
    for sku in lines:
        quantity, price = rng.randint(1, 200), rng.randint(100, 500_000)
        total += quantity * price
        rows.add(
            schema.order_lines, job_id=job_id, draft_version=1, sku=sku, supplier_id=supplier,
            quantity=quantity, unit_price_paisa=price, category=None, gross_paisa=quantity * price,
        )  # fmt: skip
    approved = ended not in (State.REJECTED, State.EXPIRED)
    rows.add(
        schema.jobs, **{**t.job, "id": job_id, "po_number": po, "state": ended.value,
        "version": 8, "requester_id": requester, "input_ref": f"grown:{n}",
        "supplier_id": supplier, "total_paisa": total,
        "decision_deadline": created + timedelta(days=3),
        "created_at": created, "updated_at": updated, "purged_at": None,
        "approved_at": decided if approved else None},
    )  # fmt: skip
    rows.add(
        schema.drafts, **{**t.draft, "job_id": job_id, "supplier_id": supplier,
        "total_paisa": total, "line_count": len(lines), "created_at": created},
    )  # fmt: skip
    for event in t.audit:  # the database numbers them
        cloned = {name: value for name, value in event.items() if name != "id"}
        rows.add(schema.audit_events, **{**cloned, "job_id": job_id, "at": created})
    if ended != State.EXPIRED:
        verdict = "approve" if approved else "reject"
        rows.add(
            schema.decisions, job_id=job_id, reviewer_id=approver, reviewer_role="approver",
            verdict=verdict, draft_version=1, draft_hash=hash_, at=decided,
            expires_at=decided + timedelta(days=3), policy_basis="default",
            reason=None if approved else "over budget", stage=1, policy_version="", rule="",
            on_behalf_of=None,
        )  # fmt: skip
        moved = State.APPROVED if approved else State.REJECTED
        _audit(rows, job_id, decided, f"user:{approver}", verdict, State.AWAITING_APPROVAL, moved)
    else:
        _audit(rows, job_id, decided, "runner", "expire", State.AWAITING_APPROVAL, ended)
    if approved:
        key = f"send-po:{po}:v1:{hash_}"
        status = {
            State.FAILED_FINAL: "failed", State.UNKNOWN_OUTCOME: "unknown",
        }.get(ended, "succeeded")  # fmt: skip
        rows.add(
            schema.effects, key=key, job_id=job_id, kind="send-po", draft_version=1,
            draft_hash=hash_, status=status, version=4, attempts=1, next_attempt_at=None,
            first_attempt_at=decided, lease_owner=None, lease_until=None, started_at=decided,
            result={"message_id": f"<{job_id}@grown>"} if status == "succeeded" else None,
            last_error=None, created_at=decided, updated_at=updated,
        )  # fmt: skip
        _audit(rows, job_id, decided, "runner", "start_send", State.APPROVED, State.SENDING)
        sent_to = State.SENT if status == "succeeded" else ended
        _audit(rows, job_id, updated, "runner", "mark_sent", State.SENDING, sent_to)
        if ended in (State.CANCELLED, State.CANCEL_UNKNOWN, State.CANCEL_FAILED):
            _audit(rows, job_id, updated, "admin", "call_off", State.SENT, State.CANCELLING)
        if ended == State.SENT and n % 2 == 0:
            rows.add(
                schema.supplier_answers, job_id=job_id, draft_version=1, round=1,
                reply="accept", key=f"answer:{po}:v1", answered_at=updated, delivery_date=None,
                text_encrypted=None, lines=[], outcome="stands", proposal_version=None,
                decided_at=None,
            )  # fmt: skip
    if now - updated < timedelta(days=30):  # delivered notices are kept 30 days
        told = ended.value
        for kind, user_id, key in (
            ("card", approver, f"card:{po}:v1:{approver}"),
            ("cards", 0, f"cards:{po}:j6"),
            ("status", requester, f"status:{po}:{ended.value}"),
        ):
            rows.add(
                schema.notices, key=key, kind=kind, user_id=user_id, job_id=job_id,
                draft_version=1, status="sent", version=3, attempts=1, next_attempt_at=created,
                lease_owner=None, lease_until=None, message_id=n, last_error=None,
                created_at=created, updated_at=updated, event=told if kind == "status" else "",
            )  # fmt: skip


def _audit(
    rows: _Rows, job_id: str, at: datetime, actor: str, action: str, from_: State, to: State
) -> None:
    rows.add(
        schema.audit_events, job_id=job_id, at=at, actor=actor, action=action,
        from_state=from_.value, to_state=to.value, detail={},
    )  # fmt: skip


async def grow(
    engine: AsyncEngine, t: Template, *, count: int, requester: int, live_people: set[int],
    skus: list[str], now: datetime, seed: int = 2026,
) -> Grown:  # fmt: skip
    """Write `count` POs of the past year beside the live requests, `requester` (the live one)
    having asked for one in fifty, with the people and the update ids a year leaves."""
    started = time.perf_counter()
    rng = random.Random(seed)  # noqa: S311  # a fixture, not a secret
    requesters, rows = _people(rng, live_people, now)
    approvers = sorted(live_people - {requester})
    for n in range(count):
        asker = requester if n % 50 == 0 else rng.choice(requesters)
        _po(rows, t, n, _ending(rng), asker, rng.choice(approvers), skus, rng, now)
    for n in range(UPDATE_IDS):
        at = now - timedelta(hours=48) * (n / UPDATE_IDS)
        rows.add(schema.processed_updates, update_id=10_000_000 + n, processed_at=at)
    written: dict[str, int] = {}
    async with engine.begin() as conn:
        for table in schema.metadata.sorted_tables:  # those referred to first
            batch = rows.by_table.get(table, [])
            for chunk in _chunks(batch):
                await conn.execute(insert(table), chunk)
            if batch:
                written[table.name] = len(batch)
        if engine.dialect.name == "postgresql":  # as autovacuum would have, long before
            await conn.execute(text("ANALYZE"))
    return Grown(written, time.perf_counter() - started)


def _chunks(batch: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(batch), CHUNK):
        yield batch[start : start + CHUNK]
