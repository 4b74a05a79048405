"""The outbox runner against a real SMTP server, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
import time
from datetime import timedelta
from email.message import EmailMessage

import pytest
from sqlalchemy import select

from bot.clock import Runtime
from bot.dev.smtp import running_sink
from bot.outbox.runner import PASS_CLAIMS, PAUSE_SECONDS, SENDS_PER_CONNECTION, OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.opening import Revision
from core.approval.policies import ApprovalPolicy, Rules, Verdict
from core.jobs import closing
from core.jobs.effects import EffectStatus, message_id
from core.jobs.jobs import Stamp
from core.jobs.states import Action, State
from core.outbox import dispatch
from core.outbox.dispatch import Attempted
from store import schema
from tests.helpers.bot import timed
from tests.helpers.documents import with_document
from tests.helpers.factories import (
    APPROVER_A,
    APPROVER_B,
    FAST_RETRY,
    T0,
    Clock,
    make_draft,
    new_job,
)

RULES = Rules(
    approval=ApprovalPolicy(ttl=timedelta(hours=24)),
    retry=FAST_RETRY,
)
LEASE = timedelta(seconds=60)
DOMAIN = "shop.example"


@pytest.fixture
def sink():
    with running_sink() as sink:
        yield sink


def runner_for(store, sink, clock, owner="runner-a", timeout=2.0, connections=10):
    sender = SmtpSender(
        SmtpServer(host=sink.host, port=sink.port, tls="none", timeout=timeout),
        mail_from=f"orders@{DOMAIN}",
    )
    runtime = Runtime(owner=owner, now=clock, rand=lambda: 0.5)
    return OutboxRunner(store, sender, RULES, lease=LEASE, connections=connections, runtime=runtime)


async def approved_job(store, po="PO-2026-001", at=T0, approver=APPROVER_A):
    job = await opening.open_job(store, new_job(), make_draft(po), at, RULES)
    result = await decisions.decide(
        store, Review(po, approver, Verdict.APPROVE, 1, job.draft_hash), at, RULES
    )
    assert result.job.state is State.APPROVED
    return result.job


async def current(store, job):
    async with store.begin() as tx:
        return await tx.job(job.id), await tx.effects_for(job.id)


def ids(sink):
    return [m["Message-ID"] for m in sink.messages]


async def test_approved_job_is_sent_once(store, sink):
    clock = Clock()
    job = await approved_job(store)
    runner = runner_for(store, sink, clock)
    assert await runner.run_once() == 1
    assert await runner.run_once() == 0
    job, [effect] = await current(store, job)
    assert job.state is State.SENT
    assert effect.status is EffectStatus.SUCCEEDED and effect.attempts == 1
    assert ids(sink) == [message_id(effect.key, DOMAIN)]
    assert effect.result["message_id"] == message_id(effect.key, DOMAIN)
    assert "orders@supplier.example" not in str(effect.result)


async def test_a_pass_beside_a_bot_claims_nothing_until_its_taps_pause(store, sink):
    clock = Clock()
    job = await approved_job(store)
    runner, paused, waits = runner_for(store, sink, clock), asyncio.Event(), []

    async def pause(seconds):  # the bot's taps: a burst until `paused` is set
        waits.append(seconds)
        await paused.wait()

    runner.pause = pause
    sending = asyncio.create_task(runner.run_once())
    await asyncio.sleep(0.2)
    _, [effect] = await current(store, job)
    assert not sending.done() and effect.status is EffectStatus.PENDING and effect.attempts == 0
    assert effect.lease_owner is None  # nothing leased while it waits: no lease runs down
    paused.set()
    assert await asyncio.wait_for(sending, 10) == 1
    job, [effect] = await current(store, job)
    assert job.state is State.SENT and ids(sink) == [message_id(effect.key, DOMAIN)]
    assert waits[0] == PAUSE_SECONDS  # before the claim
    assert len(waits) == 2 and 0 < waits[1] <= runner.render_wait  # before its render: the rest


async def test_451_is_retried_with_backoff_and_sent_once(store, sink):
    clock = Clock()
    job = await approved_job(store)
    sink.script("DATA", "451 4.3.0 Try again later")
    runner = runner_for(store, sink, clock)
    await runner.run_once()
    job, [effect] = await current(store, job)
    assert job.state is State.FAILED_RETRYABLE and job.retry_count == 1
    # base 10 s · 2^0, plus half of the 4 s jitter
    assert effect.next_attempt_at == T0 + timedelta(seconds=12)
    assert sink.messages == []
    clock.advance(seconds=11)
    assert await runner.run_once() == 0  # not yet due
    clock.advance(seconds=1)
    assert await runner.run_once() == 1
    job, [effect] = await current(store, job)
    assert job.state is State.SENT and effect.attempts == 2
    assert ids(sink) == [message_id(effect.key, DOMAIN)]
    # Both attempts carried the one PDF kept for the row, byte for byte.
    [refused], [sent] = sink.refused, sink.messages
    async with store.reading() as tx:
        kept = await tx.document(effect.key)
    assert kept is not None and pdf_of(refused) == pdf_of(sent) == kept.pdf
    assert hashlib.sha256(kept.pdf).hexdigest() == kept.sha256
    started = [e for e in await audit_of(store, job) if e.action == "start_send"]
    assert [e.detail["document_sha256"] for e in started] == [kept.sha256] * 2


def pdf_of(message: EmailMessage) -> bytes:
    """The PDF attached to a PO e-mail."""
    (pdf,) = (p for p in message.iter_attachments() if p.get_content_type() == "application/pdf")
    content = pdf.get_content()
    assert isinstance(content, bytes)
    return content


async def audit_of(store, job):
    async with store.reading() as tx:
        return await tx.audit(job.id)


async def dead_letter(store, sink, clock):
    """Three busy answers in a row: RULES allow three attempts, so the send is dead-lettered."""
    for _ in range(3):
        sink.script("RCPT", "421 4.7.0 Too busy")
    runner = runner_for(store, sink, clock)
    for _ in range(3):
        await runner.run_once()
        clock.advance(minutes=5)
    return runner


async def test_retries_stop_at_the_cap_and_dead_letter(store, sink):
    clock = Clock()
    job = await approved_job(store)
    runner = await dead_letter(store, sink, clock)
    job, [effect] = await current(store, job)
    assert job.state is State.FAILED_FINAL
    assert effect.status is EffectStatus.FAILED and effect.attempts == 3
    assert "gave up after 3 attempts" in effect.last_error
    assert await runner.run_once() == 0
    assert sink.messages == []


async def test_550_is_final(store, sink):
    clock = Clock()
    job = await approved_job(store)
    sink.script("RCPT", "550 5.1.1 No such user")
    await runner_for(store, sink, clock).run_once()
    job, [effect] = await current(store, job)
    assert job.state is State.FAILED_FINAL
    assert effect.status is EffectStatus.FAILED and "permanent" in effect.last_error
    clock.advance(hours=1)
    assert await runner_for(store, sink, clock).run_once() == 0
    assert sink.messages == []


@pytest.mark.slow  # waits on real time
@pytest.mark.timed
async def test_late_answer_after_data_is_unknown_and_never_resent(store, sink):
    clock = Clock()
    job = await approved_job(store)
    sink.script("DATA", "250 2.0.0 Ok: queued", delay=1.5)
    runner = runner_for(store, sink, clock, timeout=0.5)
    await runner.run_once()
    job, [effect] = await current(store, job)
    assert job.state is State.UNKNOWN_OUTCOME and effect.status is EffectStatus.UNKNOWN
    for _ in range(3):
        clock.advance(hours=1)
        assert await runner.run_once() == 0
    await asyncio.sleep(1.2)  # let the server finish its late answer
    assert len(sink.messages) == 1  # the server did take it: no second copy
    sent = await closing.reconcile(
        store,
        job.po_number,
        Action.RECONCILE_SENT,
        "supplier confirmed receipt by phone",
        Stamp("cli:ops", clock()),
    )
    assert sent.state is State.SENT


@pytest.mark.slow  # waits on real time
@pytest.mark.timed
async def test_reconcile_not_sent_sends_once_with_the_same_message_id(store, sink):
    clock = Clock()
    job = await approved_job(store)
    sink.script("DATA", "554 5.0.0 Lost it", delay=1.0)
    runner = runner_for(store, sink, clock, timeout=0.3)
    await runner.run_once()
    job, [effect] = await current(store, job)
    assert job.state is State.UNKNOWN_OUTCOME
    await asyncio.sleep(1.0)
    assert sink.messages == []
    job = await closing.reconcile(
        store,
        job.po_number,
        Action.RECONCILE_NOT_SENT,
        "supplier has nothing",
        Stamp("cli:ops", clock()),
    )
    assert job.state is State.APPROVED
    assert await runner.run_once() == 1
    assert await runner.run_once() == 0
    job, [effect] = await current(store, job)
    assert job.state is State.SENT and effect.attempts == 1  # a fresh budget after reconcile
    assert ids(sink) == [message_id(effect.key, DOMAIN)]
    assert sink.messages[0]["Idempotency-Key"] == effect.key


async def test_rejected_job_is_never_picked_up(store, sink):
    clock = Clock()
    job = await opening.open_job(store, new_job(), make_draft(), T0, RULES)
    await decisions.decide(
        store,
        Review(
            job.po_number, APPROVER_A, Verdict.REJECT, 1, job.draft_hash, reason="wrong supplier"
        ),
        T0,
        RULES,
    )
    runner = runner_for(store, sink, clock)
    for _ in range(3):
        assert await runner.run_once() == 0
        clock.advance(hours=1)
    job, effects = await current(store, job)
    assert job.state is State.REJECTED and effects == []
    assert sink.messages == []


async def test_expired_approval_cannot_send(store, sink):
    job = await approved_job(store)
    clock = Clock(T0 + timedelta(hours=24, seconds=1))
    runner = runner_for(store, sink, clock)
    await runner.run_once()
    job, [effect] = await current(store, job)
    assert job.state is State.EXPIRED
    assert effect.status is EffectStatus.CANCELLED
    assert sink.messages == []


async def test_approval_by_an_approver_revoked_since_cannot_send(store, sink):
    job = await approved_job(store)
    async with store.begin() as tx:
        await tx.revoke(APPROVER_A, "cli:admin", T0)
    await runner_for(store, sink, Clock()).run_once()
    job, [effect] = await current(store, job)
    assert job.state is State.EXPIRED and effect.status is EffectStatus.CANCELLED
    assert sink.messages == []


async def test_draft_changed_after_approval_sends_nothing(store, sink):
    clock = Clock()
    job = await approved_job(store)
    await opening.revise(
        store, job.po_number, Revision(make_draft(quantity=40)), Stamp("user:1001", T0), RULES
    )
    assert await runner_for(store, sink, clock).run_once() == 0
    job, [effect] = await current(store, job)
    assert job.state is State.AWAITING_APPROVAL and effect.status is EffectStatus.CANCELLED
    assert sink.messages == []
    # the new version needs its own approval, and gets its own key
    result = await decisions.decide(
        store, Review(job.po_number, APPROVER_B, Verdict.APPROVE, 2, job.draft_hash), T0, RULES
    )
    assert result.job.state is State.APPROVED
    await runner_for(store, sink, clock).run_once()
    job, effects = await current(store, job)
    assert [e.key.split(":")[2] for e in effects] == ["v1", "v2"]
    assert len(sink.messages) == 1 and "v2" in sink.messages[0]["Idempotency-Key"]


async def test_two_runners_in_one_process_send_each_job_once(store, sink):
    clock = Clock()
    jobs = [await approved_job(store, f"PO-2026-{n:03d}") for n in range(1, 9)]
    first, second = runner_for(store, sink, clock, "a"), runner_for(store, sink, clock, "b")
    await asyncio.gather(first.run_until_idle(0.05, 30), second.run_until_idle(0.05, 30))
    assert sorted(ids(sink)) == sorted(
        message_id(f"send-po:{j.po_number}:v1:{j.draft_hash[:12]}", DOMAIN) for j in jobs
    )


async def test_claim_whose_runner_vanished_is_taken_over_after_the_lease(store, sink):
    clock = Clock()
    job = await approved_job(store)
    async with store.begin() as tx:
        [claimed] = await tx.claim_due(clock(), "ghost", clock() + LEASE, 10)
    runner = runner_for(store, sink, clock)
    assert await runner.run_once() == 0  # still leased to the ghost
    clock.advance(seconds=61)
    assert await runner.run_once() == 1
    job, [_effect] = await current(store, job)
    assert job.state is State.SENT and ids(sink) == [message_id(claimed.key, DOMAIN)]


async def test_attempt_whose_runner_vanished_goes_to_unknown_outcome(store, sink):
    clock = Clock()
    job = await approved_job(store)
    [claimed] = await dispatch.claim(store, clock(), "ghost", LEASE, 10)
    await with_document(store, claimed, clock())
    order = await dispatch.start_attempt(store, claimed.key, "ghost", clock(), LEASE, RULES)
    assert order is not None
    runner = runner_for(store, sink, clock)
    clock.advance(seconds=61)
    assert await runner.run_once() == 0
    job, [effect] = await current(store, job)
    assert job.state is State.UNKNOWN_OUTCOME and effect.status is EffectStatus.UNKNOWN
    assert sink.messages == []
    # the ghost's late success is proof enough: the job is reconciled to SENT
    state = await dispatch.finish_attempt(
        store, order, Attempted("ghost", result={"smtp_code": 250}), clock(), RULES, 0.5
    )
    assert state is State.SENT


async def test_dead_lettered_send_reissued_needs_a_new_approval_then_sends_once(store, sink):
    clock = Clock()
    job = await approved_job(store)
    runner = await dead_letter(store, sink, clock)
    job = await opening.reissue(
        store, job.po_number, "relay is back", Stamp("cli:ops", clock()), RULES
    )
    assert (job.state, job.draft_version) == (State.AWAITING_APPROVAL, 2)
    assert await runner.run_once() == 0  # the new version is not approved yet
    await decisions.decide(
        store, Review(job.po_number, APPROVER_B, Verdict.APPROVE, 2, job.draft_hash), clock(), RULES
    )
    assert await runner.run_once() == 1
    job, effects = await current(store, job)
    assert job.state is State.SENT
    assert [e.status for e in effects] == [EffectStatus.FAILED, EffectStatus.SUCCEEDED]
    assert [m["Idempotency-Key"] for m in sink.messages] == [effects[1].key]


class KeyDedupingSmtp(SmtpSender):
    """An SMTP relay that, like some providers' APIs, de-duplicates by Idempotency-Key."""

    provider_idempotent = True


