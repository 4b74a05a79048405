"""Admins work the manual-review queue from their phones: /queue and its signed buttons, end to
end over HTTP against the Bot API emulator."""

from __future__ import annotations

from bot.clock import utcnow
from bot.telegram.decisions import NOT_VALID
from bot.telegram.notices import NoticeRunner
from bot.telegram.queue import EMPTY, NOT_AN_ADMIN, ONLY_ADMINS
from core.approval.policies import Role
from core.jobs.states import State
from core.suppliers.links import link_for
from core.suppliers.pages import OPENED, settle_by_link
from tests.helpers.bot import ADMIN, deliveries_done, running_bot, timed
from tests.helpers.factories import APPROVER_A, REQUESTER, T0
from tests.helpers.review import PO, in_queue, snapshot

MARK_SENT, SEND_AGAIN, CANCEL = "✅ Mark sent", "🔁 Send again", "🚫 Cancel"
OTHER_ADMIN, SECOND = 515151, "PO-2026-002"


async def answer(botapi, query_id):
    return await botapi.wait_for(lambda: botapi.callback_answer(query_id))


async def listed(admin, count):
    """Send /queue and read the header and `count` messages after it."""
    admin.send_text("/queue")
    return [await admin.next_message() for _ in range(count + 1)]


def _edited(message):
    return message if message.edited else None


async def queued(run, state, po=PO):
    async with run.store.begin() as tx:
        await tx.met(REQUESTER, "Bilal", T0, started=True)
    return await in_queue(run.store, state, po)


