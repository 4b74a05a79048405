"""The PO's PDF (bot.documents.pdf), read back with pypdf: every field a supplier needs is
printed; the lines' table runs over pages with its heading row on each; a draft is marked on
every page and an approved PO on none; the same document gives the same bytes; Urdu is set in
Noto Nastaliq Urdu; spreadsheet text is printed as it is; a missing font is a ConfigError; the
supplier's link is printed and clickable on page 1 of a PO that has one, and on no DRAFT.
(tests/integration/test_supplier_link_mail.py reads its QR code back.)"""

from __future__ import annotations

import io
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pypdf import PdfReader
from pypdf.generic import DictionaryObject

from bot.documents import pdf as po_pdf
from bot.documents.pdf import ANSWER_PROMPT, DRAFT_MARK, HEADINGS, render_po_pdf
from core.company.company import Branch, Buyer, Company
from core.drafting.drafts import Draft, DraftLine
from core.drafting.money import format_pkr
from core.errors import ConfigError
from core.purchasing.po_document import PoDocument, Signature, po_document

PKT = ZoneInfo("Asia/Karachi")
PO = "PO-2026-0042"
KEY = "send-po:PO-2026-0042:v3:0123456789ab"
COMPANY = Company(
    Buyer(
        "Lahore Electronics (Pvt) Ltd",
        "12 Main Boulevard, Gulberg III, Lahore",
        ntn="1234567-8",
        strn="32-77-8761-234-56",
        phone="+92 42 3575 0000",
    ),
    (
        Branch("liberty", "Liberty Market", "Shop 4, Liberty Market, Gulberg, Lahore"),
        Branch("hallroad", "Hall Road", "دکان 12، ہال روڈ، لاہور"),
    ),
    default_branch="liberty",
    version="c1",
)
CABLE = DraftLine("CBL-USBC-1M", "USB-C cable, 1 m", 120, 45_000, gst_basis_points=1800)
CHARGER = DraftLine(
    "CHG-65W-GAN",
    "65 W GaN charger",
    12,
    650_000,
    note="for the Liberty branch",
    gst_basis_points=1800,
    needed_by=date(2026, 12, 10),
)
POWER_BANK = DraftLine("PB-20K", "20,000 mAh power bank", 6, 899_900, gst_basis_points=1700)
GLASS = DraftLine("SCR-GLASS-A15", "Screen glass A15", 300, 15_000)
LINES = (CABLE, CHARGER, POWER_BANK, GLASS)
APPROVALS = (
    Signature("Ayesha Khan", datetime(2026, 12, 5, 14, 5, tzinfo=PKT), "finance"),
    Signature("Bilal Ahmed", datetime(2026, 12, 5, 11, 30, tzinfo=UTC)),
)
URDU_SUPPLIER = "مدینہ الیکٹرونکس"
URDU_LINE = DraftLine(
    "CBL-USBC-1M",
    "یو ایس بی سی کیبل، ایک میٹر",
    120,
    45_000,
    note="لبرٹی برانچ کے لیے",
    needed_by=date(2026, 12, 10),
)


def _document(
    lines: tuple[DraftLine, ...] = LINES,
    *,
    approved: bool = True,
    approvals: tuple[Signature, ...] = APPROVALS,
    supplier_name: str = "Hall Road Traders",
    branch_id: str = "",
    key: str = KEY,
    link: str = "",
) -> PoDocument:
    draft = Draft(
        PO,
        "SUP-LHR-07",
        supplier_name,
        "orders@hallroad.example",
        "terms-2026-12",
        lines,
        company_version="c1",
        branch_id=branch_id,
        payment_terms="30 days credit",
        delivery_date=date(2026, 12, 12),
    )
    return po_document(
        draft,
        3,
        company=COMPANY,
        issued=date(2026, 12, 5),
        approvals=approvals,
        key=key,
        approved=approved,
        link=link,
    )


def _many_lines(count: int) -> tuple[DraftLine, ...]:
    """`count` lines, every fifth with a note and a date, as a long restock sheet makes."""
    return tuple(
        DraftLine(
            f"SKU-{number:03d}",
            f"Item {number}, a description long enough to wrap onto a second line of its cell",
            number,
            10_000 + number,
            note="keep dry" if number % 5 == 0 else "",
            needed_by=date(2026, 12, 20) if number % 5 == 0 else None,
        )
        for number in range(1, count + 1)
    )


