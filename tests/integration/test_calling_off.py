"""Calling off a PO that was sent (core.outbox.calling_off), on SQLite and PostgreSQL against a
real SMTP server: the supplier gets exactly one cancellation e-mail, threaded under the PO and
named by its own key; a 451 is retried, an ambiguous failure waits for a person in the review
queue, a runner lost mid-send never sends it twice; the budget is released; a PO not sent yet is
withdrawn with nothing sent; only an admin may, and the same request twice is one."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import timedelta

import pytest

from bot.clock import Runtime
from bot.dev.smtp import running_sink
from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from bot.words import reports
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import ApprovalPolicy, Role, Rules, Verdict
from core.errors import (
    AmbiguousSendError,
    CancelRefusal,
    CancelRefused,
    NotAnAdmin,
    PermanentSendError,
    ReconcileRefused,
    UnknownJob,
)
from core.jobs.effects import EffectKind, EffectStatus, cancel_po_key, message_id, send_po_key
from core.jobs.jobs import Stamp
from core.jobs.notices import CALL_OFF_DONE, CALLED_OFF, NoticeKind
from core.jobs.states import NEEDS_REVIEW, Action, State
from core.outbox import calling_off, dispatch, review
from core.outbox.calling_off import NOTICE_ATTEMPT, NOTICE_RETRY, CallOff
from core.outbox.dispatch import Attempted
from core.outbox.review import AdminChoice, Choice
from tests.helpers.cli import Cli, base_env, ok, plain
from tests.helpers.documents import with_document
from tests.helpers.factories import (
    APPROVER_A,
    APPROVER_B,
    FAST_RETRY,
    REQUESTER,
    T0,
    Clock,
    make_draft,
    new_job,
)

RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24)), retry=FAST_RETRY)
LEASE = timedelta(seconds=60)
DOMAIN = "shop.example"
PO = "PO-2026-001"
ADMIN = 9001
CONFIGURED = frozenset({ADMIN})
REASON = "ordered twice by mistake"
CALLED_AT = T0 + timedelta(minutes=1)  # a minute after the PO went


@pytest.fixture
def sink():
    with running_sink() as sink:
        yield sink


def runner_for(store, sink, clock, owner="runner-a", timeout=2.0):
    sender = SmtpSender(
        SmtpServer(host=sink.host, port=sink.port, tls="none", timeout=timeout),
        mail_from=f"orders@{DOMAIN}",
    )
    runtime = Runtime(owner=owner, now=clock, rand=lambda: 0.5)
    return OutboxRunner(store, sender, RULES, lease=LEASE, runtime=runtime)


async def approved(store, po=PO, draft=None):
    job = await opening.open_job(store, new_job(), draft or make_draft(po), T0, RULES)
    result = await decisions.decide(
        store, Review(po, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash), T0, RULES
    )
    assert result.job.state is State.APPROVED
    return result.job


async def sent(store, sink, clock, po=PO, draft=None):
    """A PO approved and e-mailed by the runner: SENT, its one e-mail at the sink."""
    await approved(store, po, draft)
    assert await runner_for(store, sink, clock).run_once() == 1
    job, _ = await current(store, po)
    assert job.state is State.SENT
    return job


async def current(store, po=PO):
    async with store.begin() as tx:
        job = await tx.job_by_po(po)
        return job, await tx.effects_for(job.id)


async def trail_of(store, po=PO):
    async with store.begin() as tx:
        job = await tx.job_by_po(po)
        return await tx.audit(job.id)


async def news_of(store, po=PO):
    """The call-off news owed, as (person, event), in the order owed."""
    async with store.begin() as tx:
        job = await tx.job_by_po(po)
        notices = await tx.notices_for(job.id)
    return [
        (n.user_id, n.event)
        for n in notices
        if n.kind is NoticeKind.STATUS and n.event in (CALLED_OFF, CALL_OFF_DONE)
    ]


async def call_off(store, po=PO, reason=REASON, admin=ADMIN, at=CALLED_AT, version=None):
    request = CallOff(po, reason, admin, version)
    return await calling_off.call_off(store, request, CONFIGURED, Stamp(f"user:{admin}", at))


def keys(sink):
    return [m["Idempotency-Key"] for m in sink.messages]


def cancel_key(job):
    return cancel_po_key(job.po_number, job.draft_version, job.draft_hash)


async def test_a_sent_po_called_off_mails_one_cancellation_threaded_under_it(store, sink):
    clock = Clock()
    job = await sent(store, sink, clock)
    [placed] = sink.messages
    done = await call_off(store, at=clock.advance(minutes=5))
    assert (done.job.state, done.after_sending, done.repeat) == (State.CANCELLING, True, False)
    job, effects = await current(store)
    assert [(e.kind, e.status) for e in effects] == [
        (EffectKind.SEND_PO, EffectStatus.SUCCEEDED),
        (EffectKind.CANCEL_PO, EffectStatus.PENDING),
    ]
    runner = runner_for(store, sink, clock)
    assert await runner.run_once() == 1
    assert await runner.run_once() == 0
    job, [_, effect] = await current(store)
    assert job.state is State.CANCELLED
    assert effect.key == cancel_key(job) and effect.status is EffectStatus.SUCCEEDED
    assert effect.result["message_id"] == message_id(effect.key, DOMAIN)
    assert keys(sink) == [send_po_key(PO, 1, job.draft_hash), effect.key]
    mail = sink.messages[1]
    assert mail["Message-ID"] == message_id(effect.key, DOMAIN)
    assert mail["In-Reply-To"] == mail["References"] == placed["Message-ID"]
    assert mail["Subject"].startswith(f"Cancellation of purchase order {PO} from ")
    assert mail["To"] == "orders@supplier.example"
    body = mail.get_content()
    assert f"Reason: {REASON}" in body and "Please do not supply or invoice it." in body
    assert "Sent: 29 Nov 2026, 09:00 UTC" in body  # when the runner recorded the PO sent
    trail = await trail_of(store)
    assert [(e.action, e.from_state, e.to_state) for e in trail[-3:]] == [
        ("cancel_sent", State.SENT, State.CANCELLING),
        (NOTICE_ATTEMPT, State.CANCELLING, State.CANCELLING),
        ("mark_cancel_sent", State.CANCELLING, State.CANCELLED),
    ]
    assert trail[-3].actor == f"user:{ADMIN}" and trail[-3].detail["reason"] == REASON
    # The requester and the approver hear it was called off, then that the supplier has it.
    assert sorted(await news_of(store)) == sorted(
        (person, event)
        for person in (REQUESTER, APPROVER_A)
        for event in (CALLED_OFF, CALL_OFF_DONE)
    )


async def test_jobs_show_says_the_cancellation(store, sink):
    clock = Clock()
    await sent(store, sink, clock)
    await call_off(store)
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        shown = await reports.job_detail(tx, job, DOMAIN)
    called = shown["cancellation"]
    assert (called["state"], called["reason"], called["by"]) == (
        "CANCELLING",
        REASON,
        f"user:{ADMIN}",
    )
    assert called["effect"]["kind"] == "cancel-po"
    assert called["effect"]["status"] == "pending"
    assert called["effect"]["idempotency_key"] == cancel_key(job)
    assert [e["kind"] for e in shown["effects"]] == ["send-po", "cancel-po"]


async def test_a_451_on_the_cancellation_is_retried_and_sent_once(store, sink):
    clock = Clock()
    await sent(store, sink, clock)
    await call_off(store, at=clock.advance(minutes=1))
    sink.script("DATA", "451 4.3.0 Try again later")
    runner = runner_for(store, sink, clock)
    await runner.run_once()
    job, [_, effect] = await current(store)
    assert job.state is State.CANCELLING  # a retry does not move the job
    assert effect.status is EffectStatus.PENDING and effect.attempts == 1
    assert effect.next_attempt_at == CALLED_AT + timedelta(seconds=12)  # 10 s, half of 4 s
    retry = (await trail_of(store))[-1]
    assert (retry.action, retry.from_state, retry.to_state) == (
        NOTICE_RETRY,
        State.CANCELLING,
        State.CANCELLING,
    )
    assert retry.detail["class"] == "transient" and "451" in retry.detail["error"]
    assert len(sink.messages) == 1  # the PO's own
    clock.advance(seconds=11)
    assert await runner.run_once() == 0  # not yet due
    clock.advance(seconds=1)
    assert await runner.run_once() == 1
    job, [_, effect] = await current(store)
    assert job.state is State.CANCELLED and effect.attempts == 2
    assert keys(sink)[1:] == [effect.key]


async def test_a_refused_cancellation_fails_for_good_and_a_person_settles_it(store, sink):
    clock = Clock()
    await sent(store, sink, clock)
    await call_off(store, at=clock.advance(minutes=1))
    sink.script("RCPT", "550 5.1.1 No such user")
    await runner_for(store, sink, clock).run_once()
    job, [_, effect] = await current(store)
    assert job.state is State.CANCEL_FAILED and effect.status is EffectStatus.FAILED
    assert job.state in NEEDS_REVIEW and review.choices(job) == (Choice.SETTLED,)
    await _an_alert_is_owed(store, State.CANCEL_FAILED)
    chosen = AdminChoice(PO, 1, Choice.SETTLED, ADMIN)
    done = await review.resolve(store, chosen, CONFIGURED, clock.advance(hours=1), RULES)
    assert done.job.state is State.CANCELLED
    assert (await trail_of(store))[-1].action == "settle_cancel"
    assert (REQUESTER, CALL_OFF_DONE) in await news_of(store)
    assert keys(sink)[1:] == []  # nothing more went out


async def _an_alert_is_owed(store, state):
    async with store.begin() as tx:
        job = await tx.job_by_po(PO)
        alerts = [n.event for n in await tx.notices_for(job.id) if n.kind is NoticeKind.ALERT]
    assert state.value in alerts


async def _attempted(store, error, at=CALLED_AT, owner="runner-a"):
    """One attempt of the due cancellation, made step by step as a runner makes it."""
    [claimed] = await dispatch.claim(store, at, owner, LEASE, 10)
    assert claimed.kind == EffectKind.CANCEL_PO
    order = await dispatch.start_attempt(store, claimed.key, owner, at, LEASE, RULES)
    assert order is not None and order.document is None
    assert order.cancellation is not None and order.cancellation.reason == REASON
    attempted = Attempted(owner, error=error)
    return await dispatch.finish_attempt(store, order, attempted, at, RULES, 0.5)


async def _sent_step_by_step(store):
    """A PO approved and sent through dispatch (no SMTP): SENT."""
    job = await approved(store)
    [claimed] = await dispatch.claim(store, T0, "runner-a", LEASE, 10)
    await with_document(store, claimed, T0)
    order = await dispatch.start_attempt(store, claimed.key, "runner-a", T0, LEASE, RULES)
    assert order is not None
    receipt = {"message_id": message_id(claimed.key, DOMAIN)}
    state = await dispatch.finish_attempt(
        store, order, Attempted("runner-a", result=receipt), T0, RULES, 0.5
    )
    assert state is State.SENT
    return job


async def test_an_ambiguous_cancellation_waits_in_the_review_queue_and_is_never_resent(store):
    await _sent_step_by_step(store)
    await call_off(store)
    state = await _attempted(store, AmbiguousSendError("connection lost after DATA"))
    assert state is State.CANCEL_UNKNOWN
    job, [_, effect] = await current(store)
    assert effect.status is EffectStatus.UNKNOWN
    async with store.begin() as tx:
        assert [j.po_number for j in await tx.jobs_in_states(NEEDS_REVIEW)] == [PO]
    await _an_alert_is_owed(store, State.CANCEL_UNKNOWN)
    assert review.choices(job) == (Choice.MARK_SENT, Choice.SEND_AGAIN)
    assert await dispatch.claim(store, T0 + timedelta(hours=3), "runner-b", LEASE, 10) == []
    # Send again: the same row and key, a fresh budget; then it goes, and the PO is cancelled.
    again = AdminChoice(PO, 1, Choice.SEND_AGAIN, ADMIN)
    later = T0 + timedelta(hours=1)
    assert (await review.resolve(store, again, CONFIGURED, later, RULES)).job.state is (
        State.CANCELLING
    )
    _, [_, row] = await current(store)
    assert (row.key, row.status, row.attempts) == (effect.key, EffectStatus.PENDING, 0)
    [claimed] = await dispatch.claim(store, later, "runner-b", LEASE, 10)
    order = await dispatch.start_attempt(store, claimed.key, "runner-b", later, LEASE, RULES)
    assert order is not None and order.effect.key == effect.key
    receipt = Attempted("runner-b", result={"message_id": "m"})
    assert await dispatch.finish_attempt(store, order, receipt, later, RULES, 0.5) is (
        State.CANCELLED
    )


async def test_mark_sent_from_the_queue_cancels_the_po_and_tells_its_people(store):
    await _sent_step_by_step(store)
    await call_off(store)
    await _attempted(store, AmbiguousSendError("connection lost after DATA"))
    later = T0 + timedelta(hours=1)
    for somebody in (APPROVER_A, REQUESTER):
        with pytest.raises(NotAnAdmin):
            await review.resolve(
                store, AdminChoice(PO, 1, Choice.MARK_SENT, somebody), CONFIGURED, later, RULES
            )
    chosen = AdminChoice(PO, 1, Choice.MARK_SENT, ADMIN)
    done = await review.resolve(store, chosen, CONFIGURED, later, RULES)
    assert (done.job.state, done.was) == (State.CANCELLED, State.CANCEL_UNKNOWN)
    _, [_, effect] = await current(store)
    assert effect.status is EffectStatus.SUCCEEDED
    last = (await trail_of(store))[-1]
    assert (last.action, last.actor) == ("reconcile_cancel_sent", f"user:{ADMIN}")
    assert sorted(await news_of(store)) == sorted(
        (person, event)
        for person in (REQUESTER, APPROVER_A)
        for event in (CALLED_OFF, CALL_OFF_DONE)
    )


@pytest.mark.slow  # waits on real time
@pytest.mark.timed
async def test_a_late_answer_to_the_cancellation_is_unknown_and_never_resent(store, sink):
    clock = Clock()
    await sent(store, sink, clock)
    await call_off(store, at=clock.advance(minutes=1))
    sink.script("DATA", "250 2.0.0 Ok: queued", delay=1.5)
    runner = runner_for(store, sink, clock, timeout=0.5)
    await runner.run_once()
    job, [_, effect] = await current(store)
    assert job.state is State.CANCEL_UNKNOWN and effect.status is EffectStatus.UNKNOWN
    for _ in range(3):
        clock.advance(hours=1)
        assert await runner.run_once() == 0
    await asyncio.sleep(1.2)  # the server's late answer: it did take the cancellation
    assert keys(sink) == [send_po_key(PO, 1, job.draft_hash), effect.key]
    done = await calling_off.reconcile(
        store, PO, Action.RECONCILE_SENT, "supplier confirmed", Stamp("cli:ops", clock())
    )
    assert done.state is State.CANCELLED
    _, [_, effect] = await current(store)
    assert effect.status is EffectStatus.SUCCEEDED


async def test_a_runner_lost_mid_send_leaves_it_unknown_and_a_late_receipt_settles_it(store):
    """A ghost marks the attempt and dies: recovery cannot know whether it went, so never
    resends; the ghost's late receipt is proof."""
    await _sent_step_by_step(store)
    await call_off(store)
    [claimed] = await dispatch.claim(store, CALLED_AT, "ghost", LEASE, 10)
    order = await dispatch.start_attempt(store, claimed.key, "ghost", CALLED_AT, LEASE, RULES)
    assert order is not None
    after = CALLED_AT + LEASE + timedelta(seconds=1)
    [recovered] = await dispatch.recover_stalled(store, after, provider_idempotent=False)
    assert recovered.status is EffectStatus.UNKNOWN
    job, _ = await current(store)
    assert job.state is State.CANCEL_UNKNOWN
    assert await dispatch.claim(store, after, "runner-b", LEASE, 10) == []
    late = Attempted("ghost", result={"message_id": "m"})
    assert await dispatch.finish_attempt(store, order, late, after, RULES, 0.5) is (State.CANCELLED)
    assert (await trail_of(store))[-1].action == "reconcile_cancel_sent"