@timed
async def test_an_admin_lists_an_unknown_outcome_and_marks_it_sent(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await queued(run, State.UNKNOWN_OUTCOME)
        admin = botapi.user(ADMIN, "Ayesha")
        header, item = await listed(admin, 1)
        assert header.text == "Manual-review queue: 1 purchase order, oldest first."
        assert item.parse_mode == "HTML"
        lines = item.text.splitlines()
        assert lines[0] == f"⚠️ {PO} · UNKNOWN_OUTCOME"
        assert lines[1].startswith("Hall Road Electronics · Rs") and lines[1].endswith("draft v1")
        assert lines[2] == "What happened: connection lost after DATA (1 attempt)"
        assert "requested by Bilal" in lines[3]
        key = f"send-po:{PO}:v1:"
        assert lines[4].startswith(f"Key: {key}")
        assert lines[5].startswith(f"Message-ID: <send-po.{PO}.v1.")  # escaped, shown as is
        assert item.button_texts == [MARK_SENT, SEND_AGAIN, CANCEL]

        query = admin.tap(item, MARK_SENT)
        told = await answer(botapi, query)
        assert told.text == "Marked sent." and told.age < 1.0
        await botapi.wait_for(lambda: botapi.message(ADMIN, item.message_id).edited)
        edited = botapi.message(ADMIN, item.message_id)
        assert edited.text.startswith("✅ Marked sent by Ayesha at ") and edited.buttons == []
        assert f"{PO} v1 · Hall Road Electronics" in edited.text
        job, [send], trail = await snapshot(run.store)
        assert job.state is State.SENT and send.status.value == "succeeded"
        assert (trail[-1].actor, trail[-1].action) == (f"user:{ADMIN}", "reconcile_sent")

        again = admin.tap_data(item, item.button(SEND_AGAIN).callback_data)  # as first listed
        assert (await answer(botapi, again)).text == f"Already handled: {PO} is SENT."
        await botapi.wait_for(  # the message says so too
            lambda: botapi.message(ADMIN, item.message_id).text.startswith("ℹ️ Already handled")
        )
        assert (await snapshot(run.store))[2] == trail
        admin.send_text("/queue")
        assert (await admin.next_message()).text == EMPTY


async def test_a_failed_send_offers_send_again_which_needs_a_fresh_approval(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await queued(run, State.FAILED_FINAL)
        admin = botapi.user(ADMIN, "Ayesha")
        _, item = await listed(admin, 1)
        assert item.text.startswith(f"⚠️ {PO} · FAILED_FINAL")
        assert "What happened: permanent error: 550 5.1.1 No such user (1 attempt)" in item.text
        assert item.button_texts == [SEND_AGAIN, CANCEL]
        told = await answer(botapi, admin.tap(item, SEND_AGAIN))
        assert told.text == "Re-issued as v2; it needs a fresh approval."
        await botapi.wait_for(lambda: botapi.message(ADMIN, item.message_id).edited)
        edited = botapi.message(ADMIN, item.message_id)
        assert edited.text.startswith("🔁 Re-issued as v2 for a fresh approval by Ayesha at ")
        job, _, trail = await snapshot(run.store)
        assert (job.state, job.draft_version) == (State.AWAITING_APPROVAL, 2)
        assert (trail[-1].actor, trail[-1].action) == (f"user:{ADMIN}", "revise")


async def test_a_non_admin_pressing_a_real_queue_button_changes_nothing(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await queued(run, State.UNKNOWN_OUTCOME)
        _, item = await listed(botapi.user(ADMIN, "Ayesha"), 1)
        before = await snapshot(run.store)
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        ali.send_text("/queue")
        own = await ali.next_message()
        assert own.text == NOT_AN_ADMIN
        for text in (MARK_SENT, SEND_AGAIN, CANCEL):
            query = ali.tap_data(own, item.button(text).callback_data)
            assert (await answer(botapi, query)).text == ONLY_ADMINS
        assert await snapshot(run.store) == before
        assert not botapi.message(APPROVER_A, own.message_id).edited


async def test_forged_or_altered_queue_buttons_are_not_valid(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await queued(run, State.UNKNOWN_OUTCOME)
        admin = botapi.user(ADMIN, "Ayesha")
        _, item = await listed(admin, 1)
        before = await snapshot(run.store)
        real = item.button(MARK_SENT).callback_data
        body, tag = real.rsplit(".", 1)
        forged = [
            f"{body}.{tag[:-1]}{'A' if tag[-1] != 'A' else 'B'}",  # altered tag
            real[: len(real) // 2],  # truncated
            f"c{body[1:]}.{tag}",  # Cancel, under Mark sent's tag
            f"{body.replace('.1.', '.2.', 1)}.{tag}",  # another version, same tag
            "s." + "x" * 40,  # random, in the queue's format
        ]
        for data in forged:
            assert (await answer(botapi, admin.tap_data(item, data))).text == NOT_VALID
        assert await snapshot(run.store) == before
        assert not botapi.message(ADMIN, item.message_id).edited


async def test_an_empty_queue_and_a_requesters_queue(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        async with run.store.begin() as tx:
            await tx.grant(424242, Role.REQUESTER, "test", T0)
        admin, requester = botapi.user(ADMIN, "Ayesha"), botapi.user(424242, "Zara")
        admin.send_text("/queue")
        assert (await admin.next_message()).text == EMPTY
        requester.send_text("/queue")
        assert (await requester.next_message()).text == NOT_AN_ADMIN


async def test_the_queue_shows_the_oldest_twenty_and_counts_the_rest(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        for n in range(1, 22):
            await queued(run, State.FAILED_FINAL, f"PO-2026-{n:03d}")
        admin = botapi.user(ADMIN, "Ayesha")
        header, *items, more = await listed(admin, 21)
        assert header.text == "Manual-review queue: 21 purchase orders, oldest first."
        assert [m.text.splitlines()[0] for m in items] == [
            f"⚠️ PO-2026-{n:03d} · FAILED_FINAL" for n in range(1, 21)
        ]
        assert more.text == "… and 1 more. Handle these, then send /queue again."


async def test_cancel_on_an_unknown_outcome_tells_the_requester_once_and_alerts_nobody(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        requester = botapi.user(REQUESTER, "Bilal", started=True)
        await queued(run, State.UNKNOWN_OUTCOME)
        admin = botapi.user(ADMIN, "Ayesha")
        _, item = await listed(admin, 1)
        assert (await answer(botapi, admin.tap(item, CANCEL))).text == "Cancelled."
        job, [send], trail = await snapshot(run.store)
        assert job.state is State.CANCELLED and send.status.value == "failed"
        assert [e.action for e in trail[-2:]] == ["reconcile_failed", "cancel"]
        # The moves owed news of UNKNOWN_OUTCOME and FAILED_FINAL too; a person has acted
        # since, so only the cancellation is said, and no admin is asked to look at it.
        await deliveries_done(run)  # what the tap's handler delivers, then the rest
        notices = NoticeRunner(run.store, run.app.bot, run.settings)
        while await notices.run_once():
            pass
        cancelled = await botapi.wait_for(
            lambda: [m for m in requester.messages() if m.text.endswith("cancelled.")]
        )
        assert [m.text for m in requester.messages()] == [
            f"{PO} was approved; the e-mail to the supplier goes out now.",
            cancelled[0].text,
        ]
        assert [m.text for m in admin.messages() if "needs you" in m.text] == []  # no alert


async def test_queue_messages_say_how_the_po_left_however_it_left(botapi, db_url, store):
    """Two admins hold the PO's queue message; the supplier opens the link in the e-mail, so
    the send is settled without them: both messages say so and lose their buttons. Another PO
    marked sent by one admin: the other admin's message says who did."""
    async with running_bot(botapi, db_url) as run:
        async with run.store.begin() as tx:
            await tx.grant(OTHER_ADMIN, Role.ADMIN, "test", T0)
        await queued(run, State.UNKNOWN_OUTCOME)
        await queued(run, State.UNKNOWN_OUTCOME, SECOND)
        ayesha, omar = botapi.user(ADMIN, "Ayesha"), botapi.user(OTHER_ADMIN, "Omar", started=True)
        _, first, second = await listed(ayesha, 2)
        _, first_too, second_too = await listed(omar, 2)

        _, [send], _ = await snapshot(run.store)
        assert await settle_by_link(run.store, link_for(send, 30), utcnow(), OPENED)
        while await run.notices.run_once():  # what the runner's next pass delivers
            pass
        for admin, item in ((ADMIN, first), (OTHER_ADMIN, first_too)):
            edited = await botapi.wait_for(
                lambda chat=admin, shown=item: _edited(botapi.message(chat, shown.message_id))
            )
            headline, summary = edited.text.splitlines()
            assert headline.startswith("✅ Settled as sent at ")
            assert headline.endswith(": the supplier used the link in the e-mail")
            assert summary.startswith(f"🧾 {PO} v1 · Hall Road Electronics") and "· SENT" in summary
            assert edited.buttons == []

        assert (await answer(botapi, ayesha.tap(second, MARK_SENT))).text == "Marked sent."
        await botapi.wait_for(lambda: botapi.message(OTHER_ADMIN, second_too.message_id).edited)
        theirs = botapi.message(OTHER_ADMIN, second_too.message_id)
        assert theirs.text.startswith("✅ Marked sent by Ayesha at ") and theirs.buttons == []
        assert botapi.message(ADMIN, second.message_id).text == theirs.text
        # Omar, late, taps the message he had before it changed: nothing is done twice.
        late = omar.tap_data(second_too, second_too.button(SEND_AGAIN).callback_data)
        assert (await answer(botapi, late)).text == f"Already handled: {SECOND} is SENT."
