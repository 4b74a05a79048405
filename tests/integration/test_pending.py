"""What waits for whom, on SQLite and PostgreSQL (core.messaging.pending over the store): the
requests waiting for one approver, oldest first; the card a reply quotes, found by its message; who
may read a request's trail; and a comment, kept on the trail until the purge removes its text with
the other free text."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

from bot.words import reports
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Rules, Verdict
from core.jobs import closing
from core.jobs.jobs import Stamp
from core.jobs.notices import NoticeStatus
from core.messaging import pending
from core.messaging.pending import COMMENT, COMMENT_TEXT
from core.records import retention
from core.records.retention import Purge, Retention
from tests.helpers.factories import (
    APPROVER_A,
    APPROVER_B,
    OUTSIDER,
    REQUESTER,
    T0,
    make_draft,
    new_job,
)

DEFAULT = Rules().approval.default_policy
NOW = T0 + timedelta(hours=1)
PKT = ZoneInfo("Asia/Karachi")


async def open_po(store, po, at=T0):
    return await opening.open_job(store, new_job(), make_draft(po), at, Rules())


async def test_the_requests_waiting_for_an_approver_oldest_first(store):
    young = await open_po(store, "PO-2026-002", T0 + timedelta(minutes=5))
    old = await open_po(store, "PO-2026-001")
    async with store.reading() as tx:
        mine = await pending.waiting_for_person(tx, APPROVER_A, NOW, DEFAULT)
        everyone = await pending.waiting_requests(tx, NOW, DEFAULT)
        requester = await pending.waiting_for_person(tx, REQUESTER, NOW, DEFAULT)
    assert [w.job.po_number for w in mine] == [old.po_number, young.po_number]
    assert [w.waiting_for for w in everyone] == [frozenset({APPROVER_A, APPROVER_B})] * 2
    assert mine[0].cards_to == {APPROVER_A: None, APPROVER_B: None}
    assert (mine[0].stage, mine[0].stages, mine[0].required) == (0, 1, 1)
    assert requester == []  # nobody approves their own request

    await decisions.decide(
        store, Review(old.po_number, APPROVER_A, Verdict.APPROVE, 1, old.draft_hash), NOW, Rules()
    )
    async with store.reading() as tx:
        mine = await pending.waiting_for_person(tx, APPROVER_A, NOW, DEFAULT)
    assert [w.job.po_number for w in mine] == [young.po_number]


async def test_a_reply_finds_its_card_by_message_and_free_text_the_oldest(store):
    old = await open_po(store, "PO-2026-001")
    young = await open_po(store, "PO-2026-002", T0 + timedelta(minutes=5))
    async with store.begin() as tx:
        (card,) = [n for n in await tx.notices_for(young.id) if n.user_id == APPROVER_A]
        await tx.update_notice(card, status=NoticeStatus.SENT, message_id=77)
    async with store.reading() as tx:
        assert (await tx.notice_of_message(APPROVER_A, 77)).key == card.key
        assert await tx.notice_of_message(APPROVER_B, 77) is None  # another chat's message 77
        replied = await pending.referred_by_text(tx, APPROVER_A, 77, NOW, DEFAULT)
        plain = await pending.referred_by_text(tx, APPROVER_A, None, NOW, DEFAULT)
        unknown = await pending.referred_by_text(tx, APPROVER_A, 78, NOW, DEFAULT)
        nothing = await pending.referred_by_text(tx, OUTSIDER, None, NOW, DEFAULT)
    assert (replied.job.id, replied.decidable, replied.replied) == (young.id, True, True)
    assert [w.job.id for w in replied.others] == [old.id]
    assert (plain.job.id, plain.replied, [w.job.id for w in plain.others]) == (
        old.id,
        False,
        [young.id],
    )
    assert unknown.job.id == old.id  # not a card of theirs: as a plain message
    assert nothing is None

    await decisions.decide(
        store, Review(young.po_number, APPROVER_B, Verdict.REJECT, 1, young.draft_hash, "no"),
        NOW, Rules(),
    )  # fmt: skip
    async with store.reading() as tx:
        late = await pending.referred_by_text(tx, APPROVER_A, 77, NOW, DEFAULT)
    assert (late.job.id, late.decidable) == (young.id, False)


async def test_who_may_read_a_requests_trail(store):
    job = await open_po(store, "PO-2026-001")
    async with store.reading() as tx:
        asked = [
            await pending.may_read_trail(tx, job, p, NOW, DEFAULT) for p in (APPROVER_A, OUTSIDER)
        ]
    assert asked == [True, False]  # asked for a decision; never asked
    await decisions.decide(
        store, Review(job.po_number, APPROVER_B, Verdict.APPROVE, 1, job.draft_hash), NOW, Rules()
    )
    async with store.reading() as tx:
        job = await tx.job(job.id)
        assert await pending.may_read_trail(tx, job, APPROVER_B, NOW, DEFAULT)  # decided it
        assert await pending.may_read_trail(tx, job, APPROVER_A, NOW, DEFAULT)  # had its card
        assert not await pending.may_read_trail(tx, job, OUTSIDER, NOW, DEFAULT)


async def test_a_comment_is_on_the_trail_until_the_purge_removes_its_text(store):
    job = await open_po(store, "PO-2026-001")
    said = "ok\nbut ring  Ali on 0300-1234567 \u202efirst"
    await pending.comment(store, job, APPROVER_A, said, NOW)
    await pending.comment(store, job, APPROVER_A, "\u200b \n", NOW)  # nothing visible: no comment
    async with store.reading() as tx:
        comments = [e for e in await tx.audit(job.id) if e.action == COMMENT]
    assert [(c.actor, c.detail) for c in comments] == [
        (f"user:{APPROVER_A}", {COMMENT_TEXT: "ok but ring Ali on 0300-1234567 first",
                                "draft_version": 1}),
    ]  # fmt: skip
    assert (comments[0].from_state, comments[0].to_state) == (None, None)

    await closing.cancel(store, job.po_number, "withdrawn", Stamp("cli:admin", NOW))
    later = NOW + timedelta(days=401)
    await retention.run(store, Purge(Stamp("test:purge", later), Retention(), frozenset()))
    async with store.reading() as tx:
        job = await tx.job(job.id)
        (kept,) = [e for e in await tx.audit(job.id) if e.action == COMMENT]
        shown = reports.text(await reports.job_detail(tx, job, "shop.example"), PKT)
    assert COMMENT_TEXT not in kept.detail and kept.detail["purged"] == [COMMENT_TEXT]
    assert "0300-1234567" not in shown