def _reader(data: bytes) -> PdfReader:
    return PdfReader(io.BytesIO(data))


def _flat(text: str) -> str:
    """The text with every run of white space (line breaks, the rupee's space) one space."""
    return " ".join(text.split())


def _page_texts(data: bytes) -> list[str]:
    return [_flat(page.extract_text()) for page in _reader(data).pages]


def _link_targets(data: bytes) -> list[list[str]]:
    """The URIs of each page's link annotations, in the order they were drawn."""
    return [
        [
            str(annotation.get_object()["/A"]["/URI"])
            for annotation in page.get("/Annots", [])
            if annotation.get_object()["/Subtype"] == "/Link"
        ]
        for page in _reader(data).pages
    ]


def _font_names(resources: DictionaryObject) -> set[str]:
    fonts = resources["/Resources"]["/Font"]
    return {str(font.get_object()["/BaseFont"]) for font in fonts.values()}


@pytest.fixture(scope="module")
def long_draft() -> bytes:
    """A 200-line DRAFT: rendered once for the tests that page through it."""
    return render_po_pdf(_document(_many_lines(200), approved=False, approvals=()))


def test_every_field_a_supplier_needs_is_printed() -> None:
    document = _document(branch_id="liberty")
    (text,) = _page_texts(render_po_pdf(document))
    expected = [
        "PURCHASE ORDER",
        "Lahore Electronics (Pvt) Ltd",
        "12 Main Boulevard, Gulberg III, Lahore",
        "NTN 1234567-8",
        "STRN 32-77-8761-234-56",
        "Phone +92 42 3575 0000",
        f"PO number {PO}",
        "Version 3",
        "Date 5 Dec 2026",
        "Terms version terms-2026-12",
        "Hall Road Traders",
        "Supplier id SUP-LHR-07",
        "E-mail orders@hallroad.example",
        "Deliver to Liberty Market Shop 4, Liberty Market, Gulberg, Lahore",
        "Delivery by 12 Dec 2026",
        "Payment terms 30 days credit",
        " ".join(HEADINGS),
        # Each line in order: number, SKU, description, quantity, unit price, amount; a note
        # and the date it is needed by under its description.
        "1 CBL-USBC-1M USB-C cable, 1 m 120 Rs 450.00 Rs 54,000.00",
        "2 CHG-65W-GAN 65 W GaN charger 12 Rs 6,500.00 Rs 78,000.00"
        " for the Liberty branch Needed by 10 Dec 2026",
        "3 PB-20K 20,000 mAh power bank 6 Rs 8,999.00 Rs 53,994.00",
        "4 SCR-GLASS-A15 Screen glass A15 300 Rs 150.00 Rs 45,000.00",
        f"Subtotal {_flat(format_pkr(document.subtotal_paisa))}",
        "GST 17% on Rs 53,994.00 Rs 9,178.98",
        "GST 18% on Rs 132,000.00 Rs 23,760.00",
        "Total (incl. GST) Rs 263,932.98",
        "AUTHORISED BY",
        "Ayesha Khan — finance — 5 Dec 2026 14:05 PKT",
        "Bilal Ahmed — 5 Dec 2026 11:30 UTC",  # each time in its own zone; no stage, no dash
        f"Please quote {PO} on your delivery note and invoice.",
        f"Reference: {KEY}",
        f"{PO} · page 1 of 1",
    ]
    missing = [field for field in expected if field not in text]
    assert not missing, f"{missing} not in {text}"
    assert document.subtotal_paisa == 230_994_00
    assert "DRAFT" not in text
    assert "Awaiting approval" not in text


def test_prices_without_sales_tax_have_one_total() -> None:
    (text,) = _page_texts(render_po_pdf(_document((GLASS,))))
    assert "Total Rs 45,000.00" in text
    assert "Subtotal" not in text
    assert "GST" not in text


def test_a_draft_nobody_approved_awaits_approval() -> None:
    (text,) = _page_texts(render_po_pdf(_document(approved=False, approvals=())))
    assert "AUTHORISED BY Awaiting approval" in text
    assert DRAFT_MARK in text