async def test_a_provider_that_dedupes_gets_a_lost_attempt_again(store):
    await _sent_step_by_step(store)
    await call_off(store)
    [claimed] = await dispatch.claim(store, CALLED_AT, "ghost", LEASE, 10)
    await dispatch.start_attempt(store, claimed.key, "ghost", CALLED_AT, LEASE, RULES)
    after = CALLED_AT + LEASE + timedelta(seconds=1)
    [recovered] = await dispatch.recover_stalled(store, after, provider_idempotent=True)
    assert recovered.status is EffectStatus.PENDING
    job, _ = await current(store)
    assert job.state is State.CANCELLING
    assert (await trail_of(store))[-1].action == NOTICE_RETRY


async def test_a_cancellation_whose_po_left_cancelling_is_cancelled_not_sent(store):
    """A row is sent only while its job is CANCELLING; a job moved on (here by hand: no use
    case does it) has its row cancelled at the marker, nothing sent."""
    await _sent_step_by_step(store)
    await call_off(store)
    [claimed] = await dispatch.claim(store, CALLED_AT, "runner-a", LEASE, 10)
    async with store.begin() as tx:
        job = await tx.job_by_po(PO)
        await tx.update_job(job, state=State.CANCELLED, updated_at=CALLED_AT)
    marked = await dispatch.start_attempt(store, claimed.key, "runner-a", CALLED_AT, LEASE, RULES)
    assert marked is None
    _, [_, effect] = await current(store)
    assert effect.status is EffectStatus.CANCELLED and "CANCELLED" in effect.last_error


