"""What waits for whom, through the real bot: an approver's /pending (a delegate's card "for
Sana" among them), its 🔁 button that sends a card again while the older card keeps working,
the admins' /pending all, and free text, in English and Roman Urdu, as a reply to a card and
as a plain message: never a decision, always an answer with the buttons that are, and kept
as a comment that the other approvers read in /history."""

from __future__ import annotations

from bot.telegram.cards import APPROVE_TEXT, DETAILS_TEXT, REJECT_TEXT
from bot.telegram.orders import NOT_ASKED
from bot.telegram.pending import CARD_AGAIN, NOT_AN_APPROVER, NOTHING_MINE, ONLY_ADMINS, USAGE
from core.approval.policies import Role
from core.drafting.money import format_pkr
from core.jobs.states import State
from core.messaging.pending import COMMENT
from tests.helpers.bot import (
    ADMIN,
    PO,
    YEAR,
    answer,
    cards_out,
    deliveries_done,
    job_and_decisions,
    running_bot,
    said,
    submitted,
)
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0
from tests.helpers.routing import APPROVER_C, CHAIN, cards, team

PO2 = f"PO-{YEAR}-0002"
OTHER_SHEET = b"sku,quantity\nCHG-65W,5\n"
NEVER = "A message never approves a purchase order."
# What approvers write instead of tapping: English and Roman Urdu, yes and no.
FREE_TEXTS = ("ok", "approved", "theek hai", "approve kar do", "reject", "nahi")


async def _second_po(botapi, run) -> None:
    """Bilal sends another sheet: a second PO waits, younger than the first."""
    bilal = botapi.user(REQUESTER)
    bilal.send_document(OTHER_SHEET, "more.csv", "text/csv")
    assert (await said(bilal)).startswith("more.csv accepted; 1 purchase order")


async def _comments(run, po: str) -> list[tuple[str, str]]:
    async with run.store.reading() as tx:
        job = await tx.job_by_po(po)
        trail = await tx.audit(job.id)
    return [(e.actor, e.detail["text"]) for e in trail if e.action == COMMENT]


async def test_pending_lists_a_delegates_card_and_sends_it_again(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, CHAIN)  # Ali and Chand managers, Sana the owner
        sana, chand, ali = (botapi.user(u) for u in (APPROVER_B, APPROVER_C, APPROVER_A))
        sana.send_text(f"/away 3d {APPROVER_C}")
        await said(sana)
        assert "is away until" in (await chand.next_message()).text
        await submitted(botapi, run)
        first = await cards(botapi, run, APPROVER_A, APPROVER_C)
        await answer(botapi, ali.tap(first[APPROVER_A], APPROVE_TEXT))
        held = (await cards(botapi, run, APPROVER_C))[APPROVER_C]  # the owners' card, for Sana
        await _second_po(botapi, run)
        await cards(botapi, run, APPROVER_A, APPROVER_C)  # the second PO's managers' cards

        chand.send_text("/pending")
        listing = await chand.next_message()
        lines = listing.text.splitlines()
        assert lines[0] == (
            "Waiting for your decision: 2 requests, oldest first. 🔁 sends a card again."
        )
        job, _, _ = await job_and_decisions(run)
        assert (
            lines[1] == f"1. {PO} · {format_pkr(job.total_paisa)} · Hall Road Traders · from Bilal"
        )
        assert lines[2].startswith("   waiting ") and " · expires " in lines[2]
        assert lines[3] == "   stage 2 of 2 (owners) · for Sana, who is away"
        assert lines[4].startswith(f"2. {PO2} · ")
        assert lines[6] == "   stage 1 of 2 (managers)"
        assert listing.button_texts == [f"🔁 {PO}", f"🔁 {PO2}"]
        sana.send_text("/pending")  # away: her cards are with Chand
        assert await said(sana) == NOTHING_MINE

        # 🔁 sends the card again, as Chand holds it: for Sana; twice is still one card.
        assert await answer(botapi, chand.tap(listing, f"🔁 {PO}")) == CARD_AGAIN
        assert await answer(botapi, chand.tap(listing, f"🔁 {PO}")) == CARD_AGAIN
        await deliveries_done(run)
        again = await chand.next_message()
        assert again.text.startswith(f"🧾 {PO} — approval needed for Sana")
        assert again.button_texts == [APPROVE_TEXT, REJECT_TEXT, DETAILS_TEXT]
        assert [m for m in chand.messages() if m.message_id > again.message_id] == []

        # The older card still decides; then both show the outcome, and 🔁 says why not.
        assert await answer(botapi, chand.tap(held, APPROVE_TEXT)) == (
            "Approved — e-mailing the supplier."
        )
        await deliveries_done(run)
        for card in (held, again):
            edited = botapi.message(APPROVER_C, card.message_id)
            assert edited.text.startswith("✅ Approved by Ali, Chand for Sana at ")
        late = chand.tap(listing, f"🔁 {PO}")
        assert (await answer(botapi, late)).startswith("Already approved by you at ")
        assert (await job_and_decisions(run))[0].state is State.APPROVED


