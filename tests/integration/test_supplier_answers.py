"""The supplier's answers from the link in a PO's e-mail (core.suppliers.pages), on SQLite and
PostgreSQL: accept, decline and propose are recorded once per version with their audit event
and news to the requester and approvers; the same answer twice is one, a different one is
refused; a cancelled or superseded version takes none; opening the page records nothing the
supplier said but settles a send of unknown outcome as delivered, with nothing sent again."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from datetime import date, timedelta
from zoneinfo import ZoneInfo

import pytest

from core.approval import decisions
from core.approval.decisions import Review
from core.approval.policies import ApprovalPolicy, Rules, Verdict
from core.drafting.drafts import DraftLine
from core.errors import AmbiguousSendError, AnswerProblem, AnswerRefused, UnknownJob
from core.jobs.answers import LineProposal, Outcome, Reply, SupplierReply, SupplierStatus
from core.jobs.effects import EffectStatus
from core.jobs.jobs import Stamp
from core.jobs.notices import SETTLED_BY_LINK, SUPPLIER, NoticeKind
from core.jobs.states import Action, State
from core.outbox import calling_off, dispatch
from core.outbox.calling_off import CallOff
from core.suppliers import pages
from core.suppliers.links import SupplierLink, link_for
from tests.helpers import suppliers
from tests.helpers.factories import (
    APPROVER_A,
    APPROVER_B,
    FAST_RETRY,
    REQUESTER,
    T0,
    make_draft,
)

RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24)), retry=FAST_RETRY)
LEASE = timedelta(seconds=60)
PKT = ZoneInfo("Asia/Karachi")
PO = "PO-2026-001"
LATER = T0 + timedelta(hours=2)
DUE = date(2026, 12, 20)


async def _approved(store, draft=None):
    return await suppliers.approved(store, draft or make_draft(PO, delivery_date=DUE), T0, RULES)


async def _attempt(store, error=None):
    """One attempt of the due send; the link its e-mail carried."""
    return link_for(await suppliers.attempted(store, T0, RULES, error), 30)


async def sent(store, draft=None) -> SupplierLink:
    """A PO approved and e-mailed (SENT): the link its e-mail carried."""
    await _approved(store, draft)
    return await _attempt(store)


async def state_of(store):
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        return (
            job,
            await tx.effects_for(job.id),
            await tx.audit(job.id),
            await tx.notices_for(job.id),
        )


def reply(link, kind, **more):
    return SupplierReply(kind, link.draft_version, link.hash_prefix, **more)


async def test_opening_the_page_shows_the_po_and_records_nothing(store):
    link = await sent(store)
    before = await state_of(store)
    page = await pages.open_page(store, link, LATER, PKT)
    assert page.status is SupplierStatus.AWAITING and page.can_answer and page.answer is None
    assert page.document.po_number == PO and page.document.delivery_date == DUE
    assert not page.document.draft  # as the supplier's PDF shows it, not a DRAFT
    assert await state_of(store) == before


async def test_an_accept_is_recorded_once_with_its_trail_and_news(store):
    link = await sent(store)
    later = date(2026, 12, 22)
    page = await pages.answer(
        store, link, reply(link, Reply.ACCEPT, delivery_date=later), LATER, PKT, RULES
    )
    assert page.status is SupplierStatus.ACCEPTED and not page.can_answer
    assert page.answer is not None and page.answer.delivery_date == later
    again = await pages.answer(
        store, link, reply(link, Reply.ACCEPT, delivery_date=later), LATER, PKT, RULES
    )
    assert again.answer == page.answer  # the same POST twice: one answer
    job, _, trail, owed = await state_of(store)
    assert job.state is State.SENT  # an answer moves no state: the PO went
    assert [e.action for e in trail].count("supplier_accept") == 1
    [event] = [e for e in trail if e.action == "supplier_accept"]
    assert event.actor == "supplier:SUP-LHR-01" and event.detail["delivery_date"] == "2026-12-22"
    news = [(n.user_id, n.event) for n in owed if n.event.startswith(f"{SUPPLIER}:")]
    assert news == [(REQUESTER, "supplier:accepted"), (APPROVER_A, "supplier:accepted")]
    async with store.reading() as tx:
        assert await pages.supplier_status(tx, job) == (SupplierStatus.ACCEPTED, LATER)


async def test_a_different_answer_after_one_is_refused_and_changes_nothing(store):
    link = await sent(store)
    await pages.answer(store, link, reply(link, Reply.ACCEPT), LATER, PKT, RULES)
    before = await state_of(store)
    with pytest.raises(AnswerRefused) as refused:
        await pages.answer(
            store, link, reply(link, Reply.DECLINE, reason="no stock"), LATER, PKT, RULES
        )
    assert refused.value.code is AnswerProblem.ANSWERED
    assert await state_of(store) == before


async def test_a_decline_needs_a_reason_and_keeps_it_sealed_in_the_answer(store):
    link = await sent(store)
    with pytest.raises(AnswerRefused) as refused:
        await pages.answer(store, link, reply(link, Reply.DECLINE, reason="  "), LATER, PKT, RULES)
    assert refused.value.code is AnswerProblem.REASON_REQUIRED
    page = await pages.answer(
        store, link, reply(link, Reply.DECLINE, reason="Out of stock till March"), LATER, PKT, RULES
    )
    assert page.status is SupplierStatus.DECLINED
    assert page.answer is not None and page.answer.reason == "Out of stock till March"
    async with store.reading() as tx:
        raw = (await tx.conn.exec_driver_sql("SELECT text_encrypted FROM supplier_answers")).one()
    assert b"March" not in raw[0]


@pytest.mark.parametrize(
    ("proposal", "code"),
    [
        ({"lines": (LineProposal(1, quantity=9),)}, AnswerProblem.QUANTITY_TOO_HIGH),
        ({"lines": (LineProposal(3, quantity=1),)}, AnswerProblem.BAD_LINE),
        ({"lines": (LineProposal(1, unit_price_paisa=0),)}, AnswerProblem.BAD_LINE),
        ({"lines": (LineProposal(1, quantity=4),)}, AnswerProblem.NOTHING_PROPOSED),
        ({"delivery_date": date(2026, 12, 1)}, AnswerProblem.DATE_TOO_EARLY),
        ({"note": "x" * 1001, "lines": (LineProposal(1, quantity=1),)}, AnswerProblem.TOO_LONG),
    ],
)
async def test_a_proposal_that_cannot_stand_is_refused(store, proposal, code):
    link = await sent(store)
    with pytest.raises(AnswerRefused) as refused:
        await pages.answer(store, link, reply(link, Reply.PROPOSE, **proposal), LATER, PKT, RULES)
    assert refused.value.code is code


async def propose(store, link, note="rate changed"):
    changes = (LineProposal(1, quantity=2), LineProposal(2, unit_price_paisa=480_000))
    proposed = reply(link, Reply.PROPOSE, lines=changes, note=note)
    return await pages.answer(store, link, proposed, LATER, PKT, RULES)


async def test_a_proposal_is_a_new_version_for_the_approvers_by_the_supplier(store):
    link = await sent(store)
    page = await propose(store, link)
    assert page.status is SupplierStatus.CHANGES_PROPOSED and not page.can_answer
    assert page.answer.lines == (
        LineProposal(1, quantity=2),
        LineProposal(2, unit_price_paisa=480_000),
    )
    job, effects, trail, owed = await state_of(store)
    assert (job.state, job.draft_version) == (State.AWAITING_APPROVAL, 2)
    assert [e.draft_version for e in effects] == [1]  # nothing new goes to the supplier yet
    async with store.reading() as tx:
        v2 = await tx.draft(job.id, 2)
    assert [(line.sku, line.quantity, line.unit_price_paisa) for line in v2.lines] == [
        ("CBL-USB-C-1M", 2, 125_000),
        ("ADP-65W", 2, 480_000),
    ]
    assert (
        v2.delivery_date == DUE and job.total_paisa == v2.total_paisa == 2 * 125_000 + 2 * 480_000
    )
    [event] = [e for e in trail if e.action == Action.SUPPLIER_PROPOSE.value]
    assert event.actor == "supplier:SUP-LHR-01" and event.detail["note"] == "rate changed"
    assert event.detail["changes"] == [
        {"line": 1, "sku": "CBL-USB-C-1M", "quantity": [4, 2]},
        {"line": 2, "sku": "ADP-65W", "unit_price_paisa": [450_000, 480_000]},
    ]
    cards = [n.user_id for n in owed if n.kind is NoticeKind.CARD and n.draft_version == 2]
    assert sorted(cards) == [APPROVER_A, APPROVER_B]  # the proposal's cards
    async with store.reading() as tx:
        assert (await pages.supplier_status(tx, job))[0] is SupplierStatus.CHANGES_PROPOSED
    with pytest.raises(AnswerRefused) as refused:
        await pages.answer(store, link, reply(link, Reply.ACCEPT), LATER, PKT, RULES)
    assert refused.value.code is AnswerProblem.UNDER_REVIEW
    assert (await propose(store, link)).answer == page.answer  # the same POST again: one


async def test_a_higher_price_is_flagged_against_what_was_approved(store):
    link = await sent(store)
    await propose(store, link)
    job, _, _, _ = await state_of(store)
    async with store.reading() as tx:
        v2 = await tx.draft(job.id, 2)
    assert [(f.code, f.sku, f.amounts, f.ref) for f in v2.flags if f.code == "price_changed"] == [
        ("price_changed", "ADP-65W", (450_000, 480_000), f"{PO} v1")
    ]


async def test_an_approved_proposal_is_sent_as_the_new_version_and_supersedes_the_old_link(store):
    link = await sent(store)
    await propose(store, link)
    job, _, _, _ = await state_of(store)
    review = Review(PO, APPROVER_B, Verdict.APPROVE, 2, job.draft_hash)
    result = await decisions.decide(store, review, LATER, RULES)
    assert result.job.state is State.APPROVED
    job, effects, _, _ = await state_of(store)
    assert [(e.draft_version, e.kind, e.status) for e in effects] == [
        (1, "send-po", EffectStatus.SUCCEEDED),
        (2, "send-po", EffectStatus.PENDING),
    ]
    async with store.reading() as tx:
        [answer] = await tx.supplier_answers(job.id)
        assert (await pages.supplier_status(tx, job))[0] is SupplierStatus.SUPERSEDED
    assert answer.outcome is Outcome.APPROVED and answer.proposal_version == 2
    old = await pages.open_page(store, link, LATER, PKT)
    assert old.status is SupplierStatus.SUPERSEDED and not old.can_answer
    with pytest.raises(AnswerRefused) as refused:
        await pages.answer(store, link, reply(link, Reply.ACCEPT), LATER, PKT, RULES)
    assert refused.value.code is AnswerProblem.SUPERSEDED


async def test_a_rejected_proposal_leaves_the_sent_version_standing_and_tells_the_supplier(store):
    link = await sent(store)
    await propose(store, link)
    job, _, _, _ = await state_of(store)
    proposal_hash = job.draft_hash
    review = Review(PO, APPROVER_A, Verdict.REJECT, 2, job.draft_hash, reason="too dear")
    result = await decisions.decide(store, review, LATER, RULES)
    job, effects, trail, _ = await state_of(store)
    assert result.job.state is State.SENT and (job.state, job.draft_version) == (State.SENT, 1)
    assert job.total_paisa == make_draft(PO).total_paisa
    assert [(e.kind, e.draft_version, e.draft_hash) for e in effects] == [
        ("send-po", 1, effects[0].draft_hash),
        ("reject-proposal", 2, proposal_hash),
    ]
    [turned] = [e for e in trail if e.action == Action.REJECT_PROPOSAL.value]
    assert turned.detail == {
        "job_version": job.version,
        "proposal_version": 2,
        "draft_version": 1,
        "reason": "too dear",
    }
    page = await pages.open_page(store, link, LATER, PKT)  # the old link works again
    assert page.status is SupplierStatus.AWAITING and page.can_answer
    accepted = await pages.answer(store, link, reply(link, Reply.ACCEPT), LATER, PKT, RULES)
    assert accepted.status is SupplierStatus.ACCEPTED and accepted.answer.round == 2
    await propose_again_is_refused(store, link)


async def propose_again_is_refused(store, link):
    with pytest.raises(AnswerRefused) as refused:
        await propose(store, link, note="another")
    assert refused.value.code is AnswerProblem.ANSWERED


async def test_a_second_proposal_after_a_rejected_one_takes_the_next_version(store):
    link = await sent(store)
    await propose(store, link)
    job, _, _, _ = await state_of(store)
    review = Review(PO, APPROVER_A, Verdict.REJECT, 2, job.draft_hash, reason="too dear")
    await decisions.decide(store, review, LATER, RULES)
    only_date = reply(link, Reply.PROPOSE, delivery_date=date(2026, 12, 28))
    await pages.answer(store, link, only_date, LATER, PKT, RULES)
    job, _, _, _ = await state_of(store)
    assert (job.state, job.draft_version) == (State.AWAITING_APPROVAL, 3)
    async with store.reading() as tx:
        assert (await tx.draft(job.id, 3)).delivery_date == date(2026, 12, 28)


async def test_a_proposal_nobody_decides_in_time_is_turned_down(store):
    from core.jobs import closing

    link = await sent(store)
    await propose(store, link)
    expired = await closing.expire_due(store, LATER + RULES.approval.ttl + timedelta(seconds=1))
    assert [(j.state, j.draft_version) for j in expired] == [(State.SENT, 1)]
    _, effects, trail, _ = await state_of(store)
    assert effects[-1].kind == "reject-proposal"
    [turned] = [e for e in trail if e.action == Action.REJECT_PROPOSAL.value]
    assert turned.detail["reason"].startswith("no decision in time")
    assert (await pages.open_page(store, link, LATER, PKT)).can_answer


async def test_calling_off_a_po_whose_proposal_is_pending_cancels_the_version_the_supplier_has(
    store,
):
    link = await sent(store)
    await propose(store, link)
    admin = 9001
    stamp = Stamp(f"user:{admin}", LATER)
    done = await calling_off.call_off(
        store, CallOff(PO, "bought elsewhere", admin, None), frozenset({admin}), stamp
    )
    assert done.after_sending and done.job.state is State.CANCELLING
    job, effects, _, _ = await state_of(store)
    assert job.draft_version == 1
    assert [(e.kind, e.draft_version) for e in effects] == [("send-po", 1), ("cancel-po", 1)]
    assert (await pages.open_page(store, link, LATER, PKT)).status is SupplierStatus.CANCELLED


async def test_a_form_of_another_version_is_stale(store):
    link = await sent(store)
    stale = SupplierReply(Reply.ACCEPT, link.draft_version, "0" * 12)
    with pytest.raises(AnswerRefused) as refused:
        await pages.answer(store, link, stale, LATER, PKT, RULES)
    assert refused.value.code is AnswerProblem.STALE


async def test_a_called_off_po_says_so_and_takes_no_answer(store):
    link = await sent(store)
    await calling_off.call_off(
        store,
        CallOff(PO, "bought elsewhere", 9001, None),
        frozenset({9001}),
        Stamp("user:9001", LATER),
    )
    page = await pages.open_page(store, link, LATER, PKT)
    assert page.status is SupplierStatus.CANCELLED and not page.can_answer
    with pytest.raises(AnswerRefused) as refused:
        await pages.answer(store, link, reply(link, Reply.ACCEPT), LATER, PKT, RULES)
    assert refused.value.code is AnswerProblem.CANCELLED


async def test_a_link_to_no_email_of_the_job_is_unknown(store):
    link = await sent(store)
    for wrong in (replace(link, draft_version=2), replace(link, hash_prefix="0" * 12)):
        with pytest.raises(UnknownJob):
            await pages.open_page(store, wrong, LATER, PKT)


async def test_opening_the_link_settles_an_unknown_send_as_delivered_once(store):
    await _approved(store)
    link = await _attempt(store, error=AmbiguousSendError("connection lost after DATA"))
    job, _, _, _ = await state_of(store)
    assert job.state is State.UNKNOWN_OUTCOME
    first, second = await asyncio.gather(
        pages.open_page(store, link, LATER, PKT), pages.open_page(store, link, LATER, PKT)
    )
    assert sorted([first.settled_unknown, second.settled_unknown]) == [False, True]
    job, [effect], trail, owed = await state_of(store)
    assert job.state is State.SENT and effect.status is EffectStatus.SUCCEEDED
    assert effect.result == {
        "settled_by": "supplier_link",
        "evidence": "opened",
        "at": LATER.isoformat(),
    }
    [settled] = [e for e in trail if e.action == Action.RECONCILE_SENT.value]
    assert settled.actor == "supplier:SUP-LHR-01" and "opened" in settled.detail["evidence"]
    assert [n.event for n in owed if n.kind is NoticeKind.ALERT].count(SETTLED_BY_LINK) == 1
    # nothing is due to be sent again
    assert await dispatch.claim(store, LATER, "runner-b", LEASE, 10) == []


async def test_answering_through_the_link_settles_an_unknown_send_too(store):
    await _approved(store)
    link = await _attempt(store, error=AmbiguousSendError("connection lost after DATA"))
    page = await pages.answer(store, link, reply(link, Reply.ACCEPT), LATER, PKT, RULES)
    assert page.settled_unknown and page.status is SupplierStatus.ACCEPTED
    job, [effect], trail, _ = await state_of(store)
    assert job.state is State.SENT and effect.result["evidence"] == "answered"
    assert [e.action for e in trail][-2:] == [Action.RECONCILE_SENT.value, "supplier_accept"]


async def test_a_link_does_not_settle_a_send_that_failed_for_good(store):
    from core.errors import PermanentSendError

    await _approved(store)
    link = await _attempt(store, error=PermanentSendError("550 no such mailbox"))
    page = await pages.open_page(store, link, LATER, PKT)
    assert page.status is SupplierStatus.CANCELLED and not page.settled_unknown
    job, _, _, _ = await state_of(store)
    assert job.state is State.FAILED_FINAL


async def test_two_answers_at_once_record_one(store):
    link = await sent(store)
    results = await asyncio.gather(
        pages.answer(store, link, reply(link, Reply.ACCEPT), LATER, PKT, RULES),
        pages.answer(store, link, reply(link, Reply.DECLINE, reason="no stock"), LATER, PKT, RULES),
        return_exceptions=True,
    )
    refused = [r for r in results if isinstance(r, AnswerRefused)]
    assert len(refused) == 1 and refused[0].code is AnswerProblem.ANSWERED
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        assert len(await tx.supplier_answers(job.id)) == 1


class _ReadsThenWaits:
    """A store whose transaction, once it has read a job's answers, waits (at most half a
    second: SQLite's writer lock may hold the other answer back) until `other` is done."""

    def __init__(self, store, other: asyncio.Event) -> None:
        self.store, self.other = store, other

    @contextlib.asynccontextmanager
    async def begin(self):
        async with self.store.begin() as tx:
            yield _WaitingTx(tx, self.other)