async def test_calling_off_releases_the_budget(store, sink):
    clock = Clock()
    draft = make_draft(PO)
    draft = replace(draft, lines=tuple(replace(line, category="chargers") for line in draft.lines))
    job = await sent(store, sink, clock, draft=draft)
    month = (T0 - timedelta(days=1), T0 + timedelta(days=30))
    async with store.reading() as tx:
        assert await tx.committed_spend(*month) == {"chargers": job.total_paisa}
    await call_off(store)
    async with store.reading() as tx:
        assert await tx.committed_spend(*month) == {}  # at once, before the supplier is told


async def test_cancelling_an_approved_po_not_sent_sends_nothing(store, sink):
    clock = Clock()
    await approved(store)
    done = await call_off(store, reason="")  # no reason needed: nothing goes to the supplier
    assert (done.job.state, done.after_sending) == (State.CANCELLED, False)
    _, [effect] = await current(store)
    assert effect.kind == EffectKind.SEND_PO and effect.status is EffectStatus.CANCELLED
    assert await runner_for(store, sink, clock).run_once() == 0
    assert sink.messages == []
    assert await news_of(store) == []  # the requester hears of a plain cancel, as before


async def test_a_po_waiting_for_approval_is_withdrawn_as_before(store):
    await opening.open_job(store, new_job(), make_draft(), T0, RULES)
    done = await call_off(store, reason="not needed")
    assert (done.job.state, done.after_sending) == (State.CANCELLED, False)
    assert (await trail_of(store))[-1].detail["note"] == "not needed"


