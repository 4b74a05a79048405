"""A whole approval in Urdu through the real bot: an approver and a requester choose اردو with
/language; the requester's sheet reply (its row problems too), the approver's card (its flags
too), the answers to their taps (a refusal too), the requester's news and /history are in
Urdu, with no English sentence outside an isolated value, while an approver who chose nothing
reads English throughout."""

from __future__ import annotations

from bot.files.limits import NOT_A_SHEET
from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.notices import NoticeRunner
from bot.telegram.pending import NOT_AN_APPROVER
from bot.words.i18n import Language, isolated, translator
from core.approval.policies import Role
from core.drafting.money import format_pkr
from core.jobs.states import State
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.bot import (
    ADMIN,
    PO,
    answer,
    deliveries_done,
    job_and_decisions,
    running_bot,
    said,
)
from tests.helpers.bot import with_terms as terms_in_force
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0
from tests.helpers.routing import APPROVER_C, CHAIN, cards, team
from tests.helpers.store import DATA_KEY
from tests.helpers.urdu import english_heard, said_to

URDU = "اردو"
SHEET_NAME = "restock.csv"


async def choose_urdu(botapi, user) -> int:
    """/language, then the اردو button: the choice is confirmed in Urdu, on the tap and in the
    message that offered it; the offer's message id (what came before it was English)."""
    user.send_text("/language")
    offer = await user.next_message()
    assert offer.text == "Choose the language I write to you in:"
    assert offer.button_texts == ["English", URDU]
    confirmed = f"اب سے آپ کو پیغامات {isolated(URDU)} میں ملیں گے۔"
    assert await answer(botapi, user.tap(offer, URDU)) == confirmed
    await botapi.wait_for(lambda: botapi.message(user.id, offer.message_id).text == confirmed)
    return offer.message_id


