"""Approve with changes (core.purchasing.edits), as the Mini App makes it, seen through the real
bot: the
requester hears who changed which line, the old version's cards stop deciding, and the trimmed
PO is the one that goes out."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.notices import NoticeRunner
from core.jobs.states import State
from core.purchasing.edits import Edit, LineChange, approve_with_changes
from tests.helpers.bot import PO, answer, cards_out, deliveries_done, job_and_decisions, said
from tests.helpers.bot import running_bot as bot
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER


async def test_a_trimmed_po_is_approved_and_the_requester_told_what_changed(botapi, db_url, store):
    async with bot(botapi, db_url) as run:
        _, _, sana, sana_card = await cards_out(botapi, run)
        job, _, _ = await job_and_decisions(run)
        assert job.draft_version is not None and job.draft_hash is not None
        edit = Edit(PO, APPROVER_A, job.draft_version, job.draft_hash, (LineChange(1, 2),))
        now = datetime.now(UTC)
        edited = await approve_with_changes(run.store, edit, now, run.settings.rules())
        assert edited.job.state is State.APPROVED and edited.job.draft_version == 2

        await NoticeRunner(run.store, run.app.bot, run.settings).run_once()
        bilal = botapi.user(REQUESTER)
        # Two messages owed at one instant: the runner may deliver them in either order.
        told = sorted(
            [await said(bilal), await said(bilal)], key=lambda text: "changed" not in text
        )
        news, approved = told
        assert news.splitlines()[:2] == [
            f"Ali changed {PO} before approving it:",
            "Line 1 (CHG-65W): 3 → 2",
        ]
        assert news.splitlines()[2].startswith("New total: Rs ")
        assert approved == f"{PO} was approved; the e-mail to the supplier goes out now."
        # Version 1's cards no longer decide anything: no buttons, and a tap is refused.
        assert botapi.message(APPROVER_B, sana_card.message_id).buttons == []
        stale = sana_card.button(APPROVE_TEXT).callback_data  # a phone still showing v1
        late = sana.tap_data(sana_card, stale)
        assert await answer(botapi, late) == f"Already decided: {PO} is approved."
        await deliveries_done(run)
        job, decisions, [send] = await job_and_decisions(run)
        assert [(d.reviewer_id, d.draft_version) for d in decisions] == [(APPROVER_A, 2)]
        assert send.draft_version == 2 and send.draft_hash == job.draft_hash
