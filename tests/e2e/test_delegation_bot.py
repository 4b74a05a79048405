"""Delegation through the real bot: /away hands an approver's cards to another approver, who
decides for them ("for Sana" on the card, the audit and /history); the refusals; a delegator
and their delegate count once; a delegate never approves the delegator's own request; /back
takes the cards back, and the delegate's card stops deciding."""

from __future__ import annotations

from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.notices import NoticeRunner
from bot.words import reports
from core.approval.policies import Role
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
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0
from tests.helpers.routing import APPROVER_C, CHAIN, COMMITTEE, cards, team

OTHER_SHEET = b"sku,quantity\nCHG-65W,5\n"  # Ali's own restock sheet


async def test_a_delegate_decides_for_the_owner_away_and_the_trail_says_so(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, CHAIN)  # Ali and Chand managers, Sana the owner
        sana, chand, ali = (botapi.user(u) for u in (APPROVER_B, APPROVER_C, APPROVER_A))
        sana.send_text(f"/away 3d {APPROVER_C}")
        set_ = await said(sana)
        assert set_.startswith("You are away until ")
        assert f"Chand ({APPROVER_C}) gets your approval cards, waiting and new" in set_
        told = await chand.next_message()
        assert told.text.startswith(f"Sana ({APPROVER_B}) is away until ")

        await submitted(botapi, run)
        first = await cards(botapi, run, APPROVER_A, APPROVER_C)
        assert await answer(botapi, ali.tap(first[APPROVER_A], APPROVE_TEXT)) == (
            "Recorded. Stage 1 of 2 is complete; it now waits for owners."
        )
        # The owners' stage: Sana is away, so her card goes to Chand, marked for her.
        held = await cards(botapi, run, APPROVER_C)
        card = held[APPROVER_C]
        assert card.text.startswith(f"🧾 {PO} — approval needed for Sana")
        assert "🤝 Sana is away: your decision counts as theirs" in card.text
        assert sana.messages() == [m for m in sana.messages() if "approval needed" not in m.text]

        done = chand.tap(card, APPROVE_TEXT)
        assert await answer(botapi, done) == "Approved — e-mailing the supplier."
        await deliveries_done(run)
        assert botapi.message(APPROVER_C, card.message_id).text.startswith(
            "✅ Approved by Ali, Chand for Sana at "
        )
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.APPROVED and len(effects) == 1
        assert [(d.reviewer_id, d.on_behalf_of, d.stage) for d in decisions] == [
            (APPROVER_A, None, 0),
            (APPROVER_C, APPROVER_B, 1),
        ]
        async with run.store.reading() as tx:
            detail = await reports.job_detail(tx, job, "shop.example")
            approvals = [e for e in await tx.audit(job.id) if e.action == "approve"]
        assert [(a["reviewer"], a["for"], a["for_id"]) for a in detail["approvals"]] == [
            ("Ali", None, None),
            ("Chand", "Sana", APPROVER_B),
        ]
        assert approvals[-1].detail["for"] == APPROVER_B
        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text(f"/history {PO}")
        assert f"approved by Chand ({APPROVER_C}) for Sana ({APPROVER_B})" in await said(admin)


async def test_delegations_that_cannot_be_are_refused_with_the_reason(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, CHAIN)
        sana, chand, ali = (botapi.user(u) for u in (APPROVER_B, APPROVER_C, APPROVER_A))
        requester, admin = botapi.user(REQUESTER, "Bilal"), botapi.user(ADMIN, "Ayesha")
        for who, command, refusal in (
            (sana, "/away", "Usage: /away UNTIL DELEGATE_ID"),
            (sana, f"/away tomorrow {APPROVER_C}", "Not set: 'tomorrow' is not a date"),
            (sana, f"/away 2020-01-01 {APPROVER_C}", "Not set: that time has passed"),
            (sana, f"/away 200d {APPROVER_C}", "Not set: a delegation lasts at most 90 days"),
            # The calendar's last day once crashed the handler; now it is refused in words.
            (sana, f"/away 9999-12-31 {APPROVER_C}", "Not set: a delegation lasts at most 90"),
            (admin, f"/away {APPROVER_A} 9999-12-31 {APPROVER_C}", "Not set: a delegation "),
            (sana, f"/away 3d {APPROVER_B}", "Not set: nobody delegates to themselves."),
            (sana, f"/away 3d {REQUESTER}", f"Not set: user {REQUESTER} (the delegate) is not"),
            (requester, f"/away 3d {APPROVER_C}", f"Not set: user {REQUESTER} (the one away)"),
            (ali, f"/away {APPROVER_B} 3d {APPROVER_C}", "Only admins can set someone else's"),
            (sana, "/back", f"Nothing to end: user {APPROVER_B} has no delegation to end."),
        ):
            who.send_text(command)
            assert (await said(who)).startswith(refusal), command
        sana.send_text(f"/away 3d {APPROVER_C}")
        assert (await said(sana)).startswith("You are away until ")
        assert (await chand.next_message()).text.startswith("Sana (2002) is away until ")
        chand.send_text(f"/away 1d {APPROVER_B}")  # back to the one who handed over to them
        assert await said(chand) == (
            f"Not set: user {APPROVER_B} has delegated to user {APPROVER_C}: no delegation back."
        )
        admin.send_text("/users")
        listing = (await said(admin)).splitlines()
        [line] = [x for x in listing if x.startswith(f"{APPROVER_B}  Sana  approver")]
        assert "groups: owners  away until " in line and line.endswith(f": {APPROVER_C} decides")
        assert f"{APPROVER_A}  Ali  approver  groups: managers" in listing
        admin.send_text(f"/away {APPROVER_A} 2026-12-31 {APPROVER_C}")  # an admin, for Ali
        assert (await said(admin)).startswith(f"Ali ({APPROVER_A}) is away until 01 Jan 2027")
        admin.send_text(f"/back {APPROVER_A}")
        assert (await said(admin)).startswith(f"Delegation ended: Ali ({APPROVER_A}) decides")
        async with run.store.reading() as tx:
            trail = [e.action for e in await tx.audit(None)]
        assert trail.count("delegate") == 2 and trail.count("end_delegation") == 1