async def test_a_whole_approval_in_urdu_beside_an_english_approver(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        sana = botapi.user(APPROVER_B, "Sana", started=True)
        bilal = botapi.user(REQUESTER, "Bilal", started=True)
        async with run.store.begin() as tx:
            for person, name in ((ali, "Ali"), (sana, "Sana"), (bilal, "Bilal")):
                await tx.met(person.id, name, T0, started=True)
        chose = {APPROVER_A: await choose_urdu(botapi, ali)}
        chose[REQUESTER] = await choose_urdu(botapi, bilal)

        bilal.send_text("/help")
        assert (await said(bilal)).startswith(f"آپ بطور {isolated('درخواست گزار')} رجسٹرڈ ہیں۔")
        await terms_in_force(run.store)
        bilal.send_document(b"sku,quantity\nCHG-65W,3\n", SHEET_NAME, "text/csv")
        reply = (await said(bilal)).splitlines()
        assert reply[0] == (
            f"{isolated(SHEET_NAME)} قبول ہو گئی؛ {isolated('1')} پرچیز آرڈر کا ڈرافٹ بنا کر "
            "منظوری کے لیے بھیج دیا گیا:"
        )
        assert reply[1].startswith(isolated(PO)) and f"{isolated('1')} لائن" in reply[1]

        assert await NoticeRunner(run.store, run.app.bot, run.settings).run_once() == 2
        urdu_card, english_card = await ali.next_message(), await sana.next_message()
        assert urdu_card.text.startswith(f"🧾 {isolated(PO)} — منظوری درکار")
        assert f"درخواست گزار: {isolated('Bilal')}" in urdu_card.text
        assert urdu_card.button_texts == ["✅ منظور", "❌ مسترد", "📄 تفصیل"]
        assert english_card.text.startswith(f"🧾 {PO} — approval needed")
        assert english_card.button_texts == ["✅ Approve", "❌ Reject", "📄 Details"]

        tapped = ali.tap(urdu_card, "✅ منظور")
        assert await answer(botapi, tapped) == "منظور — سپلائر کو ای میل بھیجی جا رہی ہے۔"
        await deliveries_done(run)
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.APPROVED and [d.reviewer_id for d in decisions] == [APPROVER_A]
        mine = botapi.message(APPROVER_A, urdu_card.message_id)
        assert mine.text.startswith(f"✅ منظور از {isolated('Ali')}، ") and mine.buttons == []
        theirs = botapi.message(APPROVER_B, english_card.message_id)
        assert theirs.text.startswith("✅ Approved by Ali at ") and theirs.buttons == []
        news = await bilal.next_message()
        assert news.text == f"{isolated(PO)} منظور ہو گیا؛ سپلائر کو ای میل ابھی بھیجی جا رہی ہے۔"

        sana.send_text("/status")  # English is still everyone else's default
        assert await said(sana) == "/status lists a requester's purchase orders; you are not one."
        assert APPROVE_TEXT == "✅ Approve"
        assert english_heard(botapi, APPROVER_A, [tapped], after=chose[APPROVER_A]) == []
        assert english_heard(botapi, REQUESTER, after=chose[REQUESTER]) == []


async def test_a_forged_language_tap_sets_only_the_tappers_own(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        ali.send_text("/help")
        help_message = await ali.next_message()
        assert await answer(botapi, ali.tap_data(help_message, "lang:ur")) == (
            f"اب سے آپ کو پیغامات {isolated(URDU)} میں ملیں گے۔"
        )
        assert not botapi.message(APPROVER_A, help_message.message_id).edited  # not an offer
        assert await answer(botapi, ali.tap_data(ali.last_message(), "lang:xx")) == (
            "This button is not valid."
        )
        async with run.store.reading() as tx:
            assert await tx.languages([APPROVER_A, APPROVER_B, REQUESTER]) == {APPROVER_A: "ur"}
        ali.send_text("/status")
        assert await said(ali) == (
            "/status درخواست گزار کے پرچیز آرڈر دکھاتا ہے؛ آپ درخواست گزار نہیں ہیں۔"
        )


async def test_an_urdu_rejection_asks_for_its_reason_and_the_requester_hears_it(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        bilal = botapi.user(REQUESTER, "Bilal", started=True)
        async with run.store.begin() as tx:
            for person, name in ((ali, "Ali"), (bilal, "Bilal")):
                await tx.met(person.id, name, T0, started=True)
        chose = {APPROVER_A: await choose_urdu(botapi, ali)}
        chose[REQUESTER] = await choose_urdu(botapi, bilal)
        await terms_in_force(run.store)
        bilal.send_document(b"sku,quantity\nCHG-65W,3\n", SHEET_NAME, "text/csv")
        await said(bilal)
        await NoticeRunner(run.store, run.app.bot, run.settings).run_once()
        card = await ali.next_message()

        asked = ali.tap(card, "❌ مسترد")
        assert await answer(botapi, asked) == (
            "مسترد کیوں کر رہے ہیں؟ میرے اگلے پیغام کے جواب میں وجہ لکھیں۔"
        )
        prompt = await ali.next_message()
        assert prompt.text == f"مسترد کرنے کی وجہ {isolated(PO + ' v1')}?"
        ali.reply_to(prompt, " \u200b ")  # nothing to read: not a reason, nothing recorded
        assert await said(ali) == "وجہ درکار ہے: اوپر میرے سوال کے جواب میں وجہ الفاظ میں لکھیں۔"
        assert (await job_and_decisions(run))[1] == []
        ali.reply_to(prompt, "قیمت بہت زیادہ ہے")
        assert await said(ali) == (
            f"{isolated(PO)} مسترد کر دیا گیا۔ درخواست گزار کو آپ کی وجہ بتا دی گئی ہے۔"
        )
        await deliveries_done(run)
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.REJECTED and decisions[0].reason == "قیمت بہت زیادہ ہے"
        news = await bilal.next_message()
        assert news.text == f"{isolated(PO)} مسترد کر دیا گیا: {isolated('قیمت بہت زیادہ ہے')}"
        assert english_heard(botapi, APPROVER_A, [asked], after=chose[APPROVER_A]) == []
        assert english_heard(botapi, REQUESTER, after=chose[REQUESTER]) == []


async def test_an_admin_alert_fanned_out_is_rendered_in_each_admins_language(botapi, db_url):
    setup = SqlStore(make_engine(db_url), DATA_KEY)
    async with setup.begin() as tx:
        await tx.grant(REQUESTER, Role.REQUESTER, "test", T0)  # and no approver at all
    await setup.close()
    async with running_bot(botapi, db_url) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        admin.send_text("/start")
        await said(admin)
        chose = await choose_urdu(botapi, admin)
        await terms_in_force(run.store)
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_document(b"sku,quantity\nCHG-65W,3\n", SHEET_NAME, "text/csv")
        assert (await said(bilal)).startswith(f"{SHEET_NAME} accepted; 1 purchase order")
        runner = NoticeRunner(run.store, run.app.bot, run.settings)
        assert await runner.run_once() == 1  # the alert, fanned out to each admin
        assert await runner.run_once() == 1  # the one admin's copy, in their language
        assert await said(admin) == (
            f"⚠️ {isolated(PO)} منظوری کا منتظر ہے، لیکن کوئی منظوری دہندہ رجسٹرڈ نہیں۔ "
            "/invite approver سے کسی کو مدعو کریں؛ ان کے شامل ہوتے ہی کارڈ بھیج دیا جائے گا۔"
        )
        assert english_heard(botapi, ADMIN, after=chose) == []


async def test_an_urdu_approvers_pending_and_free_text_come_in_urdu(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        bilal = botapi.user(REQUESTER, "Bilal", started=True)
        async with run.store.begin() as tx:
            for person, name in ((ali, "Ali"), (bilal, "Bilal")):
                await tx.met(person.id, name, T0, started=True)
        chose = await choose_urdu(botapi, ali)
        await terms_in_force(run.store)
        bilal.send_document(b"sku,quantity\nCHG-65W,3\n", SHEET_NAME, "text/csv")
        await said(bilal)
        await NoticeRunner(run.store, run.app.bot, run.settings).run_once()
        card = await ali.next_message()
        job, _, _ = await job_and_decisions(run)
        amount = format_pkr(job.total_paisa or 0)

        ali.send_text("/pending")
        listing = await ali.next_message()
        lines = listing.text.splitlines()
        assert lines[0] == (
            f"آپ کے فیصلے کی منتظر: {isolated('1')} درخواست، پرانی پہلے۔ 🔁 کارڈ دوبارہ بھیجتا ہے۔"
        )
        assert lines[1].startswith(f"1. {isolated(PO)} · {isolated(amount)} · ")
        assert lines[1].endswith(f" · {isolated('Bilal')} کی جانب سے") and "سے منتظر" in lines[2]
        resend = ali.tap(listing, f"🔁 {PO}")
        assert await answer(botapi, resend) == (
            "اس کا کارڈ دوبارہ حاضر ہے؛ آپ کا پہلا کارڈ بھی کام کرتا ہے۔"
        )
        await deliveries_done(run)
        again = await ali.next_message()
        assert again.text == botapi.message(APPROVER_A, card.message_id).text  # the Urdu card

        ali.send_text("theek hai")
        told = await ali.next_message()
        assert told.text.splitlines()[0] == (
            "پیغام سے پرچیز آرڈر کبھی منظور نہیں ہوتا۔ "
            f"{isolated(f'{PO} ({amount})')} کا فیصلہ کرنے کے لیے بٹن دبائیں:"
        )
        assert told.button_texts == ["✅ منظور", "❌ مسترد", "📄 تفصیل"]
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.AWAITING_APPROVAL and decisions == []  # text decides nothing

        bilal.send_text("/pending")  # a requester is no approver, and hears it in English
        assert await said(bilal) == NOT_AN_APPROVER
        assert english_heard(botapi, APPROVER_A, [resend], after=chose) == []


# Bilal's first sheet: an SKU no terms offer (row 2), and a quantity that is no number (row 3).
BAD_SHEET = b"sku,quantity\nNOPE-1,2\nCHG-65W,abc\n"
# Without a supplier_id the cheapest of two suppliers is taken, and the card says so (a flag).
FLAGGED_SHEET = b"sku,quantity\nCBL-USBC-1M,20\n"


async def test_urdu_readers_get_no_english_sentence_from_sheet_to_history(botapi, db_url, store):
    """A two-stage chain: Ali (manager) and Bilal (requester) read Urdu; Chand (manager) and
    Sana (owner) English. Bilal's row problems, Ali's flagged card, his late tap after Chand
    decided, the final edit of his card and his /history are Urdu, and no message either of
    them got holds an English sentence outside an isolated value."""
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, CHAIN)
        ali, chand, sana = (botapi.user(i) for i in (APPROVER_A, APPROVER_C, APPROVER_B))
        bilal = botapi.user(REQUESTER, "Bilal", started=True)
        async with run.store.begin() as tx:
            await tx.met(REQUESTER, "Bilal", T0, started=True)
        chose = {APPROVER_A: await choose_urdu(botapi, ali)}
        chose[REQUESTER] = await choose_urdu(botapi, bilal)
        await terms_in_force(run.store)

        bilal.send_document(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "photo.csv", "text/csv")
        assert (await said(bilal)).splitlines() == [  # the lead, then the parse worker's
            f"{isolated('photo.csv')}: قبول نہیں ہوئی؛ کچھ نہیں بنایا گیا۔ براہِ کرم درست کریں:",
            translator(Language.UR)(NOT_A_SHEET),
        ]
        bilal.send_document(BAD_SHEET, SHEET_NAME, "text/csv")
        assert (await said(bilal)).splitlines()[1:] == [
            f"سطر {isolated('2')}، {isolated('sku')}: {isolated(chr(34) + 'NOPE-1' + chr(34))} "
            "سپلائر کی موجودہ شرائط میں نہیں",
            f"سطر {isolated('3')}، {isolated('quantity')}: {isolated(chr(34) + 'abc' + chr(34))} "
            "مکمل عدد نہیں",
        ]
        bilal.send_document(FLAGGED_SHEET, "restock-2.csv", "text/csv")
        assert "قبول ہو گئی" in (await said(bilal)).splitlines()[0]

        await NoticeRunner(run.store, run.app.bot, run.settings).run_once()
        card, english_card = await ali.next_message(), await chand.next_message()
        assert card.text.startswith(f"🧾 {isolated(PO)} — منظوری درکار")
        assert f"⚠️ {isolated('CBL-USBC-1M')}: {isolated('2')} سپلائر پیش کرتے ہیں" in card.text
        assert "offered by 2 suppliers" in english_card.text  # Chand reads English

        assert await answer(botapi, chand.tap(english_card, APPROVE_TEXT)) == (
            "Recorded. Stage 1 of 2 is complete; it now waits for owners."
        )
        late = ali.tap_data(card, card.button("✅ منظور").callback_data)
        assert await answer(botapi, late) == (
            f"ابھی آپ کی باری نہیں: مرحلہ {isolated('2')} گروپ {isolated('owners')} کا منتظر ہے۔"
        )
        second = await cards(botapi, run, APPROVER_B)
        assert await answer(botapi, sana.tap(second[APPROVER_B], APPROVE_TEXT)) == (
            "Approved — e-mailing the supplier."
        )
        await deliveries_done(run)
        assert (await job_and_decisions(run))[0].state is State.APPROVED
        edited = botapi.message(APPROVER_A, card.message_id)
        assert edited.text.startswith(f"✅ منظور از {isolated('Chand, Sana')}، ")
        assert edited.buttons == []

        ali.send_text(f"/history {PO}")
        history = (await said(ali)).splitlines()
        assert history[0] == f"{isolated(PO)}  {isolated('APPROVED')}"
        assert "منظوریاں:" in history and "آڈٹ:" in history
        assert any(f"{isolated('Chand')} ({isolated(str(APPROVER_C))}) نے منظور کیا" in line
                   for line in history)  # fmt: skip

        for person, taps in ((ali, [late]), (bilal, [])):
            assert len(said_to(botapi, person.id, taps, after=chose[person.id])) >= 3
            assert english_heard(botapi, person.id, taps, after=chose[person.id]) == []
