"""Silence is chased (core.suppliers.chasing), on SQLite and PostgreSQL: a sent PO whose supplier
has not answered gets one reminder e-mail (its own key, once however often and by however many
processes the sweep runs), then one message each to the requester and the admins, in working
hours; nothing after an answer, a call-off or a proposal; a reminder owed before an answer is
cancelled, not sent; /pending all lists the POs that wait."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from core.approval.ladder import Ladder, WorkingHours
from core.approval.policies import ApprovalPolicy, Policy, Rules
from core.jobs.answers import Reply, SupplierReply
from core.jobs.effects import EffectKind, EffectStatus, remind_po_key
from core.jobs.jobs import Stamp
from core.jobs.notices import EVERYONE, SILENT, NoticeKind
from core.messaging import delivery
from core.messaging.nudges import Sweep
from core.outbox import calling_off, dispatch
from core.outbox.calling_off import CallOff
from core.outbox.dispatch import Attempted
from core.suppliers import chasing, pages
from core.suppliers.links import link_for
from tests.helpers import suppliers
from tests.helpers.factories import FAST_RETRY, REQUESTER, make_draft

PKT = ZoneInfo("Asia/Karachi")
RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24)), retry=FAST_RETRY)
DEFAULT = Policy.default(500_000 * 100)
PO = "PO-2026-001"
ADMIN = 9001


def pkt(day: int, hour: int, minute: int = 0) -> datetime:
    """A moment of December 2026 in Pakistan time (the 1st is a Tuesday)."""
    return datetime(2026, 12, day, hour, minute, tzinfo=PKT).astimezone(UTC)


SENT_AT = pkt(1, 10)  # Tuesday 10:00
OFFICE = Ladder(WorkingHours.parse("Mon-Sat 09:00-18:00"), remind_after=timedelta(hours=2))


async def sweep(store, at, ladder=None, owner="p1"):
    run = Sweep(Stamp("ladder", at), ladder, DEFAULT, PKT, timedelta(seconds=1))
    return await chasing.sweep(store, run, owner)


async def sent(store):
    draft = make_draft(PO, delivery_date=date(2026, 12, 20))
    return await suppliers.sent(store, draft, SENT_AT, RULES)


async def chased(store):
    """The reminder rows, the silence news and the chase's audit events of the PO."""
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        reminders = [e for e in await tx.effects_for(job.id) if e.kind == EffectKind.REMIND_PO]
        news = [(n.kind, n.user_id) for n in await tx.notices_for(job.id) if n.event == SILENT]
        steps = [a.detail["step"] for a in await tx.audit(job.id) if a.action == "supplier_chased"]
    return reminders, news, steps


async def test_a_silent_supplier_is_reminded_once_then_the_team_is_told_once(store):
    await sent(store)
    assert await sweep(store, SENT_AT + timedelta(days=1)) == 0  # default: remind after 2d
    assert await chased(store) == ([], [], [])
    assert await sweep(store, SENT_AT + timedelta(days=2)) == 1
    [reminder], news, steps = await chased(store)
    assert reminder.key == remind_po_key(PO, 1, reminder.draft_hash) and news == []
    assert reminder.status is EffectStatus.PENDING and steps == ["remind"]
    assert await sweep(store, SENT_AT + timedelta(days=3)) == 0  # once, however often
    assert await sweep(store, SENT_AT + timedelta(days=4)) == 1
    [_], news, steps = await chased(store)
    assert sorted(news) == [(NoticeKind.ALERT, EVERYONE), (NoticeKind.STATUS, REQUESTER)]
    assert steps == ["remind", "escalate"]
    assert await sweep(store, SENT_AT + timedelta(days=9)) == 0
    assert len((await chased(store))[1]) == 2


async def test_two_processes_sweeping_at_once_owe_each_rung_once(store):
    await sent(store)
    at = SENT_AT + timedelta(days=5)
    counts = await asyncio.gather(*(sweep(store, at, owner=f"p{n}") for n in range(4)))
    assert sum(c or 0 for c in counts) == 2  # the reminder and the escalation
    reminders, news, _ = await chased(store)
    assert len(reminders) == 1 and len(news) == 2


async def test_the_rungs_wait_for_the_working_hours_of_the_reminders(store):
    """Sent Tuesday 10:00 with [reminders] Mon-Sat 09:00-18:00: two days on is Thursday 10:00,
    inside the hours; sent Friday 17:00, the reminder due Sunday 17:00 waits for Monday 09:00."""
    await sent(store)
    assert await sweep(store, pkt(3, 9, 59), OFFICE) == 0
    assert await sweep(store, pkt(3, 10, 0), OFFICE) == 1
    due = chasing.DEFAULT_CHASE.due(pkt(4, 17), OFFICE.working_hours, PKT)
    assert due[chasing.ChaseStep.REMIND] == pkt(7, 9)


async def test_nothing_is_chased_after_an_answer(store):
    effect = await sent(store)
    link = link_for(effect, 30)
    accept = SupplierReply(Reply.ACCEPT, 1, link.hash_prefix)
    await pages.answer(store, link, accept, SENT_AT + timedelta(hours=1), PKT, RULES)
    assert await sweep(store, SENT_AT + timedelta(days=9)) == 0
    assert await chased(store) == ([], [], [])


