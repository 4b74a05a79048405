"""Approvers tap cards on their phones: one decision however many taps, forgeries refused."""

from __future__ import annotations

import asyncio
import csv
import io
from datetime import timedelta

from pypdf import PdfReader
from sqlalchemy import select

from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from bot.telegram import decisions as decisions_bot
from bot.telegram.cards import APPROVE_TEXT, DETAILS_TEXT, REJECT_TEXT
from bot.telegram.context import STRANGER_TAP
from bot.telegram.decisions import NOT_VALID
from bot.telegram.notices import NoticeRunner
from core.approval.policies import Role, Verdict
from core.jobs.states import State
from store import schema
from tests.helpers.bot import (
    ADMIN,
    PO,
    all_handled,
    answer,
    cards_out,
    deliveries_done,
    job_and_decisions,
    running_bot,
    said,
    timed,
)
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0

OUTSIDER = 424242  # a requester, no approver: the cards' buttons are not theirs


@timed
async def test_approve_answers_at_once_and_edits_every_card(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, sana_card = await cards_out(botapi, run)
        query = ali.tap(ali_card, APPROVE_TEXT)
        assert await answer(botapi, query) == "Approved — e-mailing the supplier."
        assert botapi.callback_answer(query).age < 1.0
        await deliveries_done(run)  # the edits follow the answer
        for chat, card in ((APPROVER_A, ali_card), (APPROVER_B, sana_card)):
            now = botapi.message(chat, card.message_id)
            assert now.text.startswith("✅ Approved by Ali at ") and now.buttons == []
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.APPROVED and [d.reviewer_id for d in decisions] == [APPROVER_A]
        assert len(effects) == 1  # one send-po for the supplier
        again = ali.tap_data(ali_card, sana_card.button(APPROVE_TEXT).callback_data)
        assert (await answer(botapi, again)).startswith("Already approved by you at ")


async def claimed_updates(run) -> set[int]:
    """The update ids the bot has claimed (processed_updates)."""
    async with run.store.reading() as tx:
        rows = await tx.conn.execute(select(schema.processed_updates.c.update_id))
        return {row.update_id for row in rows}


async def test_an_approve_tap_is_claimed_with_its_decision_and_a_repeat_is_dropped(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        outsider = botapi.user(OUTSIDER, "Zara")
        async with run.store.begin() as tx:
            await tx.grant(OUTSIDER, Role.APPROVER, "test", T0)
        data = ali_card.button(APPROVE_TEXT).callback_data
        before = await claimed_updates(run)
        refused = ali.tap_data(ali_card, data.replace("a.", "d.", 1))  # altered: not valid
        assert await answer(botapi, refused) == NOT_VALID
        query = ali.tap(ali_card, APPROVE_TEXT)
        assert await answer(botapi, query) == "Approved — e-mailing the supplier."
        update_id = botapi.callback_query(query).update_id
        assert await claimed_updates(run) - before == {update_id}  # with the decision
        outsider.send_text("/start")
        own = await outsider.next_message()
        late = outsider.tap_data(own, data)  # refused: its rolled-back claim is gone too
        assert (await answer(botapi, late)).startswith("Already decided: ")
        assert botapi.callback_query(late).update_id not in await claimed_updates(run)
        for _ in range(2):
            botapi.redeliver(update_id)
        await all_handled(botapi, run)
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.APPROVED and [d.reviewer_id for d in decisions] == [APPROVER_A]
        assert len(effects) == 1
        assert botapi.callback_answer(query).text == "Approved — e-mailing the supplier."


async def test_five_and_three_simultaneous_taps_make_one_decision(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, sana, sana_card = await cards_out(botapi, run)
        data_a = ali_card.button(APPROVE_TEXT).callback_data
        data_b = sana_card.button(APPROVE_TEXT).callback_data
        queries = [ali.tap_data(ali_card, data_a) for _ in range(5)]
        queries += [sana.tap_data(sana_card, data_b) for _ in range(3)]
        answers = [await answer(botapi, q) for q in queries]
        assert answers.count("Approved — e-mailing the supplier.") == 1
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.APPROVED
        assert len(decisions) == 1 and decisions[0].verdict is Verdict.APPROVE
        assert len(effects) == 1
        assert all(a and a != NOT_VALID for a in answers)


async def test_forged_altered_swapped_and_random_data_changes_nothing(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        real = ali_card.button(APPROVE_TEXT).callback_data
        details = ali_card.button(DETAILS_TEXT).callback_data
        forged = [
            real[:-1] + ("A" if real[-1] != "A" else "B"),  # altered tag
            real[: len(real) // 2],  # truncated
            "a." + real[2:].replace(".1.", ".2.", 1),  # another version, same tag
            details.rsplit(".", 1)[0].replace("d.", "a.", 1) + "." + details.rsplit(".", 1)[1],
            "x" * 40,  # random
        ]
        for data in forged:
            assert await answer(botapi, ali.tap_data(ali_card, data)) == NOT_VALID
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.AWAITING_APPROVAL and decisions == []


async def test_a_stranger_the_requester_and_a_revoked_approver_press_a_real_button(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        async with run.store.begin() as tx:
            await tx.grant(REQUESTER, Role.APPROVER, "test", T0)
            await tx.grant(OUTSIDER, Role.REQUESTER, "test", T0)
        _ali, ali_card, sana, sana_card = await cards_out(botapi, run)
        data = ali_card.button(APPROVE_TEXT).callback_data
        outsider = botapi.user(OUTSIDER, "Zara")
        outsider.send_text("/start")
        own = await outsider.next_message()
        assert await answer(botapi, outsider.tap_data(own, data)) == "You are not an approver."
        requester = botapi.user(REQUESTER, "Bilal")
        mine = requester.last_message()
        assert await answer(botapi, requester.tap_data(mine, data)) == (
            "You cannot approve your own request."
        )
        async with run.store.begin() as tx:
            await tx.revoke(APPROVER_B, "test", T0)
        assert await answer(botapi, sana.tap(sana_card, APPROVE_TEXT)) == STRANGER_TAP  # no role
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.AWAITING_APPROVAL and decisions == []


async def test_details_sends_the_draft_pdf_and_the_whole_po_as_csv(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        query = ali.tap(ali_card, DETAILS_TEXT)
        assert await answer(botapi, query) == "Sending the whole PO: its PDF and a CSV file…"
        sent = await botapi.wait_for(
            lambda: ((docs := botapi.documents(APPROVER_A)) and len(docs) == 2 and docs) or None
        )
        pdf = sent[0].document
        assert pdf.file_name == f"{PO}-v1.pdf"
        pages = PdfReader(io.BytesIO(pdf.data)).pages
        text = "\n".join(page.extract_text() for page in pages)
        assert "DRAFT" in text and PO in text and "CHG-65W" in text  # what the supplier will get
        document = sent[-1].document
        assert document.file_name == f"{PO}-v1.csv"
        rows = list(csv.DictReader(io.StringIO(document.data.decode())))
        assert [(r["sku"], r["quantity"], r["note"]) for r in rows] == [
            ("CHG-65W", "3", "for <b>Eid</b> & more")
        ]


async def test_reject_asks_for_a_reason_and_tells_the_requester(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, sana_card = await cards_out(botapi, run)
        requester = botapi.user(REQUESTER, "Bilal")
        requester.skip_messages()
        query = ali.tap(ali_card, REJECT_TEXT)
        assert (
            await answer(botapi, query)
            == "Why reject it? Reply to my next message with the reason."
        )
        prompt = await ali.next_message()
        assert prompt.text == f"Reason for rejecting {PO} v1?"
        assert prompt.reply_markup["force_reply"] is True
        job, decisions, _ = await job_and_decisions(run)
        assert decisions == []  # nothing is decided until the reason arrives
        ali.reply_to(prompt, "Too many chargers; we have stock in Saddar.")
        assert (
            await ali.next_message()
        ).text == f"Rejected {PO}. The requester is told your reason."
        assert (await requester.next_message()).text == (  # delivered right after the reply
            f"{PO} was rejected: Too many chargers; we have stock in Saddar."
        )
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.REJECTED and effects == []
        assert decisions[0].reason == "Too many chargers; we have stock in Saddar."
        await botapi.wait_for(lambda: botapi.message(APPROVER_B, sana_card.message_id).edited)
        edited = botapi.message(APPROVER_B, sana_card.message_id)
        assert edited.text.startswith("❌ Rejected by Ali at ") and edited.buttons == []
        ali.send_text("Reason for rejecting PO-9999-0001 v1?")  # typed, not a reply: no decision
        assert "You are registered as approver" in (await ali.next_message()).text
        ali.reply_to(ali_card, "Approved, go ahead")  # a reply to a card is no decision either
        assert (await ali.next_message()).text.startswith(
            f"A message never approves a purchase order. {PO} (Rs 19,501.50) no longer waits "
            "for your decision: it is rejected."
        )
        assert len((await job_and_decisions(run))[1]) == 1
        stranger = botapi.user(424242, "Zara")
        stranger.send_text("/start")
        refusal = await stranger.next_message()
        stranger.reply_to(refusal, "Who do I ask?")
        await all_handled(botapi, run)
        assert stranger.messages() == [refusal]  # and no second refusal within the period


async def test_history_shows_an_admin_the_audit_trail_without_addresses(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        await answer(botapi, ali.tap(ali_card, APPROVE_TEXT))
        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text(f"/history {PO.lower()}")
        trail = await said(admin)
        assert trail.startswith(f"{PO}  APPROVED")
        assert f"approved by Ali ({APPROVER_A})  v1" in trail
        assert "request_approval  DRAFTED -> AWAITING_APPROVAL" in trail
        assert "AWAITING_APPROVAL -> APPROVED" in trail
        assert "hallroad" not in trail  # no supplier address in the trail
        admin.send_text("/history PO-1999-0001")
        assert await said(admin) == "No purchase order PO-1999-0001."
        ali.send_text(f"/history {PO}")  # an approver reads the trail of what they decided
        assert (await said(ali)).startswith(f"{PO}  APPROVED")
        requester = botapi.user(REQUESTER, "Bilal")
        await deliveries_done(run)  # the news of the approval first: it is not the answer
        requester.skip_messages()
        requester.send_text(f"/history {PO}")
        assert await said(requester) == "Only admins can read the audit trail."


async def test_the_requester_hears_when_the_po_is_approved_and_sent(
    botapi, db_url, store, smtp_sink
):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        requester = botapi.user(REQUESTER, "Bilal")
        requester.skip_messages()
        await answer(botapi, ali.tap(ali_card, APPROVE_TEXT))
        await deliveries_done(run)  # "approved" goes out after the answer, beside the handler
        sender = SmtpSender(
            SmtpServer(host=smtp_sink.host, port=smtp_sink.port, tls="none", timeout=5.0),
            mail_from="orders@shop.example",
        )
        outbox = OutboxRunner(run.store, sender, run.settings.rules(), lease=timedelta(seconds=60))
        assert await outbox.run_once() == 1
        notices = NoticeRunner(run.store, run.app.bot, run.settings)
        assert await notices.run_once() == 1  # "sent"; "approved" went out after the tap
        assert await notices.run_once() == 0
        told = [(await requester.next_message()).text for _ in range(2)]
        assert told == [
            f"{PO} was approved; the e-mail to the supplier goes out now.",
            f"{PO} was e-mailed to the supplier.",
        ]
        assert len(smtp_sink.messages) == 1


async def test_details_and_reject_are_for_approvers_who_may_still_decide(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, sana, sana_card = await cards_out(botapi, run)
        async with run.store.begin() as tx:
            await tx.grant(OUTSIDER, Role.REQUESTER, "test", T0)
        outsider = botapi.user(OUTSIDER, "Zara")
        outsider.send_text("/start")
        own = await outsider.next_message()
        for text in (DETAILS_TEXT, REJECT_TEXT):
            query = outsider.tap_data(own, ali_card.button(text).callback_data)
            assert await answer(botapi, query) == "You are not an approver."
        async with run.store.begin() as tx:
            await tx.revoke(APPROVER_B, "test", T0)
        assert await answer(botapi, sana.tap(sana_card, DETAILS_TEXT)) == STRANGER_TAP  # no role
        assert botapi.documents(APPROVER_B) == [] and botapi.documents(OUTSIDER) == []
        assert len(outsider.messages()) == 1  # no reason prompt either

        stale = ali_card.button(REJECT_TEXT).callback_data  # approving edits the buttons away
        await answer(botapi, ali.tap(ali_card, APPROVE_TEXT))
        query = ali.tap_data(ali_card, stale)  # the stale card, after approving it
        assert (await answer(botapi, query)).startswith("Already approved by you at ")
        assert [m.text for m in ali.messages() if m.text.startswith("Reason for")] == []
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.APPROVED and len(decisions) == 1


STRANGER = 515151  # no role at all


@timed
async def test_a_burst_of_approve_taps_is_decided_together_each_answered_as_if_alone(
    botapi, db_url, store, monkeypatch
):
    """Both approvers and a stranger tap Approve at once: the three taps are decided in one
    transaction (decide_taps), and each hears what it would alone: the first approval counts,
    the second finds the PO approved, the stranger is turned away with nothing written."""
    batches: list[int] = []
    real = decisions_bot.decide_taps

    async def counted(deps, asked):
        batches.append(len(asked))
        return await real(deps, asked)

    monkeypatch.setattr(decisions_bot, "decide_taps", counted)
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, sana, sana_card = await cards_out(botapi, run)
        zara = botapi.user(STRANGER, "Zara")
        zara.send_text("/start")
        refusal = await zara.next_message()
        data = ali_card.button(APPROVE_TEXT).callback_data

        def burst() -> list[str]:
            with botapi.at_once():
                return [
                    ali.tap(ali_card, APPROVE_TEXT),
                    sana.tap(sana_card, APPROVE_TEXT),
                    zara.tap_data(refusal, data),
                ]

        queries = await asyncio.to_thread(burst)
        texts = [await answer(botapi, q) for q in queries]
        assert batches == [3]
        assert texts == [
            "Approved — e-mailing the supplier.",
            f"Already decided: {PO} is approved.",
            STRANGER_TAP,
        ]
        await all_handled(botapi, run)
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.APPROVED and [d.reviewer_id for d in decisions] == [APPROVER_A]
        assert len(effects) == 1
        assert STRANGER not in await claimers(run)  # the stranger's tap wrote nothing


async def claimers(run) -> set[int]:
    """Everyone whose name the bot keeps (telegram_users)."""
    async with run.store.reading() as tx:
        rows = await tx.conn.execute(select(schema.telegram_users.c.user_id))
        return {row.user_id for row in rows}
