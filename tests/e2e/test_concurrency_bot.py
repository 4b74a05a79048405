"""One person's slow request does not hold up everyone else's: updates are handled side by side."""

from __future__ import annotations

import pytest

from bot.telegram.cards import APPROVE_TEXT, DETAILS_TEXT
from core.jobs.states import State
from tests.helpers.bot import answer, cards_out, job_and_decisions, running_bot, timed
from tests.helpers.factories import APPROVER_A, REQUESTER

# waits on real time: seconds of sweeps, pacing and timeouts; answers are timed
pytestmark = [pytest.mark.slow, pytest.mark.timed]

# Longer than any answer may take here, shorter than PTB's timeouts for an upload.
STALL = 2.0


@timed
async def test_a_tap_is_answered_at_once_while_another_approvers_details_upload_is_slow(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, sana, sana_card = await cards_out(botapi, run)
        botapi.stall_next("sendDocument", STALL)  # Telegram slow to take Ali's CSV
        details = ali.tap(ali_card, DETAILS_TEXT)
        await answer(botapi, details)
        await botapi.wait_for(lambda: botapi.calls_to("sendDocument"))  # the upload is under way
        approve = sana.tap(sana_card, APPROVE_TEXT)
        assert await answer(botapi, approve) == "Approved — e-mailing the supplier."
        assert botapi.callback_answer(approve).age < 1.0
        assert not botapi.documents(APPROVER_A)  # answered while Ali's upload was still stalled
        await botapi.wait_for(lambda: botapi.documents(APPROVER_A) or None, timeout=STALL + 5)
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.APPROVED and len(decisions) == 1


@timed
async def test_a_tap_is_answered_at_once_while_a_requesters_sheet_is_slow_to_download(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        _ali, _ali_card, sana, sana_card = await cards_out(botapi, run)
        requester = botapi.user(REQUESTER, "Bilal")
        requester.skip_messages()
        botapi.stall_next("getFile", STALL)  # a big file, a slow link
        requester.send_document(b"sku,quantity\nTEA-500G,3\n", "tea.csv", "text/csv")
        await botapi.wait_for(lambda: len(botapi.calls_to("getFile")) == 2)  # the first: cards_out
        approve = sana.tap(sana_card, APPROVE_TEXT)
        assert await answer(botapi, approve) == "Approved — e-mailing the supplier."
        assert botapi.callback_answer(approve).age < 1.0
        reply = await requester.next_message(timeout=STALL + 5)
        while "tea.csv" not in reply.text:  # the news of the approval may come first
            reply = await requester.next_message(timeout=STALL + 5)
        assert reply.text.startswith("tea.csv accepted; 1 purchase order")