async def test_only_an_admin_may_and_a_refusal_changes_nothing(store, sink):
    clock = Clock()
    await sent(store, sink, clock)
    before = await current(store), await trail_of(store)
    for somebody in (APPROVER_A, REQUESTER, 424242):
        with pytest.raises(NotAnAdmin):
            await call_off(store, admin=somebody)
    assert (await current(store), await trail_of(store)) == before
    async with store.begin() as tx:
        await tx.grant(9002, Role.ADMIN, "test", T0)
    assert (await call_off(store, admin=9002)).job.state is State.CANCELLING  # by role


async def test_a_sent_po_needs_a_reason(store, sink):
    clock = Clock()
    await sent(store, sink, clock)
    for blank in ("", "   ", "\u200b\n"):
        with pytest.raises(CancelRefused) as refused:
            await call_off(store, reason=blank)
        assert refused.value.why is CancelRefusal.REASON_REQUIRED
    assert (await current(store))[0].state is State.SENT


async def test_the_same_request_twice_is_one_cancellation(store, sink):
    clock = Clock()
    await sent(store, sink, clock)
    first = await call_off(store)
    again = await call_off(store, at=clock.advance(minutes=1))  # a second tap of Confirm
    assert (again.repeat, again.job) == (True, first.job)
    with pytest.raises(CancelRefused) as refused:  # the same PO, another reason
        await call_off(store, reason="something else")
    assert refused.value.why is CancelRefusal.CALLED_OFF_ALREADY
    runner = runner_for(store, sink, clock)
    assert await runner.run_once() == 1
    assert (await call_off(store)).repeat  # and once the supplier has it
    await runner.run_once()
    job, effects = await current(store)
    assert job.state is State.CANCELLED and len(effects) == 2
    assert keys(sink).count(cancel_key(job)) == 1
    assert len(await news_of(store)) == 4  # two people, told twice each, never more


