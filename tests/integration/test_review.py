"""The manual-review queue's choices (core.outbox.review) on SQLite and PostgreSQL: every choice in
every queue state, who may choose, a PO that left the queue, two admins at once, and the
supplier's inbox after "Send again"."""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import asynccontextmanager
from datetime import timedelta

import pytest

from bot.clock import Runtime
from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Role, Verdict
from core.errors import (
    AlreadyResolved,
    IllegalTransition,
    NotAnAdmin,
    UnknownJob,
)
from core.jobs.effects import EffectStatus
from core.jobs.states import State
from core.outbox import dispatch, review
from core.outbox.dispatch import Attempted
from core.outbox.review import NOTE, AdminChoice, Choice
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.documents import with_document
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0, make_draft, new_job
from tests.helpers.review import LEASE, PO, RULES, SEND_ERRORS, in_queue, snapshot
from tests.helpers.store import DATA_KEY

ADMIN, OTHER_ADMIN = 9001, 9002  # the first from the configuration, the second by role
CONFIGURED = frozenset({ADMIN})
LATER = T0 + timedelta(minutes=30)


async def resolve(store, choice: Choice, admin: int = ADMIN, version: int = 1, po: str = PO):
    return await review.resolve(
        store, AdminChoice(po, version, choice, admin), CONFIGURED, LATER, RULES
    )


@pytest.mark.parametrize(
    ("state", "choice", "to_state", "actions", "send_status", "version"),
    [
        # the supplier confirmed it has the e-mail
        (State.UNKNOWN_OUTCOME, Choice.MARK_SENT, State.SENT, ["reconcile_sent"],
         EffectStatus.SUCCEEDED, 1),
        # it never arrived: the same row, so the same key, goes out once more
        (State.UNKNOWN_OUTCOME, Choice.SEND_AGAIN, State.APPROVED, ["reconcile_not_sent"],
         EffectStatus.PENDING, 1),
        # withdrawn: the finding is recorded first, then the cancel, both by the admin
        (State.UNKNOWN_OUTCOME, Choice.CANCEL, State.CANCELLED, ["reconcile_failed", "cancel"],
         EffectStatus.FAILED, 1),
        # a refused send: the same content as v2, which needs a fresh approval
        (State.FAILED_FINAL, Choice.SEND_AGAIN, State.AWAITING_APPROVAL, ["revise"],
         EffectStatus.FAILED, 2),
        # a refused send, withdrawn
        (State.FAILED_FINAL, Choice.CANCEL, State.CANCELLED, ["cancel"], EffectStatus.FAILED, 1),
    ],
)  # fmt: skip
async def test_each_choice_in_each_queue_state(
    store, state, choice, to_state, actions, send_status, version
):
    before, _, trail_before = await in_queue(store, state)
    done = await resolve(store, choice)
    assert (done.job.state, done.job.draft_version, done.was) == (to_state, version, state)
    job, [send], trail = await snapshot(store)
    assert (job.state, job.draft_version) == (to_state, version)
    assert send.status is send_status and send.draft_version == 1
    added = trail[len(trail_before) :]
    assert [e.action for e in added] == actions
    assert {e.actor for e in added} == {f"user:{ADMIN}"}
    assert all(e.detail["note"] == NOTE and e.detail["choice"] == choice.value for e in added)
    assert added[0].from_state is state and added[-1].to_state is to_state
    assert job.version > before.version


async def test_send_again_on_unknown_outcome_starts_a_fresh_retry_budget(store):
    await in_queue(store, State.UNKNOWN_OUTCOME)
    await resolve(store, Choice.SEND_AGAIN)
    _, [send], _ = await snapshot(store)
    assert (send.attempts, send.first_attempt_at, send.next_attempt_at) == (0, None, LATER)
    assert send.lease_owner is None


async def test_send_again_on_a_failed_send_owes_every_approver_a_new_card(store):
    await in_queue(store, State.FAILED_FINAL)
    await resolve(store, Choice.SEND_AGAIN)
    job, _, _ = await snapshot(store)
    async with store.begin() as tx:
        cards = {(n.user_id, n.draft_version) for n in await tx.notices_for(job.id)
                 if n.kind == "card"}  # fmt: skip
    assert {(APPROVER_A, 2), (APPROVER_B, 2)} <= cards


async def test_mark_sent_is_not_offered_for_a_failed_send_and_refused_if_forged(store):
    job, sends, trail = await in_queue(store, State.FAILED_FINAL)
    assert review.choices(job) == (Choice.SEND_AGAIN, Choice.CANCEL)
    with pytest.raises(IllegalTransition):
        await resolve(store, Choice.MARK_SENT)
    assert await snapshot(store) == (job, sends, trail)