async def test_lost_attempt_is_retried_when_the_provider_dedupes_the_key(store, sink):
    clock = Clock()
    job = await approved_job(store)
    [claimed] = await dispatch.claim(store, clock(), "ghost", LEASE, 10)
    await with_document(store, claimed, clock())
    assert await dispatch.start_attempt(store, claimed.key, "ghost", clock(), LEASE, RULES)
    server = SmtpServer(host=sink.host, port=sink.port, tls="none", timeout=2.0)
    sender = KeyDedupingSmtp(server, mail_from=f"orders@{DOMAIN}")
    runner = OutboxRunner(
        store,
        sender,
        RULES,
        lease=LEASE,
        runtime=Runtime(owner="runner-a", now=clock, rand=lambda: 0.5),
    )
    clock.advance(seconds=61)
    await runner.run_once()  # recovery: FAILED_RETRYABLE, due now; then sent in the same pass
    job, [effect] = await current(store, job)
    assert job.state is State.SENT and effect.attempts == 2
    async with store.begin() as tx:
        actions = [(e.action, e.to_state) for e in await tx.audit(job.id)][-4:]
    assert actions == [
        ("start_send", State.SENDING),
        ("fail_retryable", State.FAILED_RETRYABLE),
        ("start_send", State.SENDING),
        ("mark_sent", State.SENT),
    ]
    assert ids(sink) == [message_id(effect.key, DOMAIN)]


