"""Issue 28: a request typed in a message, end to end over HTTP: read, summarised with Submit
and Cancel, and submitted only on Submit, through the same intake as a sheet."""

from __future__ import annotations

import asyncio

import pytest
from cryptography.fernet import Fernet

from bot.telegram.cards import APPROVE_TEXT, REJECT_TEXT
from bot.telegram.notices import NoticeRunner
from bot.words import typed_texts
from bot.words.i18n import isolated
from core.jobs.states import State
from core.purchasing import submissions
from store import schema
from tests.helpers.bot import YEAR, all_handled, answer, running_bot, said, with_terms
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0
from tests.helpers.urdu import english_runs

NEVER = "A message never approves a purchase order."
SUMMARY_HEAD = "Your request, as I read it (3 lines):"
LINES = "CBL-USBC-1M 40\nTEA-500G x 3 for Eid\n\n5 PB-20K"
SUMMARY = [
    SUMMARY_HEAD,
    "Line 1: CBL-USBC-1M USB-C cable, 1 m, 40 × Rs 450.00 = Rs 18,000.00",
    "Line 2: TEA-500G چائے کی پتی، 500 گرام, 3 × Rs 899.00 = Rs 2,697.00 (for Eid)",
    "Line 4: PB-20K 20,000 mAh power bank, 5 × Rs 8,999.00 = Rs 44,995.00",
    "Saddar Wholesale: 2 lines, Rs 47,692.00 with sales tax",
    "Hall Road Traders: 1 line, Rs 18,000.00 with sales tax",
    "Total: Rs 65,692.00",
    "Tap Submit to send it for approval, or Cancel. Submit works for 24 hours.",
]


async def jobs(store) -> list:
    async with store.reading() as tx:
        return await tx.list_jobs(None, 50)


async def kept(store) -> list:
    async with store.reading() as tx:
        return list(await tx.conn.execute(schema.typed_requests.select()))


async def test_a_message_with_a_bad_line_names_each_problem_and_keeps_nothing(
    botapi, db_url, store
):
    await with_terms(store)
    async with running_bot(botapi, db_url):
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_text("CBL-USBC-1M 40\nCBL-USB-1M x 2\nPB-20K forty\nTEA-500G 3")
        assert (await said(bilal)).splitlines() == [
            "Typed request: not accepted; nothing was created. Please fix:",
            'Line 3: could not read "PB-20K forty" as a SKU and a quantity, such as '
            "CBL-USBC-1M 40; did you mean PB-20K?",
            "Send the corrected lines in a new message.",
        ]
        # Every line read, one SKU unknown: the intake's problem, at its line, with the
        # nearest SKUs; the valid lines are not kept either.
        bilal.send_text("CBL-USBC-1M 40\nCBL-USB-1M x 2\nTEA-500G 0")
        assert (await said(bilal)).splitlines() == [
            "Typed request: not accepted; nothing was created. Please fix:",
            'Line 2, sku: "CBL-USB-1M" is not in the current supplier terms; did you mean '
            "CBL-USBC-1M?",
            "Line 3, quantity: 0 must be at least 1",
            "Send the corrected lines in a new message.",
        ]
    assert await jobs(store) == [] and await kept(store) == []


async def test_submit_makes_the_pos_and_cards_a_sheet_would(botapi, db_url, store):
    await with_terms(store)
    async with store.begin() as tx:
        await tx.met(APPROVER_A, "Ali", T0, started=True)
        await tx.met(APPROVER_B, "Sana", T0, started=True)
    async with running_bot(botapi, db_url) as run:
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_text(LINES)
        summary = await bilal.next_message()
        assert summary.text.splitlines() == SUMMARY
        assert [b.text for b in summary.buttons[0]] == ["Submit", "Cancel"]
        assert await jobs(store) == []  # nothing submitted by the message itself
        assert await answer(botapi, bilal.tap(summary, "Submit")) == typed_texts.SUBMITTED
        assert (await said(bilal)).splitlines()[:3] == [
            "Typed request accepted; 2 purchase orders drafted and sent for approval:",
            f"PO-{YEAR}-0001  Saddar Wholesale (sa***@saddar.com.pk)  2 lines  Rs 47,692.00",
            f"PO-{YEAR}-0002  Hall Road Traders (or***@hallroad.pk)  1 line  Rs 18,000.00",
        ]
        edited = await botapi.wait_for(
            lambda: (m := botapi.message(REQUESTER, summary.message_id)).buttons == [] and m
        )
        assert edited.text.splitlines()[0].startswith("✅ Submitted at ")
        assert edited.text.splitlines()[1:] == SUMMARY
        # The approvers' cards go out as for a sheet.
        assert await NoticeRunner(run.store, run.app.bot, run.settings).run_once() == 4
        card = await ali.next_message()
        assert f"PO-{YEAR}-0001" in card.text and APPROVE_TEXT in str(card.buttons)
    made = await jobs(store)
    assert sorted(j.state for j in made) == [State.AWAITING_APPROVAL] * 2
    assert {j.requester_id for j in made} == {REQUESTER}