async def test_unknown_outcome_offers_all_three_and_other_states_none(store):
    job, _, _ = await in_queue(store, State.UNKNOWN_OUTCOME)
    assert review.choices(job) == (Choice.MARK_SENT, Choice.SEND_AGAIN, Choice.CANCEL)
    await resolve(store, Choice.MARK_SENT)
    sent, _, _ = await snapshot(store)
    assert review.choices(sent) == ()


async def test_only_admins_may_choose_and_a_refusal_changes_nothing(store):
    job, sends, trail = await in_queue(store, State.UNKNOWN_OUTCOME)
    for somebody in (APPROVER_A, REQUESTER, 424242):
        with pytest.raises(NotAnAdmin):
            await resolve(store, Choice.MARK_SENT, admin=somebody)
    assert await snapshot(store) == (job, sends, trail)
    async with store.begin() as tx:
        await tx.grant(OTHER_ADMIN, Role.ADMIN, "test", T0)
    done = await resolve(store, Choice.MARK_SENT, admin=OTHER_ADMIN)  # an admin by role
    assert done.job.state is State.SENT


async def test_a_po_that_left_the_queue_is_refused_and_nothing_changes(store):
    await in_queue(store, State.UNKNOWN_OUTCOME)
    await resolve(store, Choice.MARK_SENT)
    job, sends, trail = await snapshot(store)
    for choice in Choice:  # a double tap, or another admin's message
        with pytest.raises(AlreadyResolved) as refused:
            await resolve(store, choice)
        assert (refused.value.state, refused.value.draft_version) == (State.SENT, 1)
    assert await snapshot(store) == (job, sends, trail)


async def test_a_po_waiting_for_approval_was_never_in_the_queue(store):
    await opening.open_job(store, new_job(), make_draft(), T0, RULES)
    with pytest.raises(AlreadyResolved):
        await resolve(store, Choice.CANCEL)
    with pytest.raises(UnknownJob):
        await resolve(store, Choice.CANCEL, po="PO-1999-001")


async def test_a_choice_naming_an_older_version_is_refused_when_the_po_is_back(store):
    await in_queue(store, State.FAILED_FINAL)
    job = (await resolve(store, Choice.SEND_AGAIN)).job  # v2
    await decisions.decide(
        store, Review(PO, APPROVER_B, Verdict.APPROVE, 2, job.draft_hash), LATER, RULES
    )
    [claimed] = await dispatch.claim(store, LATER, "runner-a", LEASE, 10)
    await with_document(store, claimed, LATER)
    order = await dispatch.start_attempt(store, claimed.key, "runner-a", LATER, LEASE, RULES)
    assert order is not None
    await dispatch.finish_attempt(
        store,
        order,
        Attempted("runner-a", error=SEND_ERRORS[State.FAILED_FINAL]),
        LATER,
        RULES,
        0.5,
    )
    with pytest.raises(AlreadyResolved) as refused:  # the v1 message's button
        await resolve(store, Choice.CANCEL, version=1)
    assert (refused.value.state, refused.value.draft_version) == (State.FAILED_FINAL, 2)
    assert (await resolve(store, Choice.CANCEL, version=2)).job.state is State.CANCELLED


class _Rendezvous:
    """Holds each transaction, once it has read the job, until every party has: all then act
    on the same job version. SQLite admits one writing transaction at a time, so there the
    wait gives up and the others queue behind the database lock instead."""

    def __init__(self, parties: int) -> None:
        self.parties, self.reads, self.all_read = parties, 0, asyncio.Event()

    async def arrive(self) -> None:
        self.reads += 1
        if self.reads >= self.parties:
            self.all_read.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.all_read.wait(), timeout=0.5)


class _RacingStore:
    """A store whose transactions meet at the rendezvous after reading a job by PO number."""

    def __init__(self, store: SqlStore, meet: _Rendezvous) -> None:
        self.store, self.meet = store, meet

    @asynccontextmanager
    async def begin(self):
        async with self.store.begin() as tx:
            yield _RacingTx(tx, self.meet)


class _RacingTx:
    def __init__(self, tx, meet: _Rendezvous) -> None:
        self._tx, self._meet = tx, meet

    def __getattr__(self, name):
        return getattr(self._tx, name)

    async def job_by_po(self, po_number):
        job = await self._tx.job_by_po(po_number)
        await self._meet.arrive()
        return job