# -- several sends in flight -----------------------------------------------------------------


async def approved_jobs(store, count):
    return [await approved_job(store, f"PO-2026-{n:03d}") for n in range(1, count + 1)]


@pytest.mark.slow  # waits out a real SMTP timeout or late answer
@pytest.mark.timed
@timed
async def test_a_pass_sends_over_several_reused_connections_at_once(store):
    delay, connections, count = 0.5, 4, 12
    jobs = await approved_jobs(store, count)
    for job in jobs:  # the PDFs made beforehand: what is timed is the sending alone
        _, [effect] = await current(store, job)
        await with_document(store, effect, T0)
    with running_sink(data_delay=delay) as slow:
        runner = runner_for(store, slow, Clock(), connections=connections)
        started = time.monotonic()
        assert await runner.run_once() == count
        took = time.monotonic() - started
        ehlos = slow.commands.count("EHLO")
        received = sorted(ids(slow))
    # Never more than `connections` in flight: three rounds of four; and never one at a time,
    # which would take count x delay (6 s).
    assert count / connections * delay <= took < count * delay / 2
    assert ehlos == connections  # each connection carried three messages
    sent = []
    for job in jobs:
        job, [effect] = await current(store, job)
        assert job.state is State.SENT
        sent.append(message_id(effect.key, DOMAIN))
    assert received == sorted(sent)


