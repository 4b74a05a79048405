"""Requesters send restock sheets to the bot, end to end over HTTP."""

from __future__ import annotations

from bot.files.limits import NOT_A_SHEET
from core.jobs.states import State
from tests.helpers.bot import YEAR, all_handled, running_bot, said, with_terms
from tests.helpers.factories import APPROVER_A, REQUESTER
from tests.helpers.xlsx import xlsx_bytes


async def test_a_requester_gets_one_po_per_supplier_and_the_same_file_back(botapi, db_url, store):
    await with_terms(store)
    async with running_bot(botapi, db_url):
        requester = botapi.user(REQUESTER, "Bilal")
        sheet = b"sku,quantity,notes\nCBL-USBC-1M,20,\nTEA-500G,3,for Eid\n"
        requester.send_document(sheet, "restock.csv", "text/csv")
        assert (await said(requester)).splitlines() == [
            "restock.csv accepted; 2 purchase orders drafted and sent for approval:",
            f"PO-{YEAR}-0001  Saddar Wholesale (sa***@saddar.com.pk)  1 line  Rs 2,697.00",
            f"PO-{YEAR}-0002  Hall Road Traders (or***@hallroad.pk)  1 line  Rs 9,000.00",
            "  ! CBL-USBC-1M: offered by 2 suppliers; this one is the cheapest at Rs 450.00 "
            "(next: SUP-KHI-02 at Rs 470.00)",
        ]
        requester.send_document(sheet, "restock (1).csv", "text/csv")  # sent again
        again = (await said(requester)).splitlines()
        assert again[0] == "restock (1).csv was already submitted; it made 2 purchase orders:"
        assert again[1] == f"PO-{YEAR}-0001  Saddar Wholesale  Rs 2,697.00  AWAITING_APPROVAL"
    async with store.begin() as tx:
        assert len(await tx.jobs_in_states({State.AWAITING_APPROVAL})) == 2


async def test_an_xlsx_with_row_problems_creates_nothing(botapi, db_url, store):
    await with_terms(store)
    async with running_bot(botapi, db_url):
        requester = botapi.user(REQUESTER, "Bilal")
        workbook = xlsx_bytes([["sku", "quantity"], ["CBL-USBC-1M", "abc"], ["NOPE-1", 2]])
        requester.send_document(workbook, "restock.xlsx", "application/vnd.ms-excel")
        assert (await said(requester)).splitlines() == [
            "restock.xlsx: not accepted; nothing was created. Please fix:",
            'Row 2, quantity: "abc" is not a whole number',
            'Row 3, sku: "NOPE-1" is not in the current supplier terms',
        ]
    async with store.begin() as tx:
        assert await tx.list_jobs(None, 10) == []


def refused(name: str) -> str:
    """The first line of every refusal of a sheet, whichever check refused it."""
    return f"{name}: not accepted; nothing was created. Please fix:"


async def test_unreadable_and_oversized_files_are_refused_as_rows_are(botapi, db_url, store):
    await with_terms(store)
    async with running_bot(botapi, db_url):
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_document(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(200), "photo.csv", "text/csv")
        assert (await said(requester)).splitlines() == [refused("photo.csv"), NOT_A_SHEET]
        downloads = len(botapi.calls_to("getFile"))
        requester.send_document(b"sku,quantity\n" + b"A,1\n" * 1_600_000, "huge.csv", "text/csv")
        assert (await said(requester)).splitlines() == [
            refused("huge.csv"),
            "The file is 6.2 MB; the limit is 5 MB.",  # rounded up
        ]
        assert len(botapi.calls_to("getFile")) == downloads  # refused before downloading
    async with store.begin() as tx:
        assert await tx.list_jobs(None, 10) == []


async def test_a_workbook_with_a_cell_too_long_says_nothing_was_created(botapi, db_url, store):
    """Issue 21: the workbook refused for one long shared string said why, but not that
    nothing was created, as every other refusal of a file does."""
    await with_terms(store)
    workbook = xlsx_bytes([["sku", "quantity", "notes"], ["CBL-USBC-1M", 2, "x" * 10_001]])
    async with running_bot(botapi, db_url):
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_document(workbook, "restock.xlsx", "application/vnd.ms-excel")
        assert (await said(requester)).splitlines() == [
            "restock.xlsx: not accepted; nothing was created. Please fix:",
            "A cell of this workbook holds more than 10,000 characters, far more than any sheet "
            "needs: delete that text, or save the sheet as CSV.",
        ]
    async with store.begin() as tx:
        assert await tx.list_jobs(None, 10) == []


async def test_only_requesters_send_sheets(botapi, db_url, store):
    await with_terms(store)
    async with running_bot(botapi, db_url):
        approver, stranger = botapi.user(APPROVER_A, "Ali"), botapi.user(424242, "Zara")
        approver.send_document(b"sku,quantity\nCBL-USBC-1M,20\n", "s.csv", "text/csv")
        assert await said(approver) == "Only requesters can send restock sheets."
        stranger.send_document(b"sku,quantity\nCBL-USBC-1M,20\n", "s.csv", "text/csv")
        assert "Your Telegram id is 424242" in await said(stranger)
    async with store.begin() as tx:
        assert await tx.list_jobs(None, 10) == []


async def test_status_lists_the_requesters_recent_pos(botapi, db_url, store):
    await with_terms(store)
    async with running_bot(botapi, db_url):
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_text("/status")
        assert await said(requester) == (
            "You have no purchase orders yet. Send a restock sheet to start one."
        )
        requester.send_document(b"sku,quantity\nTEA-500G,3\n", "tea.csv", "text/csv")
        await said(requester)
        requester.send_text("/status")
        lines = (await said(requester)).splitlines()
        assert lines[0] == "Your recent purchase orders:"
        assert lines[1].startswith(f"PO-{YEAR}-0001  Rs 2,697.00  waiting for approval  (")
        assert lines[1].endswith(" PKT)")
        approver = botapi.user(APPROVER_A, "Ali")
        approver.send_text("/status")
        assert await said(approver) == (
            "/status lists a requester's purchase orders; you are not one."
        )


async def test_the_reply_to_the_worst_sheet_fits_in_a_few_messages(botapi, db_url, store):
    """10,000 rows, each wrong in every cell with the longest values a cell may hold: the
    requester gets a summary that fits in a few messages, not one message per problem."""
    await with_terms(store)
    long_sku = "S" * 9_000  # under the cell limit, far over any SKU
    huge = "9" * 9_000  # a quantity far past Python's int-to-str limit
    note = "n" * 9_000  # thirty times the longest note
    row = f"{long_sku},{huge},{note},extra,cells\n"
    sheet = ("sku,quantity,notes\n" + row * 10_000).encode()[: 5 * 1024 * 1024 - 10]
    async with running_bot(botapi, db_url) as run:
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_document(sheet, "worst.csv", "text/csv")
        first = await said(requester)
        assert first.startswith("worst.csv: not accepted; nothing was created. Please fix:")
        await all_handled(botapi, run)
        replies = requester.messages()
        assert 1 <= len(replies) <= 3, [len(m.text) for m in replies]
        assert "more problems" in replies[-1].text