async def test_a_reminder_owed_before_the_answer_is_cancelled_not_sent(store):
    effect = await sent(store)
    await sweep(store, SENT_AT + timedelta(days=2))
    link = link_for(effect, 30)
    decline = SupplierReply(Reply.DECLINE, 1, link.hash_prefix, reason="no stock")
    await pages.answer(store, link, decline, SENT_AT + timedelta(days=2, hours=1), PKT, RULES)
    at = SENT_AT + timedelta(days=2, hours=2)
    [claimed] = await dispatch.claim(store, at, "runner-a", suppliers.LEASE, 10)
    order = await dispatch.start_attempt(store, claimed.key, "runner-a", at, suppliers.LEASE, RULES)
    assert order is None
    [reminder], _, _ = await chased(store)
    assert reminder.status is EffectStatus.CANCELLED


async def test_a_reminder_is_sent_once_and_a_lost_one_is_never_sent_again(store):
    await sent(store)
    at = SENT_AT + timedelta(days=2)
    await sweep(store, at)
    [claimed] = await dispatch.claim(store, at, "runner-a", suppliers.LEASE, 10)
    order = await dispatch.start_attempt(store, claimed.key, "runner-a", at, suppliers.LEASE, RULES)
    assert order is not None and order.note is not None and order.job.state.value == "SENT"
    # the runner dies mid-send: unknown, the admins told, never sent again
    later = at + suppliers.LEASE * 2
    [lost] = await dispatch.recover_stalled(store, later, provider_idempotent=False)
    assert lost.status is EffectStatus.UNKNOWN
    assert await dispatch.claim(store, later, "runner-b", suppliers.LEASE, 10) == []
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        alerts = [n.event for n in await tx.notices_for(job.id) if n.kind is NoticeKind.ALERT]
        trail = [a.action for a in await tx.audit(job.id)]
    assert alerts == ["note_failed:remind-po"] and job.state.value == "SENT"
    assert trail[-2:] == ["note_attempt", "note_unknown"]


async def test_a_reminder_that_goes_is_recorded_and_the_po_stays_sent(store):
    await sent(store)
    at = SENT_AT + timedelta(days=2)
    await sweep(store, at)
    [claimed] = await dispatch.claim(store, at, "runner-a", suppliers.LEASE, 10)
    order = await dispatch.start_attempt(store, claimed.key, "runner-a", at, suppliers.LEASE, RULES)
    assert order is not None
    done = Attempted("runner-a", result=suppliers.RECEIPT)
    state = await dispatch.finish_attempt(store, order, done, at, RULES, 0.5)
    assert state.value == "SENT"
    [reminder], _, _ = await chased(store)
    assert reminder.status is EffectStatus.SUCCEEDED


async def test_a_called_off_po_is_not_chased(store):
    await sent(store)
    stamp = Stamp(f"user:{ADMIN}", SENT_AT + timedelta(hours=1))
    await calling_off.call_off(
        store, CallOff(PO, "bought elsewhere", ADMIN), frozenset({ADMIN}), stamp
    )
    assert await sweep(store, SENT_AT + timedelta(days=9)) == 0


async def test_the_silence_news_names_the_supplier_and_its_phone_and_goes_moot_on_an_answer(
    store,
):
    from bot.files.sheets import read_csv_text
    from core.purchasing import new_terms

    terms = (
        "supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,"
        "max_qty,supplier_phone\n"
        "SUP-LHR-01,Hall Road Electronics,orders@supplier.example,CBL-USB-C-1M,Cable,"
        "1250,1,,0300-1234567\n"
    )
    imported = await new_terms.import_terms(store, read_csv_text(terms.encode()), SENT_AT, "test")
    draft = make_draft(PO, delivery_date=date(2026, 12, 20), terms_version=imported.version)
    effect = await suppliers.sent(store, draft, SENT_AT, RULES)
    await sweep(store, SENT_AT + timedelta(days=4))
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        [mine] = [
            n
            for n in await tx.notices_for(job.id)
            if n.kind is NoticeKind.STATUS and n.event == SILENT
        ]
    news = await delivery.news_to_send(store, mine, SENT_AT + timedelta(days=4), DEFAULT)
    assert news is not None and news.phone == "923001234567" and news.sent is not None
    assert news.sent.key == effect.key and news.draft.supplier_name == "Hall Road Electronics"
    async with store.reading() as tx:  # sealed at rest
        raw = await tx.conn.exec_driver_sql("SELECT phone_encrypted FROM terms_suppliers")
        assert b"1234567" not in raw.one()[0]
    link = link_for(effect, 30)
    accept = SupplierReply(Reply.ACCEPT, 1, link.hash_prefix)
    await pages.answer(store, link, accept, SENT_AT + timedelta(days=4, hours=1), PKT, RULES)
    assert await delivery.news_to_send(store, mine, SENT_AT + timedelta(days=5), DEFAULT) is None


async def test_pending_all_lists_the_pos_waiting_for_their_supplier(store):
    await sent(store)
    async with store.reading() as tx:
        [waiting] = await chasing.awaiting_suppliers(tx, SENT_AT + timedelta(days=3))
        assert waiting.job.po_number == PO
        assert await chasing.awaiting_suppliers(tx, SENT_AT + timedelta(days=91)) == []


async def test_a_policys_suppliers_section_sets_the_rungs(store):
    from core.approval.approval_policy import import_policy

    policy = (
        '[groups]\napprovers = "Approvers"\n[[rules]]\nname = "all"\n'
        'stages = [{ group = "approvers" }]\n'
        '[suppliers]\nremind_after = "6h"\nescalate_after = "1d"\n'
    )
    assert (await import_policy(store, policy, SENT_AT, "cli:test")).version
    await sent(store)
    assert await sweep(store, SENT_AT + timedelta(hours=5)) == 0
    assert await sweep(store, SENT_AT + timedelta(hours=6)) == 1
    assert await sweep(store, SENT_AT + timedelta(days=1)) == 1
    assert (await chased(store))[2] == ["remind", "escalate"]