@pytest.mark.slow  # on SQLite one admin waits out the 0.5 s rendezvous (_Rendezvous)
@pytest.mark.parametrize(
    ("state", "first", "second"),
    [
        # one admin says it arrived, the other cancels
        (State.UNKNOWN_OUTCOME, Choice.MARK_SENT, Choice.CANCEL),
        # both ask for it again: one send, not two
        (State.UNKNOWN_OUTCOME, Choice.SEND_AGAIN, Choice.SEND_AGAIN),
        # both re-issue: one new version, not two
        (State.FAILED_FINAL, Choice.SEND_AGAIN, Choice.SEND_AGAIN),
        # one re-issues, the other cancels
        (State.FAILED_FINAL, Choice.SEND_AGAIN, Choice.CANCEL),
    ],
)
async def test_two_admins_at_once_make_one_resolution(store, db_url, state, first, second):
    await in_queue(store, state)
    async with store.begin() as tx:
        await tx.grant(OTHER_ADMIN, Role.ADMIN, "test", T0)
    _, _, trail_before = await snapshot(store)
    meet = _Rendezvous(2)
    stores = [SqlStore(make_engine(db_url), DATA_KEY) for _ in range(2)]  # as two processes
    calls = zip(stores, (first, second), (ADMIN, OTHER_ADMIN), strict=True)
    try:
        results = await asyncio.gather(
            *(
                review.resolve(
                    _RacingStore(s, meet), AdminChoice(PO, 1, c, a), CONFIGURED, LATER, RULES
                )
                for s, c, a in calls
            ),
            return_exceptions=True,
        )
    finally:
        for s in stores:
            await s.close()
    [done] = [r for r in results if isinstance(r, review.Resolution)]
    [refused] = [r for r in results if not isinstance(r, review.Resolution)]
    assert isinstance(refused, AlreadyResolved), refused
    assert refused.state is done.job.state
    job, sends, trail = await snapshot(store)
    assert job == done.job
    added = trail[len(trail_before) :]
    assert len({e.actor for e in added}) == 1  # one admin's moves, and only theirs
    assert job.draft_version == (2 if job.state is State.AWAITING_APPROVAL else 1)
    assert len(sends) == 1
    if db_url.startswith("postgresql"):  # both read the same version: the race was real
        assert meet.reads == 3  # and the loser read again after losing the compare-and-set


def _runner(store, sink, at):
    sender = SmtpSender(
        SmtpServer(host=sink.host, port=sink.port, tls="none", timeout=0.3),
        mail_from="orders@shop.example",
    )
    return OutboxRunner(
        store,
        sender,
        RULES,
        lease=LEASE,
        runtime=Runtime(owner="runner-a", now=lambda: at, rand=lambda: 0.5),
    )


@pytest.mark.slow  # waits out a real SMTP timeout or late answer
@pytest.mark.timed
async def test_send_again_after_an_unknown_outcome_mails_the_supplier_once_with_the_same_key(
    store, smtp_sink
):
    job = await opening.open_job(store, new_job(), make_draft(), T0, RULES)
    await decisions.decide(
        store, Review(PO, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash), T0, RULES
    )
    smtp_sink.script("DATA", "554 5.0.0 Lost it", delay=1.0)  # answers after the sender gave up
    await _runner(store, smtp_sink, T0).run_once()
    job, [send], _ = await snapshot(store)
    assert job.state is State.UNKNOWN_OUTCOME and send.status is EffectStatus.UNKNOWN
    await asyncio.sleep(1.0)  # the server's late refusal: the supplier has nothing
    assert smtp_sink.messages == []
    await resolve(store, Choice.SEND_AGAIN)
    runner = _runner(store, smtp_sink, LATER)
    assert await runner.run_once() == 1
    assert await runner.run_once() == 0
    job, [send], _ = await snapshot(store)
    assert job.state is State.SENT and send.attempts == 1
    assert [m["Idempotency-Key"] for m in smtp_sink.messages] == [send.key]


async def test_send_again_after_a_refused_send_waits_for_a_fresh_approval_then_mails_once(
    store, smtp_sink
):
    await in_queue(store, State.FAILED_FINAL)
    job = (await resolve(store, Choice.SEND_AGAIN)).job
    runner = _runner(store, smtp_sink, LATER)
    assert await runner.run_once() == 0  # v2 is not approved yet
    await decisions.decide(
        store, Review(PO, APPROVER_B, Verdict.APPROVE, 2, job.draft_hash), LATER, RULES
    )
    assert await runner.run_once() == 1
    job, sends, _ = await snapshot(store)
    assert job.state is State.SENT
    assert [s.status for s in sends] == [EffectStatus.FAILED, EffectStatus.SUCCEEDED]
    assert [m["Idempotency-Key"] for m in smtp_sink.messages] == [sends[1].key]
    assert ":v2:" in sends[1].key
