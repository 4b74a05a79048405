"""Approvers who join late, end to end: a sheet sent while nobody could approve it reaches the
approver an admin invites afterwards, who approves it from that card; and an admin's links die
with their role."""

from __future__ import annotations

from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.notices import NoticeRunner
from bot.words.refusals import REFUSAL_TEXTS
from core.approval.policies import Role
from core.errors import Refusal
from core.jobs.states import State
from tests.helpers.bot import (
    ADMIN,
    PO,
    answer,
    deliveries_done,
    job_and_decisions,
    running_bot,
    said,
    submitted,
)
from tests.helpers.factories import REQUESTER, T0

NEWCOMER, LATER, PROMOTED = 5001, 5002, 5003
PREFIX_OF_LINK = "?start="


async def invite_link(admin, role: str) -> str:
    """The code of the invitation link an admin's /invite gets."""
    admin.send_text(f"/invite {role}")
    return (await said(admin)).splitlines()[-1].partition(PREFIX_OF_LINK)[2]


async def test_an_approver_invited_later_gets_the_waiting_card_and_approves(botapi, db_url):
    async with running_bot(botapi, db_url) as run:
        async with run.store.begin() as tx:
            await tx.grant(REQUESTER, Role.REQUESTER, "test", T0)
        await submitted(botapi, run)  # nobody holds the approver role yet
        notices = NoticeRunner(run.store, run.app.bot, run.settings)
        await notices.run_once()
        async with run.store.begin() as tx:
            assert [
                n.kind.value
                for n in await tx.notices_for((await tx.job_by_po(PO)).id)
                if n.kind.value == "card"
            ] == []

        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text("/start")
        await said(admin)
        code = await invite_link(admin, "approver")
        newcomer = botapi.user(NEWCOMER, "Nadia")
        newcomer.send_text(f"/start {code}")
        assert "registered as approver" in await said(newcomer)

        # The card owed when the role was granted, and the alert that nobody could be asked,
        # which waited until the admin had started the bot.
        assert await notices.run_once() == 2
        assert "no approver is registered" in await said(admin)
        card = await newcomer.next_message()
        assert PO in card.text
        query = newcomer.tap(card, APPROVE_TEXT)
        assert await answer(botapi, query) == "Approved — e-mailing the supplier."
        await deliveries_done(run)
        job, decisions, _effects = await job_and_decisions(run)
        assert job.state is State.APPROVED
        assert [(d.reviewer_id, d.verdict.value) for d in decisions] == [(NEWCOMER, "approve")]


async def test_a_revoked_admins_invitation_link_is_refused(botapi, db_url):
    async with running_bot(botapi, db_url) as run:
        async with run.store.begin() as tx:
            await tx.met(PROMOTED, "Omar", T0, started=True)
            await tx.grant(PROMOTED, Role.ADMIN, "test", T0)
        promoted = botapi.user(PROMOTED, "Omar", started=True)
        code = await invite_link(promoted, "requester")
        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text(f"/revoke {PROMOTED}")
        assert (await said(admin)).startswith(f"User {PROMOTED} lost: admin.")

        later = botapi.user(LATER, "Kamran")
        later.send_text(f"/start {code}")
        assert await said(later) == REFUSAL_TEXTS[Refusal.INVITE_WITHDRAWN]
        async with run.store.begin() as tx:
            assert await tx.roles(LATER) == frozenset()
