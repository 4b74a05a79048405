"""The retention purge on SQLite and PostgreSQL (core.records.retention over store.retention), with
the time passed in: what goes, what stays, that a dry run changes nothing, that a second purge finds
nothing, that the daily chore runs once per day across processes, and what reports say after."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.exc import DBAPIError

from bot.bootstrap import DailyPurge, running
from bot.clock import Runtime
from bot.config import Settings
from bot.words import reports
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Role, Rules, Verdict
from core.approval.signing import Invite
from core.errors import DraftPurged
from core.jobs import closing
from core.jobs.jobs import Stamp
from core.jobs.states import State
from core.purchasing.requests import RequestLine
from core.purchasing.summaries import TypedRequest
from core.records import retention
from core.records.retention import PURGE_CHORE, PURGED, Purge, Retention
from store import schema
from tests.helpers.bot import settings_for as base_settings
from tests.helpers.documents import with_document
from tests.helpers.factories import APPROVER_A, OUTSIDER, T0, Clock, make_draft, new_job

ADMIN = 9001  # configured (MANZOORI_ADMIN_IDS): holds no role row, keeps their name
NOW = T0 + timedelta(days=401)  # the closed jobs of T0 are past the default 400 days
REASON = "Too dear; ring Ali on 0300-1234567"
NOTE = "supplier phoned priya.sales@hall-road.example"
ADDRESS = "priya.sales@hall-road.example"


def plan(at=NOW, keep=frozenset({ADMIN})) -> Purge:
    return Purge(Stamp("test:purge", at), Retention(), keep)


async def open_po(store, po):
    return await opening.open_job(store, new_job(), make_draft(po, recipient=ADDRESS), T0, Rules())


async def decide(store, job, verdict, reason=None):
    review = Review(job.po_number, APPROVER_A, verdict, 1, job.draft_hash, reason)
    return (await decisions.decide(store, review, T0, Rules())).job


async def closed_and_open_jobs(store):
    """A rejected PO, an approved then cancelled one with a send receipt and its PDF, and one
    waiting."""
    rejected = await decide(store, await open_po(store, "PO-2026-001"), Verdict.REJECT, REASON)
    approved = await decide(store, await open_po(store, "PO-2026-002"), Verdict.APPROVE)
    async with store.begin() as tx:
        (effect,) = await tx.effects_for(approved.id)
        await tx.update_effect(effect, result={"to": ADDRESS}, last_error=f"550 {ADDRESS}")
    await with_document(store, effect, T0)  # the PDF its e-mail would have carried
    cancelled = await closing.cancel(store, "PO-2026-002", NOTE, Stamp("cli:admin", T0))
    waiting = await open_po(store, "PO-2026-003")
    return rejected, cancelled, waiting


async def people_and_updates(store):
    """Names met, update ids claimed, a sheet recorded, notices delivered long ago and lately."""
    async with store.begin() as tx:
        await tx.met(OUTSIDER, "Stranger", T0, started=True)
        await tx.met(APPROVER_A, "Ali", T0, started=True)
        await tx.met(ADMIN, "Boss", T0, started=True)
        await tx.claim_update(1, T0)
        await tx.claim_update(2, NOW - timedelta(hours=47))  # younger than 48 h: kept
        await tx.insert_submission(1001, "a" * 64, "restock.csv", ["PO-2026-001"], T0)
        lines = (RequestLine("TEA-500G", 3),)
        await tx.insert_typed_request(
            TypedRequest("old", 1001, lines, (1,), NOW - timedelta(days=8))
        )
        await tx.insert_typed_request(
            TypedRequest("new", 1001, lines, (1,), NOW - timedelta(days=6))
        )
        await tx.insert_invite(Invite("old", Role.APPROVER, T0 + timedelta(hours=72)), ADMIN, T0)
        await tx.insert_invite(Invite("new", Role.APPROVER, NOW + timedelta(hours=72)), ADMIN, NOW)
        t = schema.notices
        keys = list((await tx.conn.execute(select(t.c.key).order_by(t.c.key))).scalars())
        old, recent = keys[0], keys[1]  # the rest stay pending: owed, never delivered
        await tx.conn.execute(update(t).where(t.c.key == old).values(status="sent"))
        await tx.conn.execute(
            update(t).where(t.c.key == recent).values(status="failed", updated_at=NOW)
        )


EXPECTED = Counter(
    {
        "processed_updates": 1,
        "delivered_notices": 1,
        "submissions": 1,
        "expired_invites": 1,
        "typed_requests": 1,  # made 8 days ago; the one of 6 days stays
        "stranger_names": 1,
        "jobs": 2,
        "draft_bodies": 2,
        "decision_reasons": 1,
        "audit_texts": 1,  # the cancel's note; the rejection's reason is in the decision
        "effect_payloads": 1,
        "documents": 1,
        "supplier_texts": 0,  # none of these went out: no supplier answered (test_supplier_answers)
        "supplier_mail": 0,  # nor wrote back (test_supplier_replies)
    }
)


async def count(store, table):
    async with store.begin() as tx:
        return (await tx.conn.execute(select(func.count()).select_from(table))).scalar_one()


async def test_a_dry_run_counts_what_the_purge_then_removes(store):
    rejected, cancelled, waiting = await closed_and_open_jobs(store)
    await people_and_updates(store)
    assert await retention.survey(store, plan()) == EXPECTED
    assert await retention.survey(store, plan()) == EXPECTED  # the dry run changed nothing
    assert await count(store, schema.processed_updates) == 2
    assert await count(store, schema.typed_requests) == 2

    assert await retention.run(store, plan()) == EXPECTED
    async with store.begin() as tx:
        for job in (rejected, cancelled):
            with pytest.raises(DraftPurged):
                await tx.draft(job.id, 1)
        assert (await tx.draft(waiting.id, 1)).recipient_email == ADDRESS  # still waiting
        assert await tx.typed_request("old") is None
        assert await tx.typed_request("new") is not None
        assert [d.reason for d in await tx.decisions(rejected.id)] == [None]
        (effect,) = await tx.effects_for(cancelled.id)
        assert (effect.result, effect.last_error) == (None, None)
        trail = await tx.audit(cancelled.id)
        assert NOTE not in repr([a.detail for a in trail])
        assert [a.action for a in trail if a.detail.get("purged")] == ["cancel"]
        (event,) = [a for a in trail if a.action == PURGED]
        assert event.at == NOW and event.detail["removed"]["draft_bodies"] == 1
        assert [a.action for a in await tx.audit(waiting.id) if a.action == PURGED] == []
        # the trail keeps ids, states, hashes, totals and times
        job = await tx.job(cancelled.id)
        assert (job.state, job.draft_hash, job.total_paisa) == (
            State.CANCELLED,
            cancelled.draft_hash,
            cancelled.total_paisa,
        )
        assert {
            u: (await tx.telegram_user(u)).first_name for u in (OUTSIDER, APPROVER_A, ADMIN)
        } == {
            OUTSIDER: "",
            APPROVER_A: "Ali",
            ADMIN: "Boss",
        }
        remaining = await tx.conn.execute(select(schema.processed_updates.c.update_id))
        assert list(remaining.scalars()) == [2]
    assert await count(store, schema.submissions) == 0


async def test_a_second_purge_finds_nothing_and_audits_nothing(store):
    rejected, _cancelled, _waiting = await closed_and_open_jobs(store)
    await people_and_updates(store)
    await retention.run(store, plan())
    again = await retention.run(store, plan(NOW + timedelta(hours=1)))
    assert sum(again.values()) == 0 and set(again) == set(EXPECTED)
    async with store.begin() as tx:
        assert [a.action for a in await tx.audit(rejected.id)].count(PURGED) == 1


async def test_nothing_of_a_job_goes_before_its_retention_ends(store):
    await closed_and_open_jobs(store)
    early = await retention.run(store, plan(T0 + timedelta(days=399)))
    assert early["jobs"] == early["draft_bodies"] == early["decision_reasons"] == 0
    short = Purge(
        Stamp("test", T0 + timedelta(days=11)), Retention(timedelta(days=10)), frozenset()
    )
    assert (await retention.run(store, short))["jobs"] == 2  # MANZOORI_RETENTION_DAYS=10


async def test_a_purged_po_still_reports_what_went_and_when(store):
    _rejected, cancelled, _waiting = await closed_and_open_jobs(store)
    await retention.run(store, plan())
    async with store.begin() as tx:
        detail = await reports.job_detail(tx, await tx.job(cancelled.id), "shop.example")
    assert detail["purged_at"] == NOW.isoformat()
    assert detail["purged"]["draft_bodies"] == 1
    shown = reports.text(detail, ZoneInfo("UTC"))
    assert "purged 2028-01-04 09:00:00 UTC (retention): draft bodies 1, decision reasons 0" in shown
    assert "cancel" in shown and ADDRESS not in shown and NOTE not in shown


@pytest.mark.parametrize(
    ("statement", "values"),
    [
        ("UPDATE drafts SET body_encrypted = :b, total_paisa = 1", {"b": b""}),  # a total
        ("UPDATE drafts SET body_encrypted = :b", {"b": b"forged"}),  # a new body, not none
        ("UPDATE decisions SET reason = 'changed my mind'", {}),  # rewriting a reason
        ("UPDATE decisions SET reason = NULL, verdict = 'approve'", {}),  # flipping a verdict
        ("UPDATE audit_events SET detail = '{}'", {}),  # erasing detail without the marker
        ("UPDATE audit_events SET detail = '{\"purged\": [\"note\"]}', actor = 'x'", {}),
        ("DELETE FROM drafts", {}),  # the purge empties bodies, it deletes no version
    ],
    ids=["total", "body", "reason", "verdict", "detail", "actor", "delete"],
)
async def test_append_only_tables_let_only_the_redaction_through(store, statement, values):
    await closed_and_open_jobs(store)
    with pytest.raises(DBAPIError, match="append-only"):
        async with store.begin() as tx:
            await tx.conn.execute(text(statement), values)


async def test_the_daily_purge_runs_once_a_day_across_processes(store):
    await closed_and_open_jobs(store)
    first = await retention.run_if_due(store, plan(), "host:1")
    assert first is not None and first["jobs"] == 2
    for later, owner in ((timedelta(0), "host:2"), (timedelta(hours=23), "host:1")):
        assert await retention.run_if_due(store, plan(NOW + later), owner) is None
    assert await retention.run_if_due(store, plan(NOW + timedelta(days=1)), "host:2") is not None


async def test_a_purge_that_died_is_taken_over_when_its_lease_ends(store):
    async with store.begin() as tx:  # host:1 claimed the chore and was killed mid-purge
        lease = NOW + retention.PURGE_LEASE
        assert await tx.claim_chore("purge", "host:1", NOW, NOW - timedelta(days=1), lease)
    assert await retention.run_if_due(store, plan(NOW + timedelta(minutes=59)), "host:2") is None
    taken = await retention.run_if_due(store, plan(NOW + timedelta(minutes=61)), "host:2")
    assert taken is not None
    async with store.begin() as tx:
        row = (await tx.conn.execute(select(schema.chores))).one()
    assert (row.done_at, row.lease_owner) == ((NOW + timedelta(minutes=61)).astimezone(UTC), None)


def settings_for(db_url: str, retention_days: int = 30) -> Settings:
    return base_settings(db_url, manzoori_retention_days=retention_days)


async def test_the_runners_daily_purge_uses_the_settings_and_the_clock(store, db_url):
    await closed_and_open_jobs(store)
    await people_and_updates(store)
    clock = Clock(T0 + timedelta(days=29))
    purge = DailyPurge(settings_for(db_url), store, Runtime("host:1", clock))
    assert await purge.run_once() == 0
    assert await count_purged(store) == 0  # 29 days: within MANZOORI_RETENTION_DAYS=30
    clock.advance(days=1, seconds=1)  # due again, and the jobs are past 30 days
    await purge.run_once()
    assert await count_purged(store) == 2
    async with store.begin() as tx:
        assert (await tx.telegram_user(ADMIN)).first_name == "Boss"  # configured: kept


async def test_running_starts_the_daily_purge(store, db_url):
    await closed_and_open_jobs(store)
    settings = settings_for(db_url, retention_days=1)
    async with running(settings, store, bot=False):  # the real clock: days after T0
        async with asyncio.timeout(10):
            while await count_purged(store) < 2:
                await asyncio.sleep(0.05)
    async with store.begin() as tx:
        chores = schema.chores  # the ladder's sweeps keep their own rows
        query = select(chores).where(chores.c.name == PURGE_CHORE)
        (row,) = (await tx.conn.execute(query)).all()
    assert row.done_at is not None and row.lease_owner is None


async def count_purged(store):
    async with store.begin() as tx:
        t = schema.jobs
        query = select(func.count()).select_from(t).where(t.c.purged_at.is_not(None))
        return (await tx.conn.execute(query)).scalar_one()