def test_without_a_company_file_the_blocks_say_what_is_known() -> None:
    draft = Draft(PO, "SUP-LHR-07", "Hall Road Traders", "orders@hallroad.example", "t1", LINES)
    document = po_document(
        draft, 1, company=None, issued=date(2026, 12, 5), approvals=(), key=KEY, approved=True
    )
    (text,) = _page_texts(render_po_pdf(document))
    assert document.buyer.name in text
    for absent in ("NTN", "STRN", "DELIVERY", "Deliver to", "Payment terms", "AUTHORISED BY"):
        assert absent not in text


def test_two_hundred_lines_run_over_pages_with_the_heading_row_on_each(long_draft: bytes) -> None:
    pages = _page_texts(long_draft)
    assert len(pages) >= 4
    heading = " ".join(HEADINGS)
    for number, text in enumerate(pages, start=1):
        assert heading in text, f"page {number} has no heading row"
        assert f"{PO} · page {number} of {len(pages)}" in text
    everything = " ".join(pages)
    for number in range(1, 201):  # every line once, its amount with it
        row = f"{number} SKU-{number:03d} Item {number},"
        assert everything.count(row) == 1, row
        amount = format_pkr(number * (10_000 + number))
        assert f"{format_pkr(10_000 + number)} {_flat(amount)}" in everything
    # The small print closes the last page only.
    assert [f"Reference: {KEY}" in text for text in pages] == [False] * (len(pages) - 1) + [True]


def test_a_draft_is_marked_on_every_page(long_draft: bytes) -> None:
    pages = _page_texts(long_draft)
    assert all(DRAFT_MARK in text for text in pages)
    assert all("DRAFT" in text.replace(DRAFT_MARK, "") for text in pages)  # the watermark


def test_an_approved_po_is_marked_on_no_page() -> None:
    pages = _page_texts(render_po_pdf(_document(_many_lines(30))))
    assert len(pages) >= 2
    assert not any("DRAFT" in text for text in pages)


def test_the_same_document_gives_the_same_bytes() -> None:
    document = _document(approved=False, approvals=())
    first, second = render_po_pdf(document), render_po_pdf(document)
    assert first == second
    reader = _reader(first)
    # Dated the day it is issued, not the moment it was rendered; the /ID a hash of the bytes.
    assert reader.metadata is not None
    assert reader.metadata.creation_date == datetime(2026, 12, 5, tzinfo=UTC)
    file_id = reader.trailer["/ID"]
    assert file_id[0] == file_id[1]
    other = _reader(render_po_pdf(_document(approved=False, approvals=(), key=KEY + "0")))
    assert other.trailer["/ID"] != file_id


def test_urdu_text_is_set_in_noto_nastaliq_urdu() -> None:
    document = _document((URDU_LINE, CABLE), supplier_name=URDU_SUPPLIER, branch_id="hallroad")
    reader = _reader(render_po_pdf(document))
    fonts = _font_names(reader.pages[0])
    assert any("NotoNastaliqUrdu" in font for font in fonts), fonts
    assert any(font.endswith("+NotoSans") for font in fonts), fonts
    text = _flat(reader.pages[0].extract_text())
    assert "Supplier id SUP-LHR-07" in text
    assert "1 CBL-USBC-1M" in text


def test_an_english_po_embeds_no_urdu_font() -> None:
    reader = _reader(render_po_pdf(_document()))
    assert not any("Nastaliq" in font for font in _font_names(reader.pages[0]))


def test_latin_after_an_urdu_line_keeps_its_font_and_size() -> None:
    # fpdf2 2.8.9 lost the font of the lines after one that starts in the fallback font
    # (bot.documents.pdf works around it): the date under an Urdu note printed at another size.
    document = _document((URDU_LINE,), supplier_name=URDU_SUPPLIER)
    shown: list[tuple[str, str, float]] = []

    def visit(
        text: str, cm: object, tm: object, font: DictionaryObject | None, size: float
    ) -> None:
        if "Needed by" in text and font is not None:
            shown.append((text, str(font["/BaseFont"]), size))

    _reader(render_po_pdf(document)).pages[0].extract_text(visitor_text=visit)
    assert shown, "no 'Needed by' was shown"
    assert all(font.endswith("+NotoSans") and size == 7.5 for _, font, size in shown), shown


