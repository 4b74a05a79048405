"""An ambiguous send settled from the mail relay's own record (core.outbox.reconcile), on a
real store (SQLite and PostgreSQL): a copy in the Sent folder settles it as sent, with the
copies as evidence; none within the grace period changes nothing; none after it is recorded
once and told to the admins, and the PO waits for a person. Nothing here ever sends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.jobs.effects import EffectStatus
from core.jobs.notices import COPY_MISSING, SETTLED_BY_RELAY, NoticeKind
from core.jobs.states import State
from core.outbox import reconcile
from core.outbox.evidence import SentCopy
from core.outbox.reconcile import Finding, settle_by_copies
from core.outbox.review import AdminChoice, Choice, resolve
from tests.helpers.factories import T0
from tests.helpers.review import PO, RULES, in_queue, snapshot

GRACE = timedelta(minutes=15)
FILED = datetime(2026, 12, 5, 10, 31, 7, tzinfo=UTC)


def copy(uid: int, at: datetime = FILED) -> SentCopy:
    return SentCopy("Sent", uid, at, "send-po.PO-2026-001.v1.x@shop.example")


async def one_ambiguous(store):
    [send] = await reconcile.ambiguous_sends(store)
    return send


async def alerts(store):
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        return [n.event for n in await tx.notices_for(job.id) if n.kind is NoticeKind.ALERT]


async def test_a_copy_in_sent_settles_the_send_as_sent_with_the_evidence(store):
    await in_queue(store, State.UNKNOWN_OUTCOME)
    send = await one_ambiguous(store)
    assert send.job.po_number == PO and send.effect.status is EffectStatus.UNKNOWN
    found = await settle_by_copies(
        store, send, "Sent", [copy(41)], T0 + timedelta(minutes=1), GRACE
    )
    assert found is Finding.SENT
    job, [effect], trail = await snapshot(store)
    assert job.state is State.SENT and effect.status is EffectStatus.SUCCEEDED
    assert effect.result == {
        "reconciled_by": reconcile.ACTOR,
        "note": "the mail relay filed it in Sent once (first UID 41)",
    }
    last = trail[-1]
    assert (last.actor, last.action, last.from_state) == (
        reconcile.ACTOR,
        "reconcile_sent",
        State.UNKNOWN_OUTCOME,
    )
    assert last.detail["by"] == reconcile.BY_RELAY and last.detail["key"] == effect.key
    assert last.detail["copies"] == [
        {"folder": "Sent", "uid": 41, "internaldate": "2026-12-05T10:31:07+00:00"}
    ]
    assert SETTLED_BY_RELAY in await alerts(store)
    assert await reconcile.ambiguous_sends(store) == []  # never looked up again
    again = await settle_by_copies(
        store, send, "Sent", [copy(41)], T0 + timedelta(minutes=2), GRACE
    )
    assert again is Finding.MOVED and (await snapshot(store))[2] == trail


async def test_two_copies_are_what_happened_the_po_is_sent(store):
    await in_queue(store, State.UNKNOWN_OUTCOME)
    send = await one_ambiguous(store)
    copies = [copy(52, FILED + timedelta(seconds=40)), copy(51)]
    assert await settle_by_copies(store, send, "Sent", copies, T0, GRACE) is Finding.SENT
    job, [effect], trail = await snapshot(store)
    assert job.state is State.SENT
    assert [c["uid"] for c in trail[-1].detail["copies"]] == [51, 52]  # in filing order
    assert effect.result["note"] == "the mail relay filed it in Sent 2 times (first UID 51)"


async def test_no_copy_waits_out_the_grace_then_is_recorded_once_for_a_person(store):
    await in_queue(store, State.UNKNOWN_OUTCOME)
    send = await one_ambiguous(store)
    within = T0 + GRACE - timedelta(seconds=1)
    assert await settle_by_copies(store, send, "Sent", [], within, GRACE) is Finding.WAITING
    before = await snapshot(store)
    assert before[0].state is State.UNKNOWN_OUTCOME and COPY_MISSING not in await alerts(store)

    after = T0 + GRACE
    assert await settle_by_copies(store, send, "Sent", [], after, GRACE) is Finding.MISSING
    job, [effect], trail = await snapshot(store)
    assert job == before[0] and effect.status is EffectStatus.UNKNOWN  # nothing moved or sent
    assert [e.action for e in trail[len(before[2]) :]] == [reconcile.COPY_MISSING]
    assert trail[-1].detail == {
        "key": effect.key,
        "folder": "Sent",
        "checked_at": after.isoformat(),
    }
    assert (await alerts(store)).count(COPY_MISSING) == 1

    later = await one_ambiguous(store)
    assert later.missing_since == after
    again = await settle_by_copies(store, later, "Sent", [], after + GRACE, GRACE)
    assert again is Finding.MISSING
    assert (await snapshot(store))[2] == trail and (await alerts(store)).count(COPY_MISSING) == 1

    # A person sends it again from the queue: the same key, once; it left the queue.
    choice = AdminChoice(PO, 1, Choice.SEND_AGAIN, 9001)
    done = await resolve(store, choice, frozenset({9001}), after + GRACE, RULES)
    assert done.job.state is State.APPROVED and await reconcile.ambiguous_sends(store) == []


async def test_a_copy_found_late_still_settles_a_send_recorded_missing(store):
    await in_queue(store, State.UNKNOWN_OUTCOME)
    send = await one_ambiguous(store)
    assert await settle_by_copies(store, send, "Sent", [], T0 + GRACE, GRACE) is Finding.MISSING
    late = await one_ambiguous(store)
    assert await settle_by_copies(store, late, "Sent", [copy(7)], T0 + 2 * GRACE, GRACE) is (
        Finding.SENT
    )
    assert (await snapshot(store))[0].state is State.SENT


async def test_a_send_a_person_settled_meanwhile_is_left_alone(store):
    await in_queue(store, State.UNKNOWN_OUTCOME)
    send = await one_ambiguous(store)
    choice = AdminChoice(PO, 1, Choice.MARK_SENT, 9001)
    await resolve(store, choice, frozenset({9001}), T0, RULES)
    trail = (await snapshot(store))[2]
    assert await settle_by_copies(store, send, "Sent", [copy(3)], T0, GRACE) is Finding.MOVED
    assert (await snapshot(store))[2] == trail


async def test_a_failed_send_is_not_ambiguous(store):
    await in_queue(store, State.FAILED_FINAL)
    assert await reconcile.ambiguous_sends(store) == []