async def test_an_already_cancelled_po_is_refused_clearly(store, sink):
    clock = Clock()
    await approved(store)
    await call_off(store, reason="")
    with pytest.raises(CancelRefused) as refused:
        await call_off(store)
    assert refused.value.why is CancelRefusal.ALREADY_CANCELLED
    assert "already cancelled" in str(refused.value)
    await sent(store, sink, clock, po="PO-2026-002")
    await call_off(store, po="PO-2026-002", at=clock.advance(minutes=1))
    assert await runner_for(store, sink, clock).run_once() == 1
    with pytest.raises(CancelRefused) as refused:  # called off, with another reason
        await call_off(store, po="PO-2026-002", reason="another")
    assert refused.value.why is CancelRefusal.ALREADY_CANCELLED


async def test_a_po_being_sent_or_unknown_or_rejected_cannot_be_cancelled(store):
    job = await approved(store)
    [claimed] = await dispatch.claim(store, T0, "runner-a", LEASE, 10)
    await with_document(store, claimed, T0)
    order = await dispatch.start_attempt(store, claimed.key, "runner-a", T0, LEASE, RULES)
    assert order is not None
    with pytest.raises(CancelRefused) as refused:  # SENDING
        await call_off(store)
    assert refused.value.why is CancelRefusal.IN_FLIGHT
    ambiguous = Attempted("runner-a", error=AmbiguousSendError("lost"))
    await dispatch.finish_attempt(store, order, ambiguous, T0, RULES, 0.5)
    with pytest.raises(CancelRefused) as refused:  # UNKNOWN_OUTCOME
        await call_off(store)
    assert refused.value.why is CancelRefusal.IN_FLIGHT
    other = await opening.open_job(store, new_job(), make_draft("PO-2026-002"), T0, RULES)
    await decisions.decide(
        store,
        Review("PO-2026-002", APPROVER_B, Verdict.REJECT, 1, other.draft_hash, "no"),
        T0,
        RULES,
    )
    with pytest.raises(CancelRefused) as refused:
        await call_off(store, po="PO-2026-002")
    assert refused.value.why is CancelRefusal.CLOSED
    with pytest.raises(UnknownJob):
        await call_off(store, po="PO-1999-001")
    assert job.po_number == PO


