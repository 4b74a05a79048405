"""Routing through the real bot: an imported policy's stages go in order, each to its group
only; a committee needs N different members; one person counts once; the requester hears
which group is missing; every approval records the policy version, rule and stage."""

from __future__ import annotations

from bot.telegram.cards import APPROVE_TEXT, REJECT_TEXT
from bot.telegram.notices import NoticeRunner
from bot.words import reports
from core.approval.approval_policy import import_policy
from core.approval.policies import Role
from core.jobs.jobs import Stamp
from core.jobs.states import State
from core.people import people
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
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0
from tests.helpers.routing import APPROVER_C, CHAIN, COMMITTEE, DEFAULT, GROUPS, cards, team


async def test_a_two_stage_chain_goes_in_order_each_stage_to_its_group(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        version = (await team(botapi, run, CHAIN))["version"]
        await submitted(botapi, run)
        first = await cards(botapi, run, APPROVER_A, APPROVER_C)
        assert "Stage 1 of 2: waiting for Managers" in first[APPROVER_A].text
        assert "your turn" not in first[APPROVER_A].text
        assert botapi.user(APPROVER_B).messages() == []  # the owners wait their turn
        sana = botapi.user(APPROVER_B)
        ali, chand = botapi.user(APPROVER_A), botapi.user(APPROVER_C)

        done = ali.tap(first[APPROVER_A], APPROVE_TEXT)
        assert await answer(botapi, done) == (
            "Recorded. Stage 1 of 2 is complete; it now waits for owners."
        )
        late = chand.tap(first[APPROVER_C], APPROVE_TEXT)
        assert await answer(botapi, late) == "Not your turn: stage 2 waits for owners."
        await deliveries_done(run)  # the managers' cards are edited: their stage is over
        mine = botapi.message(APPROVER_A, first[APPROVER_A].message_id)
        assert mine.text.startswith("🕓 You approved at ") and mine.buttons == []
        assert "🪜 Stage 2 of 2: waiting for Owners" in mine.text
        other = botapi.message(APPROVER_C, first[APPROVER_C].message_id)
        assert other.text.startswith("🪜 Stage 2 of 2: waiting for Owners: not your group's turn")
        assert other.buttons == []

        second = await cards(botapi, run, APPROVER_B)
        assert "Stage 2 of 2: waiting for Owners" in second[APPROVER_B].text
        assert "👉 It's your turn: Stage 1 is complete." in second[APPROVER_B].text
        final = sana.tap(second[APPROVER_B], APPROVE_TEXT)
        assert await answer(botapi, final) == "Approved — e-mailing the supplier."
        await deliveries_done(run)
        for chat, card in ((APPROVER_A, first[APPROVER_A]), (APPROVER_B, second[APPROVER_B])):
            assert botapi.message(chat, card.message_id).text.startswith("✅ Approved by ")

        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.APPROVED and len(effects) == 1
        assert [(d.reviewer_id, d.stage, d.policy_version, d.rule) for d in decisions] == [
            (APPROVER_A, 0, version, "chain"),
            (APPROVER_B, 1, version, "chain"),
        ]
        async with run.store.reading() as tx:
            detail = await reports.job_detail(tx, job, "shop.example")
        assert [(a["stage"], a["policy_version"], a["rule"]) for a in detail["approvals"]] == [
            (1, version, "chain"),
            (2, version, "chain"),
        ]
        assert detail["approvals"][1]["policy_basis"] == (
            f"policy {version}, rule chain, stage 2 of 2: 1 of owners"
        )


async def test_a_committee_needs_two_different_managers_and_a_no_ends_it(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, COMMITTEE)
        await submitted(botapi, run)
        got = await cards(botapi, run, APPROVER_A, APPROVER_C)
        ali, chand = botapi.user(APPROVER_A), botapi.user(APPROVER_C)
        first = ali.tap(got[APPROVER_A], APPROVE_TEXT)
        assert await answer(botapi, first) == "Needs a second approver. Your approval is recorded."
        again = ali.tap(got[APPROVER_A], APPROVE_TEXT)
        assert (await answer(botapi, again)).startswith("Already approved by you at ")
        assert (await job_and_decisions(run))[0].state is State.AWAITING_APPROVAL
        second = chand.tap(got[APPROVER_C], APPROVE_TEXT)
        assert await answer(botapi, second) == "Approved — e-mailing the supplier."
        assert (await job_and_decisions(run))[0].state is State.APPROVED


async def test_a_two_of_three_committee_needs_two_of_its_three_members(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, COMMITTEE)
        # Sana joins the managers: a committee of three, two of whom must approve.
        await people.set_groups(run.store, APPROVER_B, ["managers"], Stamp("test", T0), DEFAULT)
        await submitted(botapi, run)
        got = await cards(botapi, run, APPROVER_A, APPROVER_B, APPROVER_C)
        assert all("👥 0 of 2 approvals" in card.text for card in got.values())
        ali, sana, chand = (botapi.user(u) for u in (APPROVER_A, APPROVER_B, APPROVER_C))
        assert await answer(botapi, sana.tap(got[APPROVER_B], APPROVE_TEXT)) == (
            "Needs a second approver. Your approval is recorded."
        )
        await deliveries_done(run)
        for other in (APPROVER_A, APPROVER_C):  # the others' cards count the first approval
            assert "👥 1 of 2 approvals" in botapi.message(other, got[other].message_id).text
        assert await answer(botapi, chand.tap(got[APPROVER_C], APPROVE_TEXT)) == (
            "Approved — e-mailing the supplier."
        )
        late = ali.tap(got[APPROVER_A], APPROVE_TEXT)  # the third member, too late to count
        assert (await answer(botapi, late)).startswith("Already decided: ")
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.APPROVED and len(effects) == 1
        assert sorted(d.reviewer_id for d in decisions) == [APPROVER_B, APPROVER_C]


async def test_a_manager_cannot_reject_once_it_is_the_owners_turn(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, CHAIN)
        await submitted(botapi, run)
        got = await cards(botapi, run, APPROVER_A, APPROVER_C)
        ali, chand = botapi.user(APPROVER_A), botapi.user(APPROVER_C)
        assert (await answer(botapi, ali.tap(got[APPROVER_A], APPROVE_TEXT))).startswith(
            "Recorded. Stage 1 of 2 is complete"
        )
        no = chand.tap(got[APPROVER_C], REJECT_TEXT)
        assert await answer(botapi, no) == "Not your turn: stage 2 waits for owners."
        assert (await job_and_decisions(run))[0].state is State.AWAITING_APPROVAL


async def test_a_group_with_nobody_in_it_is_named_to_the_requester_and_the_admins(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        policy = GROUPS + '[[rules]]\nname = "owners only"\nstages = [{ group = "owners" }]\n'
        assert (await import_policy(run.store, policy, T0, "cli:test")).created
        botapi.user(ADMIN, "Ayesha", started=True)
        async with run.store.begin() as tx:
            await tx.met(ADMIN, "Ayesha", T0, started=True)
        await submitted(botapi, run)
        requester = botapi.user(REQUESTER)
        reply = requester.messages()[-1].text
        assert "Note: nobody in group owners can approve yet" in reply
        await deliveries_done(run)
        runner = NoticeRunner(run.store, run.app.bot, run.settings)
        await runner.run_once()  # fan the alerts out to the admins
        await runner.run_once()
        admin = botapi.user(ADMIN)
        # The import's alert and the PO's, in either order.
        imported, alert = sorted([(await admin.next_message()).text for _ in range(2)],
                                 key=lambda text: not text.startswith("⚠️ Policy "))  # fmt: skip
        assert imported.startswith("⚠️ Policy ") and "for Owners yet" in imported
        assert alert.startswith(f"⚠️ {PO} is waiting for group owners, which has nobody")


async def test_admins_see_and_set_groups_in_chat(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, CHAIN)
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        admin.send_text("/groups")
        assert (await said(admin)).splitlines() == [
            f"managers: Managers: Ali ({APPROVER_A}), Chand ({APPROVER_C})",
            f"owners: Owners: Sana ({APPROVER_B})",
        ]
        admin.send_text(f"/group {APPROVER_C} owners managers")
        assert await said(admin) == f"User {APPROVER_C} is in: managers, owners. (joined owners)"
        admin.send_text(f"/group {REQUESTER} owners")
        assert await said(admin) == (
            f"Not changed: user {REQUESTER} is not an approver: grant the role first."
        )
        admin.send_text("/group 5 board")
        assert (await said(admin)).startswith("Not changed: user 5 is not an approver")
        admin.send_text(f"/group {APPROVER_C} board")
        assert await said(admin) == (
            "Not changed: no group board in the approval policy in force (managers, owners)."
        )
        admin.send_text("/invite approver owners")
        assert (await said(admin)).startswith(
            "Forward this link to the new approver of group owners."
        )
        admin.send_text("/invite approver board")
        assert await said(admin) == (
            "No invitation made: no group board in the approval policy in force (managers, owners)."
        )
        sana = botapi.user(APPROVER_B)
        sana.send_text(f"/group {APPROVER_B} managers")
        assert await said(sana) == "Only admins can set groups."


async def test_a_stage_nobody_left_can_complete_is_the_admins_news_at_once(botapi, db_url, store):
    """Two managers must approve; the managers are Ali and the requester, who may not approve
    their own request: the admins hear at once, naming the PO, the stage and why, and once
    only, though Ali's approval leaves nobody at all who may give the second."""
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, COMMITTEE)
        async with run.store.begin() as tx:
            await tx.grant(REQUESTER, Role.APPROVER, "test", T0)
            await tx.met(ADMIN, "Ayesha", T0, started=True)
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        who = Stamp("test", T0)
        await people.set_groups(run.store, REQUESTER, ["managers"], who, DEFAULT)
        await people.set_groups(run.store, APPROVER_C, [], who, DEFAULT)  # Chand leaves
        await submitted(botapi, run)
        got = await cards(botapi, run, APPROVER_A)
        await NoticeRunner(run.store, run.app.bot, run.settings).run_once()  # the admins' copies
        alert = (await admin.next_message()).text
        assert alert.splitlines() == [
            f"⚠️ {PO} cannot be approved as things stand: stage 1 of 1 needs 2 more approvals "
            "from group managers; people left who may give one: 1.",
            "Group managers has 2 approvers in it.",
            "The requester is one of them, and nobody approves their own request.",
            "Put another approver in it with /group ID managers; until then it waits, and it "
            "expires at its deadline.",
        ]
        ali = botapi.user(APPROVER_A)
        first = ali.tap(got[APPROVER_A], APPROVE_TEXT)
        assert await answer(botapi, first) == "Needs a second approver. Your approval is recorded."
        await deliveries_done(run)
        await NoticeRunner(run.store, run.app.bot, run.settings).run_once()
        await NoticeRunner(run.store, run.app.bot, run.settings).run_once()
        assert len(admin.messages()) == 1  # told once, not at every change
