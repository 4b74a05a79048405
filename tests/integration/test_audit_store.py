"""The audit export's reads (store.audit), on SQLite and PostgreSQL: a period of Pakistan
days with its edges, the PO number and the draft each event names (a send's through its
outbox row), the order by time then id, and a stream longer than one page."""

from __future__ import annotations

from datetime import date, timedelta
from zoneinfo import ZoneInfo

from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Rules, Verdict
from core.jobs.jobs import AuditEvent, Stamp
from core.jobs.states import State
from core.outbox import dispatch
from core.outbox.dispatch import Attempted
from core.records.audit import Logged, Period, export_row
from store.sql import SqlStore
from tests.helpers.documents import with_document
from tests.helpers.factories import APPROVER_A, T0, make_draft, new_job

PKT = ZoneInfo("Asia/Karachi")
RULES = Rules()
LEASE = timedelta(seconds=60)
# T0 is 2026-11-29 09:00 UTC, 14:00 in Karachi (UTC+5): that PKT day runs from 19:00 UTC on
# the 28th to 19:00 UTC on the 29th.
DAY = date(2026, 11, 29)
TODAY = date(2026, 12, 4)  # when the export is asked for: after DAY, in Karachi


async def sent(store: SqlStore, po: str) -> str:
    """`po` requested and approved at T0, and e-mailed a minute later; its job id."""
    job = await opening.open_job(store, new_job(), make_draft(po), T0, RULES)
    review = Review(po, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash or "")
    await decisions.decide(store, review, T0, RULES)
    at = T0 + timedelta(minutes=1)
    [effect] = await dispatch.claim(store, at, "r1", LEASE, 10)
    await with_document(store, effect, at)
    order = await dispatch.start_attempt(store, effect.key, "r1", at, LEASE, RULES)
    assert order is not None
    done = Attempted("r1", result={"smtp": "250 ok"})
    assert await dispatch.finish_attempt(store, order, done, at, RULES, 0.5) is State.SENT
    return job.id


async def between(store: SqlStore, period: Period) -> list[Logged]:
    async with store.reading() as tx:
        return [logged async for logged in tx.audit_between(period.start, period.end)]


async def test_a_period_holds_its_days_events_with_po_and_draft_named(store):
    job_id = await sent(store, "PO-2026-0001")
    people = Stamp("user:9001", T0)
    async with store.begin() as tx:  # just inside and just outside the Pakistan day
        last = T0.replace(hour=18, minute=59, second=59)
        await tx.append_audit(
            *[
                AuditEvent.stamped(Stamp("user:9001", last), "invite", {"role": "approver"}),
                AuditEvent.stamped(Stamp("user:9001", last + timedelta(seconds=1)), "x", {}),
                AuditEvent.stamped(people, "same_time_later_id", {}),
            ]
        )
    found = await between(store, Period.of_days(DAY, DAY, PKT, today=TODAY))
    actions = [logged.event.action for logged in found]
    # grant_role: the cast, granted at T0 before anything else (lower ids at the same time).
    assert actions == [
        "grant_role", "grant_role", "grant_role",
        "receive", "validate", "research", "draft", "request_approval", "approve",
        "same_time_later_id",
        "start_send", "mark_sent",
        "invite",
    ]  # fmt: skip
    by_action = {logged.event.action: logged for logged in found}
    async with store.reading() as tx:
        job = await tx.job(job_id)
    for action in ("approve", "start_send", "mark_sent"):
        assert by_action[action].po_number == "PO-2026-0001"
        assert (by_action[action].draft_version, by_action[action].draft_hash) == (
            1,
            job.draft_hash,
        )
    assert by_action["invite"].po_number is None and by_action["invite"].draft_version is None
    assert by_action["request_approval"].draft_version is None  # it names no version
    row = export_row(by_action["mark_sent"])
    assert (row.result, row.draft_version, row.draft_hash) == ("sent", 1, job.draft_hash)
    assert export_row(by_action["approve"]).stage == 1

    after, before = DAY + timedelta(days=1), DAY - timedelta(days=1)
    next_day = await between(store, Period.of_days(after, after, PKT, today=TODAY))
    assert [logged.event.action for logged in next_day] == ["x"]
    assert await between(store, Period.of_days(before, before, PKT, today=TODAY)) == []


async def test_a_trail_longer_than_a_page_streams_whole_and_in_order(store):
    stamp = Stamp("runner", T0 + timedelta(hours=1))
    async with store.begin() as tx:
        # Written newest first: the read orders them by time, not by insertion.
        await tx.append_audit(
            *[
                AuditEvent.stamped(
                    Stamp("runner", stamp.at - timedelta(seconds=n)), "tick", {"n": n}
                )
                for n in range(1200)
            ]
        )
    found = await between(store, Period.of_days(DAY, DAY, PKT, today=TODAY))
    ticks = [logged.event.detail["n"] for logged in found if logged.event.action == "tick"]
    assert ticks == list(range(1199, -1, -1))


async def test_one_pos_trail_is_its_events_only(store):
    first = await sent(store, "PO-2026-0001")
    await opening.open_job(store, new_job(), make_draft("PO-2026-0002"), T0, RULES)
    async with store.reading() as tx:
        trail = await tx.audit_logged(first)
        plain = await tx.audit(first)
    assert [logged.event for logged in trail] == plain
    assert {logged.po_number for logged in trail} == {"PO-2026-0001"}
    assert [logged.draft_version for logged in trail if logged.event.action == "mark_sent"] == [1]
