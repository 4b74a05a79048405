"""The reminder ladder on SQLite and PostgreSQL (core.messaging.nudges), on a fake clock: each step
owed once when due, audited once, however many processes sweep and however often they restart;
nothing for a person who decided or a request that was decided; an unreachable approver escalated at
once; working hours honoured (Friday evening to Saturday morning); several requests due for one
person make one message; the digest once a day."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, time, timedelta

from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.ladder import Ladder, WorkingHours
from core.approval.policies import PAKISTAN, ApprovalPolicy, Policy, Rules, Verdict
from core.jobs.jobs import Job, Stamp
from core.jobs.notices import EVERYONE, Notice, NoticeKind, NoticeStatus
from core.messaging import delivery, nudges
from core.messaging.delivery import Failure, Undelivered
from core.messaging.nudges import Sweep
from store import schema
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, APPROVER_B, FAST_RETRY, make_draft, new_job
from tests.helpers.store import DATA_KEY, grant_cast

_notices = schema.notices

ADMIN = 9001
DEFAULT = Policy.default(500_000 * 100)
ALWAYS = WorkingHours.parse("Mon-Sun 00:00-24:00")
LADDER = Ladder(
    ALWAYS,
    remind_after=timedelta(hours=2),
    escalate_after=timedelta(hours=6),
    before_expiry=timedelta(hours=1),
)
BIG = 2_000_000 * 100  # a unit price that takes a PO above the dual-approval line


def pkt(day: int, hour: int, minute: int = 0) -> datetime:
    """A moment of December 2026 in Pakistan time (the 4th is a Friday)."""
    return datetime(2026, 12, day, hour, minute, tzinfo=PAKISTAN).astimezone(UTC)


T = pkt(1, 10)  # a Tuesday morning


async def waiting(
    store: SqlStore, po: str = "PO-2026-0001", at: datetime = T, rules: Rules | None = None,
    **draft: object,
) -> Job:  # fmt: skip
    """Ali and Bilal pressed Start; one PO waits for them."""
    async with store.begin() as tx:
        await tx.met(APPROVER_A, "Ali", at, started=True)
        await tx.met(APPROVER_B, "Bilal", at, started=True)
    return await opening.open_job(store, new_job(), make_draft(po, **draft), at, rules or Rules())


async def deliver_cards(
    store: SqlStore, at: datetime, refused: frozenset[int] = frozenset()
) -> None:
    """Every card owed goes out at `at`, but to those who never started the bot."""
    async with store.begin() as tx:
        claimed = await tx.claim_notices(at, "test", at + timedelta(minutes=1), 100, None)
    for notice in claimed:
        if notice.kind is not NoticeKind.CARD:
            continue
        if notice.user_id in refused:
            why = Undelivered(Failure.NEVER_STARTED, "Forbidden: bot can't initiate")
            await delivery.undelivered(store, notice, why, at, FAST_RETRY, 0.0)
        else:
            await delivery.sent(store, notice, 1, at)


async def swept(
    store: SqlStore, at: datetime, owner: str = "p1", ladder: Ladder = LADDER
) -> int | None:
    run = Sweep(Stamp("ladder", at), ladder, DEFAULT, PAKISTAN, timedelta(seconds=1))
    return await nudges.sweep(store, run, owner)


async def nudge_keys(store: SqlStore) -> list[str]:
    async with store.reading() as tx:
        found = await tx.conn.execute(
            _notices.select().where(_notices.c.kind == NoticeKind.NUDGE.value)
        )
        return sorted(row.key for row in found)


async def ladder_audit(store: SqlStore) -> list[tuple[str, int]]:
    async with store.reading() as tx:
        events = [e for e in await tx.audit(None) if e.action.startswith("ladder_")]
        events += [
            e
            for job in await tx.list_jobs(None, 100)
            for e in await tx.audit(job.id)
            if e.action.startswith("ladder_")
        ]
    return sorted((e.action, e.detail["to"]) for e in events)


async def claimed(store: SqlStore, at: datetime) -> list[Notice]:
    async with store.begin() as tx:
        return await tx.claim_notices(at, "runner", at + timedelta(minutes=2), 100, None)


async def test_each_step_is_owed_once_when_due_and_audited_once(store: SqlStore) -> None:
    job = await waiting(store)
    await deliver_cards(store, T)
    po, a, b = job.po_number, APPROVER_A, APPROVER_B
    assert await swept(store, T + timedelta(hours=1)) == 0
    assert await swept(store, T + timedelta(hours=2)) == 2
    assert await nudge_keys(store) == [f"remind:{po}:v1:{a}", f"remind:{po}:v1:{b}"]
    assert await swept(store, T + timedelta(hours=2), "p2") is None  # swept just now
    assert await swept(store, T + timedelta(hours=3), "p2") == 0  # a restart: nothing again
    assert await swept(store, T + timedelta(hours=6)) == 2
    assert await swept(store, T + timedelta(hours=23)) == 2
    assert await swept(store, T + timedelta(hours=25)) == 0  # past the deadline: nothing
    assert await nudge_keys(store) == sorted(
        f"{step}:{po}:v1:{who}" for step in ("remind", "escalate", "expiring") for who in (a, b)
    )
    assert await ladder_audit(store) == sorted(
        (f"ladder_{step}", who) for step in ("remind", "escalate", "expiring") for who in (a, b)
    )


async def test_two_processes_sweeping_at_once_owe_each_nudge_once(db_url: str) -> None:
    one, two = SqlStore(make_engine(db_url), DATA_KEY), SqlStore(make_engine(db_url), DATA_KEY)
    try:
        await grant_cast(one)
        await waiting(one)
        await deliver_cards(one, T)
        for at in (T + timedelta(hours=7), T + timedelta(hours=7, seconds=2)):
            counts = await asyncio.gather(swept(one, at, "p1"), swept(two, at, "p2"))
            assert sum(c or 0 for c in counts) == (4 if at == T + timedelta(hours=7) else 0)
        assert len(await nudge_keys(one)) == 4  # remind and escalate, for Ali and Bilal
        assert len(await ladder_audit(one)) == 4
    finally:
        await one.close()
        await two.close()


async def test_nothing_for_whoever_decided_nor_once_the_request_is_decided(
    store: SqlStore,
) -> None:
    job = await waiting(store, unit_price_paisa=BIG)  # two approvals needed
    await deliver_cards(store, T)
    review = Review(job.po_number, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash or "")
    await decisions.decide(store, review, T + timedelta(hours=1), Rules())
    assert await swept(store, T + timedelta(hours=2)) == 1  # Bilal only
    assert await nudge_keys(store) == [f"remind:{job.po_number}:v1:{APPROVER_B}"]
    [owed] = [n for n in await claimed(store, T + timedelta(hours=2)) if n.kind is NoticeKind.NUDGE]
    review = Review(job.po_number, APPROVER_B, Verdict.REJECT, 1, job.draft_hash or "", "no")
    await decisions.decide(store, review, T + timedelta(hours=2, minutes=1), Rules())
    # Read when delivered: the request was decided after the reminder was owed.
    policy = ApprovalPolicy()
    now = T + timedelta(hours=2, minutes=2)
    assert await nudges.nudge_to_send(store, [owed], now, policy, now) is None
    async with store.reading() as tx:
        [row] = [n for n in await tx.notices_for(job.id) if n.key == owed.key]
    assert row.status is NoticeStatus.CANCELLED
    assert await swept(store, T + timedelta(hours=7)) == 0  # no escalation either


async def test_an_unreachable_approver_is_escalated_at_once(store: SqlStore) -> None:
    job = await waiting(store)
    await deliver_cards(store, T, refused=frozenset({APPROVER_A}))
    assert await swept(store, T + timedelta(seconds=5)) == 1
    assert await nudge_keys(store) == [f"escalate:{job.po_number}:v1:{APPROVER_A}"]
    [escalation] = [
        n for n in await claimed(store, T + timedelta(seconds=6)) if n.kind is NoticeKind.NUDGE
    ]
    assert escalation.user_id == EVERYONE
    now = T + timedelta(seconds=7)
    assert await nudges.fan_out_escalation(store, escalation, now, frozenset({ADMIN})) == 1
    [copy] = [n for n in await claimed(store, now) if n.kind is NoticeKind.NUDGE]
    assert copy.user_id == ADMIN
    nudge = await nudges.nudge_to_send(store, [copy], now, ApprovalPolicy(), now)
    assert nudge is not None and nudge.step == "escalate"
    [due] = nudge.items
    assert (due.person, due.unreachable) == (f"Ali (Telegram id {APPROVER_A})", True)
    assert due.facts.job.po_number == job.po_number


async def test_a_reminder_due_friday_evening_goes_out_saturday_morning(store: SqlStore) -> None:
    hours = Ladder(WorkingHours.parse("Mon-Sat 09:00-19:00"), remind_after=timedelta(hours=2))
    await waiting(store, at=pkt(4, 18))
    await deliver_cards(store, pkt(4, 18))  # Friday 18:00: the reminder falls at 20:00
    assert await swept(store, pkt(4, 20, 30), ladder=hours) == 0
    assert await swept(store, pkt(5, 8, 59), ladder=hours) == 0
    assert await swept(store, pkt(5, 9), ladder=hours) == 2  # Saturday's opening


async def test_several_requests_due_for_one_person_make_one_message(store: SqlStore) -> None:
    first = await waiting(store, "PO-2026-0001")
    second = await waiting(store, "PO-2026-0002", at=T + timedelta(minutes=1))
    await deliver_cards(store, T + timedelta(minutes=1))
    assert await swept(store, T + timedelta(hours=3)) == 4
    now = T + timedelta(hours=3, seconds=1)
    batch = [n for n in await claimed(store, now) if n.kind is NoticeKind.NUDGE]
    together, carried = nudges.together(batch)
    assert len(together) == 2 and len(carried) == 2  # one message each for Ali and Bilal
    alis = next(n for n in batch if n.user_id == APPROVER_A and n.key in together)
    nudge = await nudges.nudge_to_send(
        store, [alis, *together[alis.key]], now, ApprovalPolicy(), now
    )
    assert nudge is not None and nudge.step == "remind"
    assert [d.facts.job.po_number for d in nudge.items] == [first.po_number, second.po_number]
    await nudges.nudge_sent(store, nudge, 7, now)
    async with store.reading() as tx:
        rows = [n for j in (first, second) for n in await tx.notices_for(j.id)]
    sent = {n.key for n in rows if n.status is NoticeStatus.SENT and n.message_id == 7}
    assert sent == {n.key for n in nudge.settles} and len(sent) == 2


async def test_a_person_s_other_due_nudges_are_claimed_with_the_one_delivered(
    store: SqlStore,
) -> None:
    await waiting(store, "PO-2026-0001")
    await waiting(store, "PO-2026-0002")
    await deliver_cards(store, T)
    assert await swept(store, T + timedelta(hours=3)) == 4
    now = T + timedelta(hours=3, seconds=1)
    async with store.begin() as tx:  # a batch that holds only one of Ali's
        batch = await tx.claim_notices(now, "runner", now + timedelta(minutes=2), 1, None)
    [one] = batch
    nudge = await nudges.nudge_to_send(store, batch, now, ApprovalPolicy(), now + timedelta(1))
    assert nudge is not None and len(nudge.items) == 2 and len(nudge.settles) == 2
    assert {n.user_id for n in nudge.settles} == {one.user_id}


async def test_the_digest_goes_out_once_a_day_to_each_approver(store: SqlStore) -> None:
    rules = Rules(approval=ApprovalPolicy(ttl=timedelta(days=3)))
    daily = Ladder(ALWAYS, remind_after=timedelta(days=5), digest_at=time(9, 30))
    await waiting(store, "PO-2026-0001", at=pkt(1, 10), rules=rules)
    await deliver_cards(store, pkt(1, 10))  # after Tuesday's digest: no digest that day
    assert await swept(store, pkt(1, 12), ladder=daily) == 0
    assert await swept(store, pkt(2, 9, 29), ladder=daily) == 0
    assert await swept(store, pkt(2, 9, 30), ladder=daily) == 2
    assert await swept(store, pkt(2, 9, 31), "p2", ladder=daily) == 0  # another process
    assert await swept(store, pkt(2, 18), ladder=daily) == 0
    assert await swept(store, pkt(3, 9, 45), ladder=daily) == 2  # the next day's
    assert await nudge_keys(store) == sorted(
        f"digest:2026-12-0{day}:{who}" for day in (2, 3) for who in (APPROVER_A, APPROVER_B)
    )
    assert [a for a, _ in await ladder_audit(store)] == ["ladder_digest"] * 4
    second = await waiting(store, "PO-2026-0002", at=pkt(3, 9, 50), rules=rules)
    now = pkt(3, 10)
    [digest] = [n for n in await claimed(store, now) if n.key == f"digest:2026-12-03:{APPROVER_A}"]
    nudge = await nudges.nudge_to_send(store, [digest], now, ApprovalPolicy(), now)
    assert nudge is not None and nudge.step == "digest"
    # Read when delivered, oldest first: the PO opened since is listed too.
    assert [d.facts.job.po_number for d in nudge.items] == ["PO-2026-0001", second.po_number]


async def test_no_ladder_no_nudges(store: SqlStore) -> None:
    await waiting(store)
    await deliver_cards(store, T)
    run = Sweep(Stamp("ladder", T + timedelta(days=2)), None, DEFAULT, PAKISTAN, timedelta(1))
    assert await nudges.sweep(store, run, "p1") == 0
    assert await nudge_keys(store) == []