async def test_a_busy_pass_claims_again_over_the_same_connection_up_to_its_cap(store, sink):
    per_pass = SENDS_PER_CONNECTION * PASS_CLAIMS  # one connection: full claims, then the cap
    await approved_jobs(store, per_pass + 1)
    runner = runner_for(store, sink, Clock(), connections=1)
    assert await runner.run_once() == per_pass
    assert sink.commands.count("EHLO") == 1 and len(sink.messages) == per_pass
    assert await runner.run_once() == 1  # the pass ended so expiry and recovery could run
    assert len(set(ids(sink))) == per_pass + 1


@pytest.mark.slow  # waits out a real SMTP timeout or late answer
@pytest.mark.timed
async def test_silence_after_data_on_one_send_leaves_the_others_sent(store, sink):
    jobs = await approved_jobs(store, 3)
    # whichever message reaches DATA first gets its 250 too late for the 0.5 s timeout
    sink.script("DATA", "250 2.0.0 Ok: queued", delay=1.5)
    runner = runner_for(store, sink, Clock(), timeout=0.5, connections=3)
    assert await runner.run_once() == 3
    states = [(await current(store, job))[0].state for job in jobs]
    assert sorted(states) == sorted([State.UNKNOWN_OUTCOME, State.SENT, State.SENT])
    assert len(sink.messages) == 3  # the ambiguous one did arrive
    assert await runner.run_once() == 0  # and is not sent again
    assert len(sink.messages) == 3