def test_spreadsheet_text_is_printed_as_it_is() -> None:
    # Markdown, HTML and fpdf2's page-count alias in a description are data, not markup.
    description = "**bold** __under__ --strike-- [link](http://x.example) <b>html</b> {nb}"
    line = DraftLine("SKU-1", description, 1, 100, note="~~not struck~~")
    (text,) = _page_texts(render_po_pdf(_document((line,))))
    assert description in text
    assert "~~not struck~~" in text


@pytest.mark.parametrize(
    "present", [(), ("NotoSans-Regular.ttf", "NotoSans-Bold.ttf", "NotoNastaliqUrdu-Regular.ttf")]
)
def test_a_missing_font_is_a_config_error(
    present: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in present:
        (tmp_path / name).symlink_to(po_pdf.FONT_DIR / name)
    monkeypatch.setattr(po_pdf, "FONT_DIR", tmp_path)
    with pytest.raises(ConfigError) as raised:
        render_po_pdf(_document())  # English only: the Urdu font is required all the same
    message = str(raised.value)
    assert "NotoNastaliqUrdu-Bold.ttf" in message
    assert ("NotoSans-Regular.ttf" in message) == (not present)
    assert "make fonts" in message


# A link as bot.outbox.links makes it: the public URL, the route and a 55-character token.
LINK = "https://manzoori.example.com/s/" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdEfGhIjKlMnOpQ"


def test_the_supplier_link_is_printed_and_clickable_on_page_one() -> None:
    data = render_po_pdf(_document(_many_lines(30), link=LINK))
    pages = _page_texts(data)
    assert len(pages) >= 2
    assert ANSWER_PROMPT in pages[0]
    # The token is one long word, broken across lines if the column is too narrow for it.
    assert LINK in "".join(pages[0].split())
    assert not any(ANSWER_PROMPT in text for text in pages[1:])
    # The printed link and the QR code over it, both to the link; nothing on later pages.
    assert _link_targets(data) == [[LINK, LINK]] + [[]] * (len(pages) - 1)
    # Above the lines' table, where a supplier reads before the lines.
    assert pages[0].index(ANSWER_PROMPT) < pages[0].index(" ".join(HEADINGS))


def test_the_link_is_one_block_between_the_parties_and_the_lines() -> None:
    (plain,) = _page_texts(render_po_pdf(_document()))
    (linked,) = _page_texts(render_po_pdf(_document(link=LINK)))
    start, end = linked.index(ANSWER_PROMPT), linked.index(" ".join(HEADINGS))
    assert linked[:start] + linked[end:] == plain  # everything else as it was, on one page
    assert linked[:start].endswith("Payment terms 30 days credit ")
    assert f"{ANSWER_PROMPT} {LINK} Or scan the code" in linked[start:end]


def test_a_link_too_long_for_its_column_breaks_across_lines_and_still_goes_there() -> None:
    long = (
        "https://purchasing.lahore-electronics-and-appliances.example.com.pk/suppliers"
        + LINK[LINK.index("/s/") :]
    )
    data = render_po_pdf(_document(link=long))
    (text,) = _page_texts(data)
    assert long not in text  # broken across lines
    assert long in "".join(text.split())
    (targets,) = _link_targets(data)
    assert targets == [long] * 3  # each of its two lines, and the QR code


def test_a_draft_carries_no_link_even_if_given_one() -> None:
    # Approvers' previews are made without a link; the PDF would not print one all the same.
    data = render_po_pdf(_document(approved=False, approvals=(), link=LINK))
    (text,) = _page_texts(data)
    assert DRAFT_MARK in text
    assert ANSWER_PROMPT not in text
    assert "manzoori.example.com" not in "".join(text.split())
    assert _link_targets(data) == [[]]


def test_without_a_link_nothing_is_printed_and_nothing_is_clickable() -> None:
    data = render_po_pdf(_document())
    (text,) = _page_texts(data)
    assert ANSWER_PROMPT not in text
    assert _link_targets(data) == [[]]


def test_a_linked_po_gives_the_same_bytes_each_time_and_its_own_for_another_link() -> None:
    document = _document(link=LINK)
    first = render_po_pdf(document)
    assert first == render_po_pdf(document)
    assert first != render_po_pdf(_document(link=LINK[:-1] + "R"))
    assert len(first) < 150 * 1024


def test_a_latin_po_misses_no_glyph_and_other_scripts_get_the_whole_font(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Latin POs are set in Noto Sans cut down to Latin once per process; a character the cut
    lacks (Greek here) sets the document in the whole font, so nothing prints as a blank box."""
    link = "https://manzoori.example.pk/s/PO-2026-0042/0123456789abcdef"
    greek = DraftLine("CBL-USBC-1M", "Καλώδιο USB-C, 1 m — ±5 %", 120, 45_000)
    with caplog.at_level(logging.WARNING, logger="fpdf"):
        latin = render_po_pdf(_document(approved=False, link=link))
        other = render_po_pdf(_document((greek, CHARGER), link=link))
    assert not [r for r in caplog.records if "missing" in r.getMessage()]
    assert DRAFT_MARK in " ".join(_page_texts(latin))
    assert "Καλώδιο USB-C, 1 m — ±5 %" in " ".join(_page_texts(other))
    english, mixed = (list(po_pdf._strings(doc)) for doc in (_document(), _document((greek,))))
    assert po_pdf._latin_only(english) and not po_pdf._latin_only(mixed)


def test_prepare_cuts_and_parses_the_latin_fonts_once_and_without_the_fonts_does_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(po_pdf, "FONT_DIR", tmp_path)  # no fonts here: nothing to cut, no error
    po_pdf._latin_fonts.cache_clear()
    po_pdf._parsed_font.cache_clear()
    po_pdf.prepare()
    assert po_pdf._latin_fonts.cache_info().currsize == 0
    assert po_pdf._parsed_font.cache_info().currsize == 0
    monkeypatch.undo()
    po_pdf.prepare()
    assert po_pdf._latin_fonts.cache_info().currsize == 1
    cut = po_pdf._latin_fonts(po_pdf.FONT_DIR)[0]
    assert set(cut) == {"", "B"} and all(path.is_file() for path in cut.values())
    assert po_pdf._parsed_font.cache_info().currsize == 2
    render_po_pdf(_document())  # a Latin PO: set in the cut, parsed already
    assert po_pdf._parsed_font.cache_info().misses == 2


def _fresh_render(document: PoDocument) -> bytes:
    """`document` rendered with every font parsed anew, as a process's first render does."""
    po_pdf._parsed_font.cache_clear()
    return render_po_pdf(document)


def test_documents_sharing_the_parsed_fonts_each_print_their_own_glyphs() -> None:
    """Fonts are parsed once per process and shared: what one document writes to its fonts
    (the glyphs it uses) shows in no other, one after another or in two threads at once."""
    documents = (
        _document(),
        _document((URDU_LINE, GLASS), supplier_name=URDU_SUPPLIER),
        _document((POWER_BANK,), approved=False, approvals=(), link="https://x.example/s/Qz"),
        _document((URDU_LINE,), branch_id="hallroad"),
    )
    fresh = [_fresh_render(document) for document in documents]
    assert len(set(fresh)) == len(documents)
    assert [render_po_pdf(document) for document in documents * 2] == fresh * 2

    def render_each(picked: tuple[PoDocument, ...]) -> list[bytes]:
        start.wait()
        return [render_po_pdf(document) for document in picked * 3]

    start = threading.Barrier(2)
    with ThreadPoolExecutor(2) as pool:
        evens, odds = pool.map(render_each, (documents[::2], documents[1::2]))
    assert evens == fresh[::2] * 3
    assert odds == fresh[1::2] * 3


def test_texts_with_no_line_to_wrap_print_as_fpdf2_would_print_them(
    monkeypatch: pytest.MonkeyPatch, long_draft: bytes
) -> None:
    """multi_cell() prints a text none of whose lines needs wrapping without fpdf2's line
    breaking: the bytes are those fpdf2's own multi_cell() gives, table (a line's note and
    date under its description too), blocks and link alike."""
    link = "https://manzoori.example.pk/s/PO-2026-0042/0123456789abcdef"
    documents = (
        _document(link=link),
        _document((CABLE, GLASS), approved=False, approvals=(), branch_id="hallroad"),
        _document(_many_lines(200), approved=False, approvals=()),
    )
    fast = [render_po_pdf(document) for document in documents]
    assert fast[2] == long_draft
    monkeypatch.setattr(po_pdf._PoPdf, "_unwrapped", lambda *_: None)
    assert [render_po_pdf(document) for document in documents] == fast