async def test_cancel_drops_the_request_and_submit_after_it_is_refused(botapi, db_url, store):
    await with_terms(store)
    async with running_bot(botapi, db_url):
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_text("CBL-USBC-1M 40")
        summary = await bilal.next_message()
        assert await answer(botapi, bilal.tap(summary, "Cancel")) == typed_texts.CANCELLED
        edited = await botapi.wait_for(
            lambda: (m := botapi.message(REQUESTER, summary.message_id)).buttons == [] and m
        )
        assert edited.text.splitlines()[0].startswith("❌ Cancelled at ")
        # The keyboard is gone from the phone; an old copy of it is tapped all the same.
        data = summary.buttons[0][0].callback_data
        assert await answer(botapi, bilal.tap_data(summary, data)) == typed_texts.WAS_CANCELLED
        cancel = summary.buttons[0][1].callback_data
        assert (
            await answer(botapi, bilal.tap_data(summary, cancel)) == typed_texts.ALREADY_CANCELLED
        )
    assert await jobs(store) == []
    [row] = await kept(store)
    assert row.state == "cancelled"
    assert store.sealer.open(row.lines_encrypted) == b'{"lines": [], "numbers": []}'  # removed


async def test_a_double_submit_makes_one_request(botapi, db_url, store):
    await with_terms(store)
    async with running_bot(botapi, db_url) as run:
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_text("CBL-USBC-1M 40\nPB-20K 5")
        summary = await bilal.next_message()
        # Two taps at once (both in one getUpdates batch, handled side by side), then the
        # first delivered again by Telegram, then a third tap later.
        first, second = bilal.tap(summary, "Submit"), bilal.tap(summary, "Submit")
        answers = sorted([await answer(botapi, first), await answer(botapi, second)])
        assert answers == sorted([typed_texts.SUBMITTED, typed_texts.ALREADY_SUBMITTED])
        botapi.redeliver(botapi.callback_query(first).update_id)
        third = bilal.tap_data(summary, summary.buttons[0][0].callback_data)
        assert await answer(botapi, third) == typed_texts.ALREADY_SUBMITTED
        await all_handled(botapi, run)
        replies = [m.text for m in bilal.messages() if m.message_id > summary.message_id]
        assert [r.splitlines()[0] for r in replies] == [
            "Typed request accepted; 2 purchase orders drafted and sent for approval:"
        ]
    assert len(await jobs(store)) == 2


async def test_two_submits_processed_at_once_make_one_request(botapi, db_url, store, monkeypatch):
    """Two taps' submissions run at once: each waits at the intake's door until the other is
    there too, then both go through it together; its digest makes one request of them."""
    await with_terms(store)
    real, door = submissions.submit_sheet, asyncio.Barrier(2)

    async def together(*args, **kwargs):
        async with asyncio.timeout(5):  # a tap that never came would fail the test, not hang it
            await door.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(submissions, "submit_sheet", together)
    async with running_bot(botapi, db_url) as run:
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_text("TEA-500G 3")
        summary = await bilal.next_message()
        data = summary.buttons[0][0].callback_data
        queries = [bilal.tap_data(summary, data) for _ in range(2)]
        said_back = await asyncio.gather(*(answer(botapi, q) for q in queries))
        assert sorted(said_back) == sorted([typed_texts.SUBMITTED, typed_texts.ALREADY_SUBMITTED])
        await all_handled(botapi, run)
        replies = [m.text for m in bilal.messages() if m.message_id > summary.message_id]
        assert len(replies) == 1 and replies[0].startswith("Typed request accepted; 1 purchase")
    assert [j.po_number for j in await jobs(store)] == [f"PO-{YEAR}-0001"]


async def test_someone_elses_tap_is_refused(botapi, db_url, store):
    await with_terms(store)
    async with running_bot(botapi, db_url):
        bilal, ali = botapi.user(REQUESTER, "Bilal"), botapi.user(APPROVER_A, "Ali")
        bilal.send_text("CBL-USBC-1M 40")
        summary = await bilal.next_message()
        ali.send_text("/help")
        help_message = await ali.next_message()
        for button in summary.buttons[0]:  # the data of Bilal's buttons, sent by Ali
            tapped = ali.tap_data(help_message, button.callback_data)
            assert await answer(botapi, tapped) == typed_texts.NOT_YOURS
        assert await answer(botapi, bilal.tap(summary, "Submit")) == typed_texts.SUBMITTED
    assert len(await jobs(store)) == 1