async def test_one_batch_of_markers_skips_a_row_another_runner_took(store, sink):
    clock = Clock()
    jobs = await approved_jobs(store, 3)
    claimed = await dispatch.claim(store, clock(), "runner-a", LEASE, 10)
    clock.advance(seconds=61)  # runner-a stalled past its lease; runner-b takes one row
    async with store.begin() as tx:
        [taken] = await tx.claim_due(clock(), "runner-b", clock() + LEASE, 1)
    keys = [effect.key for effect in claimed]
    for effect in claimed:
        await with_document(store, effect, clock())
    orders = await dispatch.start_attempts(store, keys, "runner-a", clock(), LEASE, RULES)
    assert [order.effect.key for order in orders] == [k for k in keys if k != taken.key]
    for job in jobs:
        job, [effect] = await current(store, job)
        if effect.key == taken.key:
            assert (job.state, effect.status) == (State.APPROVED, EffectStatus.CLAIMED)
            assert effect.lease_owner == "runner-b"
        else:
            assert (job.state, effect.status) == (State.SENDING, EffectStatus.STARTED)


async def test_a_row_that_must_not_go_is_expired_alone_in_its_batch(store, sink):
    revoked = await approved_job(store, "PO-2026-001", approver=APPROVER_A)
    others = [await approved_job(store, f"PO-2026-00{n}", approver=APPROVER_B) for n in (2, 3)]
    async with store.begin() as tx:
        await tx.revoke(APPROVER_A, "cli:admin", T0)
    assert await runner_for(store, sink, Clock()).run_once() == 3
    job, [effect] = await current(store, revoked)
    assert (job.state, effect.status) == (State.EXPIRED, EffectStatus.CANCELLED)
    sent = []
    for job in others:
        job, [effect] = await current(store, job)
        assert (job.state, effect.status) == (State.SENT, EffectStatus.SUCCEEDED)
        sent.append(effect.key)
    assert sorted(m["Idempotency-Key"] for m in sink.messages) == sorted(sent)