class _WaitingTx:
    def __init__(self, tx, other: asyncio.Event) -> None:
        self._tx, self._other, self._waited = tx, other, False

    def __getattr__(self, name):
        return getattr(self._tx, name)

    async def supplier_answers(self, job_id):
        answers = await self._tx.supplier_answers(job_id)
        if not self._waited:
            self._waited = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._other.wait(), timeout=0.5)
        return answers


async def test_an_answer_kept_while_another_was_judged_refuses_the_other(store):
    """The decline reads the answers (none), then the accept commits: the decline must not
    then take a round of its own, it is refused as the accept's repeat would be."""
    link = await sent(store)
    accepted = asyncio.Event()

    async def accept():
        try:
            return await pages.answer(store, link, reply(link, Reply.ACCEPT), LATER, PKT, RULES)
        finally:
            accepted.set()

    late = _ReadsThenWaits(store, accepted)
    results = await asyncio.gather(
        pages.answer(late, link, reply(link, Reply.DECLINE, reason="no stock"), LATER, PKT, RULES),
        accept(),
        return_exceptions=True,
    )
    refused = [r for r in results if isinstance(r, AnswerRefused)]
    assert len(refused) == 1 and refused[0].code is AnswerProblem.ANSWERED, results
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        assert [a.round for a in await tx.supplier_answers(job.id)] == [1]