async def test_an_approvers_ok_is_neither_a_request_nor_a_decision(botapi, db_url, store):
    await with_terms(store)
    async with running_bot(botapi, db_url) as run:
        bilal, ali = botapi.user(REQUESTER, "Bilal"), botapi.user(APPROVER_A, "Ali")
        bilal.send_document(b"sku,quantity\nTEA-500G,3\n", "tea.csv", "text/csv")
        await said(bilal)
        ali.send_text("ok")  # today's answer: the buttons that decide, and a comment
        reply = await ali.next_message()
        assert reply.text.startswith(f"{NEVER} To decide PO-{YEAR}-0001 (Rs 2,697.00)")
        assert [b.text for b in reply.buttons[0]][:2] == [APPROVE_TEXT, REJECT_TEXT]
        ali.send_text("CBL-USBC-1M 40")  # order lines from an approver: not a request
        assert (await said(ali)).startswith(f"{NEVER} To decide PO-{YEAR}-0001")
        # A requester's "ok", and a reply to the bot's message: ordinary text, the help.
        bilal.send_text("ok")
        assert (await said(bilal)).startswith("You are registered as requester.")
        bilal.reply_to(bilal.messages()[0], "CBL-USBC-1M 40")
        assert (await said(bilal)).startswith("You are registered as requester.")
        await all_handled(botapi, run)
    made = await jobs(store)
    assert [j.state for j in made] == [State.AWAITING_APPROVAL]  # the sheet's, undecided
    assert await kept(store) == []


@pytest.mark.slow  # waits on real time: a two-second validity
@pytest.mark.timed
async def test_submit_after_the_validity_is_refused(botapi, db_url, store):
    await with_terms(store)
    async with running_bot(botapi, db_url, manzoori_typed_request_seconds=2):
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_text("CBL-USBC-1M 40")
        summary = await bilal.next_message()
        await asyncio.sleep(2.1)
        assert await answer(botapi, bilal.tap(summary, "Submit")) == typed_texts.EXPIRED
    assert await jobs(store) == []


async def test_a_typed_request_in_urdu(botapi, db_url, store):
    """The summary, its buttons, the problems and the tap's answer in Urdu: the SKUs, the
    amounts and the quoted line isolated, no English sentence outside them."""
    await with_terms(store)
    async with store.begin() as tx:
        await tx.met(REQUESTER, "Bilal", T0, started=True)
        assert await tx.set_language(REQUESTER, "ur", T0)
    async with running_bot(botapi, db_url):
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_text("CBL-USBC-1M ۴۰\nPB-20K پانچ")
        problems = (await said(bilal)).splitlines()
        assert problems[1] == (
            f"لائن {isolated('2')}: {isolated(chr(34) + 'PB-20K پانچ' + chr(34))} کو SKU اور "
            f"مقدار کے طور پر نہیں پڑھا جا سکا، مثلاً {isolated('CBL-USBC-1M 40')}؛ کیا آپ کا "
            f"مطلب {isolated('PB-20K')} تھا؟"
        )
        bilal.send_text("CBL-USBC-1M ۴۰")
        summary = await bilal.next_message()
        lines = summary.text.splitlines()
        assert lines[0] == f"آپ کی درخواست، جیسے میں نے پڑھی ({isolated('1')} لائن):"
        assert lines[1].startswith(f"لائن {isolated('1')}: {isolated('CBL-USBC-1M')} ")
        assert isolated("Rs 18,000.00") in lines[1]
        assert summary.button_texts == ["جمع کریں", "منسوخ کریں"]
        for text in (*problems, *lines):
            assert english_runs(text) == [], text
        assert await answer(botapi, bilal.tap(summary, "جمع کریں")) == (
            "جمع ہو گئی: پرچیز آرڈر منظوری دینے والوں کو جا رہے ہیں۔"
        )
        accepted = await said(bilal)
        assert accepted.startswith(f"{isolated('لکھی ہوئی درخواست')} قبول ہو گئی؛")
    assert len(await jobs(store)) == 1


async def test_submit_works_after_the_bot_restarted(botapi, db_url, store):
    """The summary's request is kept in the database, not in the process."""
    await with_terms(store)
    key = Fernet.generate_key().decode()  # the same signing key across the restart
    async with running_bot(botapi, db_url, manzoori_secret_key=key):
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_text("PB-20K 5")
        summary = await bilal.next_message()
    async with running_bot(botapi, db_url, manzoori_secret_key=key):
        assert await answer(botapi, bilal.tap(summary, "Submit")) == typed_texts.SUBMITTED
        assert (await said(bilal)).startswith("Typed request accepted; 1 purchase order")
    assert [j.total_paisa for j in await jobs(store)] == [5 * 899_900]