class SessionlessSmtp(SmtpSender):
    """A sender whose sessions cannot open: a bug, not a send failure."""

    def session(self):
        raise RuntimeError("no sessions today")


async def test_a_sender_that_breaks_ends_the_pass_instead_of_hanging_it(store):
    jobs = await approved_jobs(store, 3)
    server = SmtpServer(host="127.0.0.1", port=9, tls="none", timeout=2.0)
    sender = SessionlessSmtp(server, mail_from=f"orders@{DOMAIN}")
    runtime = Runtime(owner="runner-a", now=Clock(), rand=lambda: 0.5)
    runner = OutboxRunner(store, sender, RULES, lease=LEASE, connections=1, runtime=runtime)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="no sessions today"):
        async with asyncio.timeout(10):  # a hung pass fails the test instead of the suite
            await runner.run_once()
    assert time.monotonic() - started < 5
    # What was marked (the one row of its one connection, unless the worker broke before
    # the first marker) stays STARTED for recovery to settle; marking stopped with the worker.
    statuses = [(await current(store, job))[1][0].status for job in jobs]
    assert statuses.count(EffectStatus.CLAIMED) >= 2
    assert set(statuses) <= {EffectStatus.STARTED, EffectStatus.CLAIMED}


async def test_a_document_is_kept_once_whoever_makes_it(store):
    """Two runners making the one row's PDF at once: the first kept is the row's, for both."""
    job = await approved_job(store)
    async with store.reading() as tx:
        (effect,) = await tx.effects_for(job.id)
    first = await dispatch.keep_document(store, effect.key, b"%PDF first", T0)
    second = await dispatch.keep_document(store, effect.key, b"%PDF second", T0)
    assert first == second and first.pdf == b"%PDF first"
    async with store.reading() as tx:
        assert await tx.has_document(effect.key)
        assert await tx.document(effect.key) == first


async def test_the_pdf_is_sealed_at_rest(store):
    job = await approved_job(store)
    async with store.reading() as tx:
        (effect,) = await tx.effects_for(job.id)
    await with_document(store, effect, T0)
    async with store.reading() as tx:
        kept = await tx.document(effect.key)
        row = (await tx.conn.execute(select(schema.effect_documents))).one()
    assert kept is not None and kept.pdf.startswith(b"%PDF")
    assert kept.pdf not in row.pdf_encrypted and b"%PDF" not in row.pdf_encrypted
    assert (row.sha256, row.size) == (kept.sha256, len(kept.pdf))