async def test_pending_all_is_for_admins(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, _card, _sana, _ = await cards_out(botapi, run)
        admin, bilal = botapi.user(ADMIN, "Ayesha"), botapi.user(REQUESTER)
        admin.send_text("/pending all")
        lines = (await said(admin)).splitlines()
        job, _, _ = await job_and_decisions(run)
        assert lines[0] == "Waiting for a decision: 1 request, oldest first."
        assert lines[1] == (
            f"{PO} · {format_pkr(job.total_paisa)} · Hall Road Traders · from Bilal ({REQUESTER})"
        )
        assert lines[2].startswith("  waiting ") and " · expires " in lines[2]
        assert lines[3] == f"  waits for: Ali ({APPROVER_A}); Sana ({APPROVER_B})"
        for who, command, refusal in (
            (ali, "/pending all", ONLY_ADMINS),
            (bilal, "/pending all", ONLY_ADMINS),
            (bilal, "/pending", NOT_AN_APPROVER),
            (admin, "/pending", NOT_AN_APPROVER + " /pending all lists every waiting request."),
            (ali, "/pending everything", USAGE),
        ):
            who.send_text(command)
            assert await said(who) == refusal, command


async def test_free_text_is_never_a_decision_and_is_kept_as_a_comment(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, card, sana, _ = await cards_out(botapi, run)
        job, _, _ = await job_and_decisions(run)
        to_decide = f"{NEVER} To decide {PO} ({format_pkr(job.total_paisa)}), tap a button:"
        for text in FREE_TEXTS:
            for send in (lambda t: ali.reply_to(card, t), ali.send_text):
                send(text)
                got = await ali.next_message()
                assert got.text.splitlines()[0] == to_decide, text
                assert got.text.splitlines()[1] == (
                    f"💬 Your message is kept as a comment on {PO} for the other approvers."
                )
                assert got.button_texts == [APPROVE_TEXT, REJECT_TEXT, DETAILS_TEXT]
        await deliveries_done(run)
        job, decisions, effects = await job_and_decisions(run)
        assert (job.state, decisions, effects) == (State.AWAITING_APPROVAL, [], [])
        expected = [(f"user:{APPROVER_A}", text) for text in FREE_TEXTS for _ in range(2)]
        assert await _comments(run, PO) == expected

        # The other approver reads them in /history; a requester may not.
        sana.send_text(f"/history {PO}")
        history = await said(sana)
        assert f'user:{APPROVER_A}  comment  - -> -  "theek hai"' in history
        assert "last error" not in history
        bilal = botapi.user(REQUESTER)
        bilal.send_text(f"/history {PO}")
        assert await said(bilal) == "Only admins can read the audit trail."

        # The answer's buttons are the card's: they decide.
        assert await answer(botapi, ali.tap(got, APPROVE_TEXT)) == (
            "Approved — e-mailing the supplier."
        )
        ali.reply_to(card, "ok")  # the card of a request decided meanwhile
        late = await ali.next_message()
        assert late.text.startswith(
            f"{NEVER} {PO} ({format_pkr(job.total_paisa)}) no longer waits for your decision: "
            "it is approved."
        )
        assert late.button_texts == []
        ali.send_text("ok")  # nothing waits for him, and no card is quoted: the help
        assert (await said(ali)).startswith("You are registered as approver.")
        await deliveries_done(run)
        bilal.skip_messages()  # the news of the approval
        bilal.send_text("approve kar do")  # a requester: the help for their role
        assert (await said(bilal)).startswith("You are registered as requester.")
        await deliveries_done(run)
        assert len(await _comments(run, PO)) == len(expected) + 1

        # An approver who joins after the decision was never asked: not theirs to read.
        async with run.store.begin() as tx:
            await tx.grant(APPROVER_C, Role.APPROVER, "test", T0)
        chand = botapi.user(APPROVER_C, "Chand", started=True)
        for command, answered in (
            (f"/history {PO}", NOT_ASKED.format(po=PO)),
            ("/history", "Usage: /history PO-2026-0001"),
        ):
            chand.send_text(command)
            assert await said(chand) == answered


async def test_free_text_with_two_waiting_refers_to_the_oldest_or_the_card(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, _first, _sana, _ = await cards_out(botapi, run)
        await _second_po(botapi, run)
        second = (await cards(botapi, run, APPROVER_A, APPROVER_B))[APPROVER_A]
        assert second.text.startswith(f"🧾 {PO2} ")
        async with run.store.reading() as tx:
            totals = {po: (await tx.job_by_po(po)).total_paisa for po in (PO, PO2)}
        ali.send_text("theek hai")
        got = (await said(ali)).splitlines()
        assert got[0] == (
            f"{NEVER} To decide {PO} ({format_pkr(totals[PO])}), the oldest waiting for you, "
            "tap a button:"
        )
        assert got[2] == (
            f"Also waiting for you: {PO2} ({format_pkr(totals[PO2])}). "
            "/pending sends their cards again."
        )
        ali.reply_to(second, "nahi")  # a reply to the younger card refers to it
        got = (await said(ali)).splitlines()
        assert got[0] == f"{NEVER} To decide {PO2} ({format_pkr(totals[PO2])}), tap a button:"
        assert got[2].startswith(f"Also waiting for you: {PO} (")
        await deliveries_done(run)  # the comment is written after the answer
        assert await _comments(run, PO) == [(f"user:{APPROVER_A}", "theek hai")]
        assert await _comments(run, PO2) == [(f"user:{APPROVER_A}", "nahi")]
        async with run.store.reading() as tx:
            assert [await tx.decisions((await tx.job_by_po(po)).id) for po in (PO, PO2)] == [[], []]