async def test_a_line_change_to_a_draft_with_tax_keeps_its_numbers(store):
    taxed = make_draft(
        PO,
        delivery_date=DUE,
        lines=(DraftLine("CBL-USB-C-1M", "USB-C cable 1 m", 4, 125_000, gst_basis_points=1800),),
    )
    link = await sent(store, taxed)
    proposed = reply(link, Reply.PROPOSE, lines=(LineProposal(1, quantity=3),))
    page = await pages.answer(store, link, proposed, LATER, PKT, RULES)
    assert page.answer.lines == (LineProposal(1, quantity=3),)


async def test_the_purge_of_a_closed_po_drops_what_the_supplier_typed_and_keeps_the_answer(store):
    from core.records import retention
    from core.records.retention import Purge, Retention

    link = await sent(store)
    reason = "Out of stock till March; call Bilal on 0300 1234567"
    await pages.answer(store, link, reply(link, Reply.DECLINE, reason=reason), LATER, PKT, RULES)
    purge = Purge(Stamp("test", LATER + timedelta(days=400)), Retention(), frozenset())
    removed = await retention.run(store, purge)
    assert removed["supplier_texts"] == 1
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        [kept] = await tx.supplier_answers(job.id)
        trail = await tx.audit(job.id)
    assert (kept.reply, kept.reason, kept.answered_at) == (Reply.DECLINE, "", LATER)
    [declined] = [e for e in trail if e.action == "supplier_decline"]
    assert "reason" not in declined.detail  # free text goes from the trail too