async def test_a_delegator_and_delegate_count_once_and_never_on_their_own_request(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, COMMITTEE)  # two different managers: Ali and Chand
        ali, chand = botapi.user(APPROVER_A), botapi.user(APPROVER_C)
        await submitted(botapi, run)
        got = await cards(botapi, run, APPROVER_A, APPROVER_C)
        ali.send_text(f"/away 2d {APPROVER_C}")
        assert (await said(ali)).startswith("You are away until ")
        assert "is away until" in (await chand.next_message()).text
        first = chand.tap(got[APPROVER_C], APPROVE_TEXT)
        assert await answer(botapi, first) == "Needs a second approver. Your approval is recorded."
        # Ali and Chand are one person on this request, whoever taps.
        again = ali.tap(got[APPROVER_A], APPROVE_TEXT)
        assert (await answer(botapi, again)).startswith("Already counted: you and the approver")
        assert (await job_and_decisions(run))[0].state is State.AWAITING_APPROVAL

        # Ali asks for a PO of his own while Chand acts for him: Chand gets no card of it,
        # and Ali hears that the managers' stage has nobody else to ask.
        async with run.store.begin() as tx:
            await tx.grant(APPROVER_A, Role.REQUESTER, "test", T0)
        ali.send_document(OTHER_SHEET, "mine.csv", "text/csv")
        reply = await said(ali)
        assert reply.startswith("mine.csv accepted; 1 purchase order")
        assert "Note: nobody in group managers can approve yet" in reply
        await deliveries_done(run)
        await NoticeRunner(run.store, run.app.bot, run.settings).run_once()
        sent = [m.message_id for m in chand.messages() if "approval needed" in m.versions[0].text]
        assert sent == [got[APPROVER_C].message_id]  # the first PO's card only


async def test_back_hands_the_cards_back_and_the_delegates_card_stops_deciding(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, CHAIN)
        sana, chand, ali = (botapi.user(u) for u in (APPROVER_B, APPROVER_C, APPROVER_A))
        sana.send_text(f"/away 12h {APPROVER_C}")
        await said(sana)
        assert "is away until" in (await chand.next_message()).text
        await submitted(botapi, run)
        first = await cards(botapi, run, APPROVER_A, APPROVER_C)
        await answer(botapi, ali.tap(first[APPROVER_A], APPROVE_TEXT))
        held = (await cards(botapi, run, APPROVER_C))[APPROVER_C]
        sana.send_text("/back")
        assert await said(sana) == (
            f"Delegation ended: Sana ({APPROVER_B}) decides again, and gets the cards still "
            f"waiting; Chand ({APPROVER_C})'s cards for them no longer decide."
        )
        back = (await cards(botapi, run, APPROVER_B))[APPROVER_B]
        assert "for Sana" not in back.text
        await deliveries_done(run)
        assert botapi.message(APPROVER_C, held.message_id).buttons == []
        # A phone that was offline while the card was edited still shows the old buttons.
        late = chand.tap_data(held, held.button(APPROVE_TEXT).callback_data)
        assert (
            await answer(botapi, late) == "Not counted: you no longer act for Sana; they are back."
        )
        assert (await job_and_decisions(run))[0].state is State.AWAITING_APPROVAL
        assert await answer(botapi, sana.tap(back, APPROVE_TEXT)) == (
            "Approved — e-mailing the supplier."
        )