async def test_a_confirm_naming_an_older_version_is_refused(store):
    await opening.open_job(store, new_job(), make_draft(), T0, RULES)
    await opening.revise(
        store, PO, opening.Revision(make_draft(quantity=5)), Stamp("user:1001", T0), RULES
    )
    with pytest.raises(CancelRefused) as refused:
        await call_off(store, version=1)
    assert refused.value.why is CancelRefusal.CHANGED
    assert (await call_off(store, version=2)).job.state is State.CANCELLED


async def test_a_persons_findings_on_a_cancellation(store):
    """`manzoori jobs reconcile` on CANCEL_UNKNOWN (sent / not sent / failed) and CANCEL_FAILED
    (settled); the PO's own UNKNOWN_OUTCOME as before; anything else refused."""
    stamp = Stamp("cli:ops", T0)
    await _sent_step_by_step(store)
    with pytest.raises(ReconcileRefused):
        await calling_off.reconcile(store, PO, Action.RECONCILE_SENT, "n", stamp)
    await call_off(store)
    await _attempted(store, AmbiguousSendError("lost"))
    with pytest.raises(ReconcileRefused):  # settled is for a failed one
        await calling_off.reconcile(store, PO, Action.SETTLE_CANCEL, "n", stamp)
    job = await calling_off.reconcile(store, PO, Action.RECONCILE_FAILED, "gave up", stamp)
    assert job.state is State.CANCEL_FAILED
    _, [_, effect] = await current(store)
    assert (effect.status, effect.last_error) == (EffectStatus.FAILED, "gave up")
    job = await calling_off.reconcile(store, PO, Action.SETTLE_CANCEL, "phoned Ali", stamp)
    assert job.state is State.CANCELLED
    assert [e.action for e in (await trail_of(store))[-2:]] == [
        "reconcile_cancel_failed",
        "settle_cancel",
    ]
    assert (REQUESTER, CALL_OFF_DONE) in await news_of(store)


