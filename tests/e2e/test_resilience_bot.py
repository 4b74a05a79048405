"""A flaky link to Telegram: lost polls, repeated updates, answers that come too late and edits
that change nothing; none of it loses or doubles a decision or a purchase order."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from bot.clock import utcnow
from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.notices import NoticeRunner
from core.approval.policies import Role
from core.jobs.notices import NoticeStatus, card_edits_for
from core.jobs.states import State
from tests.helpers.bot import (
    PO,
    SHEET,
    cards_out,
    deliveries_done,
    job_and_decisions,
    running_bot,
    said,
    timed,
    with_terms,
)
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0

# waits on real time: seconds of sweeps, pacing and timeouts; answers are timed
pytestmark = [pytest.mark.slow, pytest.mark.timed]

SECOND_PO = PO[:-1] + "2"
TWO_SUPPLIERS = b"sku,quantity,notes\nCBL-USBC-1M,20,\nTEA-500G,3,for Eid\n"


async def test_polling_survives_a_lost_connection_to_telegram(botapi, db_url, store):
    async with running_bot(botapi, db_url):
        botapi.fail_next("getUpdates", times=2, status=502)  # nginx in front of a dead API
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_text("/help")
        assert "You are registered as requester." in await said(requester)
        failed = [c for c in botapi.calls_to("getUpdates") if c.status == 502]
        assert len(failed) == 2


async def test_the_same_sheet_update_delivered_three_times_makes_one_set_of_pos(
    botapi, db_url, store, caplog
):
    caplog.set_level(logging.INFO, logger="bot.telegram.app")
    await with_terms(store)
    async with running_bot(botapi, db_url) as run:
        requester = botapi.user(REQUESTER, "Bilal")
        update_id = requester.send_document(SHEET, "restock.csv", "text/csv").update_id
        assert (await said(requester)).startswith("restock.csv accepted; 1 purchase order")
        botapi.redeliver(update_id)
        botapi.redeliver(update_id)
        dropped = f"update {update_id} delivered again; ignored"  # handled side by side:
        await botapi.wait_for(lambda: caplog.messages.count(dropped) == 2)  # the log shows it
        async with run.store.begin() as tx:
            jobs = await tx.jobs_in_states(set(State))
        assert [j.po_number for j in jobs] == [PO]
        assert sum("accepted" in (m.text or "") for m in requester.messages()) == 1


async def test_a_tap_answered_too_late_still_decides_once_and_edits_the_cards(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, sana_card = await cards_out(botapi, run)
        query = ali.tap(ali_card, APPROVE_TEXT)
        botapi.advance(20)  # the phone waited too long: Telegram refuses the answer
        await botapi.wait_for(lambda: botapi.message(APPROVER_B, sana_card.message_id).edited)
        await deliveries_done(run)  # Ali's card too
        assert botapi.callback_answer(query) is None  # the answer was refused, not recorded
        refused = [c for c in botapi.calls_to("answerCallbackQuery") if c.status == 400]
        assert refused and "query is too old" in refused[0].description
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.APPROVED and len(decisions) == 1 and len(effects) == 1
        assert botapi.message(APPROVER_A, ali_card.message_id).text.startswith("✅ Approved by Ali")


async def test_an_edit_that_changes_nothing_counts_as_done(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        ali.tap(ali_card, APPROVE_TEXT)
        await botapi.wait_for(lambda: botapi.message(APPROVER_A, ali_card.message_id).edited)
        await deliveries_done(run)  # every edit the tap owed is done before the pass below
        async with run.store.begin() as tx:  # owed once more, as after a crash before the mark
            job = await tx.job_by_po(PO)
            again = card_edits_for(replace(job, version=job.version + 1), utcnow())
            await tx.insert_notice(again)
        before = len(botapi.message(APPROVER_A, ali_card.message_id).versions)
        assert await NoticeRunner(run.store, run.app.bot, run.settings).run_once() == 1
        unchanged = [c for c in botapi.calls_to("editMessageText") if c.status == 400]
        assert unchanged and all("not modified" in c.description for c in unchanged)
        assert len(botapi.message(APPROVER_A, ali_card.message_id).versions) == before
        async with run.store.begin() as tx:
            [done] = [n for n in await tx.notices_for(job.id) if n.key == again.key]
        assert done.status is NoticeStatus.SENT


@timed
async def test_taps_are_answered_at_once_while_many_cards_are_being_edited(botapi, db_url, store):
    many = range(7000, 7040)  # forty approvers, Telegram's pace enforced
    async with running_bot(botapi, db_url) as run:
        async with run.store.begin() as tx:
            for user_id in many:
                await tx.grant(user_id, Role.APPROVER, "test", T0)
                await tx.met(user_id, f"A{user_id}", T0, started=True)
        approvers = [botapi.user(user_id, f"A{user_id}", started=True) for user_id in many]
        await with_terms(run.store)
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_document(TWO_SUPPLIERS, "restock.csv", "text/csv")
        assert (await said(requester)).startswith("restock.csv accepted; 2 purchase orders")
        notices = NoticeRunner(run.store, run.app.bot, run.settings)
        while await notices.run_once():
            pass
        botapi.enable_flood_control()
        first, second, last = approvers[0], approvers[1], approvers[-1]
        tapped = first.tap(card(first, PO), APPROVE_TEXT)  # forty edits follow this decision
        await botapi.wait_for(lambda: botapi.callback_answer(tapped))
        then = second.tap(card(second, SECOND_PO), APPROVE_TEXT)  # meanwhile, another PO
        answer = await botapi.wait_for(lambda: botapi.callback_answer(then))
        assert answer.text == "Approved — e-mailing the supplier."
        assert answer.age < 1.0
        for po in (PO, SECOND_PO):  # and every card is edited all the same
            shown = card(last, po)
            await botapi.wait_for(
                lambda m=shown: botapi.message(m.chat_id, m.message_id).edited, 10
            )


def card(user, po: str):
    """The user's approval card for `po`."""
    [found] = [m for m in user.messages() if f"{po} — approval needed" in m.versions[0].text]
    return found