async def test_a_failed_send_po_then_a_permanent_cancellation_never_mixes_the_two(store):
    """The PO's own rows are never touched by its cancellation's steps."""
    await _sent_step_by_step(store)
    await call_off(store)
    state = await _attempted(store, PermanentSendError("550 no such user", code=550))
    assert state is State.CANCEL_FAILED
    _, [send, cancel] = await current(store)
    assert (send.status, cancel.status) == (EffectStatus.SUCCEEDED, EffectStatus.FAILED)


# -- the CLI -----------------------------------------------------------------------------------


@pytest.mark.slow  # spawns `manzoori`
async def test_the_cli_calls_a_sent_po_off_and_settles_it(store, sink, db_url, tmp_path):
    """`manzoori jobs cancel PO --reason` at once (no confirm), the same again is no change,
    another reason is refused; `jobs show --json` says the cancellation; a failed one is in
    `jobs list --review` and settled with `jobs reconcile --settled`."""
    clock = Clock()
    await sent(store, sink, clock)
    cli = Cli(tmp_path, base_env(db_url))
    missing = cli("jobs", "cancel", PO)
    assert missing.returncode == 2 and "--reason" in plain(missing.stderr)
    said = ok(cli("jobs", "cancel", PO.lower(), "--reason", REASON))
    job, [_, cancel] = await current(store)
    assert said.strip() == (
        f"{PO} is now CANCELLING: the supplier will be e-mailed a cancellation ({cancel.key})"
    )
    assert ok(cli("jobs", "cancel", PO, "--reason", REASON)).strip() == (
        f"{PO} is already CANCELLING: nothing changed"
    )
    other = cli("jobs", "cancel", PO, "--note", "something else")  # the old name still works
    assert other.returncode == 1
    assert plain(other.stderr) == (
        f"error: {PO} is already being cancelled (CANCELLING), for another reason."
    )
    shown = json.loads(ok(cli("jobs", "show", PO, "--json")))
    assert shown["state"] == "CANCELLING"
    called = shown["cancellation"]
    assert (called["state"], called["reason"], called["by"].startswith("cli:")) == (
        "CANCELLING",
        REASON,
        True,
    )
    assert called["effect"]["idempotency_key"] == cancel.key
    assert called["effect"]["status"] == "pending" and called["effect"]["kind"] == "cancel-po"
    assert called["effect"]["message_id"] == message_id(cancel.key, DOMAIN)
    # The cancellation refused for good: in the review queue, then settled by a person.
    now = cancel.next_attempt_at
    await _attempted(store, PermanentSendError("550 no such user", code=550), at=now)
    assert PO in ok(cli("jobs", "list", "--review"))
    wrong = cli("jobs", "reconcile", PO, "--sent", "--note", "x")
    assert wrong.returncode == 1
    assert f"{PO} is CANCEL_FAILED, not UNKNOWN_OUTCOME or CANCEL_UNKNOWN" in wrong.stderr
    assert ok(cli("jobs", "reconcile", PO, "--settled", "--note", "phoned Ali")).strip() == (
        f"{PO} is now CANCELLED"
    )
    job, _ = await current(store)
    assert job.state is State.CANCELLED
    assert (await trail_of(store))[-1].actor.startswith("cli:")
