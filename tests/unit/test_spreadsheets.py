"""bot/files/sheets.py: uploads become Tables by their content, and each refusal is one sentence."""

from __future__ import annotations

import io
import random
import time
import zipfile
from datetime import date, datetime

import pytest
import xlsxwriter

from bot.files import limits, workbooks
from bot.files.limits import (
    CELL_TOO_LONG,
    DAMAGED_WORKBOOK,
    EMPTY_FILE,
    MALFORMED_CSV,
    MIXED_ENCODING,
    NO_SUCH_TIME,
    NOT_A_SHEET,
    NOT_CSV,
    OLD_OR_PROTECTED,
    TOO_LARGE,
    TOO_SPREAD_OUT,
    UNCLOSED_QUOTE,
    UNDECODABLE,
)
from bot.files.sheets import read_csv_text, read_sheet
from core.drafting.tables import Row, Table
from core.errors import UnreadableSheet
from tests.helpers.xlsx import part_text, replace_part, xlsx_bytes

OLE2_FILE = bytes.fromhex("D0CF11E0A1B11AE1") + bytes(504)
SHEET1 = "xl/worksheets/sheet1.xml"
MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def numbered(table: Table) -> list[tuple[int, tuple[object, ...]]]:
    """The table as (row number, cells) pairs, the shape most assertions compare."""
    return [(row.number, row.cells) for row in table.rows]


def refusal(data: bytes) -> str:
    """The sentence read_sheet refuses `data` with."""
    with pytest.raises(UnreadableSheet) as caught:
        read_sheet(data)
    return str(caught.value)


def zip_of(parts: dict[str, bytes]) -> bytes:
    """A zip archive holding `parts`."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in parts.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def sheet_xml(rows: str) -> str:
    """A complete worksheet part whose sheetData holds `rows`."""
    return f'<worksheet xmlns="{MAIN_NS}"><sheetData>{rows}</sheetData></worksheet>'


def test_every_sentence_is_one_sentence() -> None:
    sentences = [
        EMPTY_FILE,
        NOT_A_SHEET,
        NOT_CSV,
        OLD_OR_PROTECTED,
        UNDECODABLE,
        MALFORMED_CSV.format(row=7),
        UNCLOSED_QUOTE.format(row=7),
        CELL_TOO_LONG.format(row=7, limit=131_072),
        MIXED_ENCODING.format(row=7),
        DAMAGED_WORKBOOK,
        TOO_LARGE,
        TOO_SPREAD_OUT,
        NO_SUCH_TIME.format(row=7),
    ]
    for sentence in sentences:
        assert sentence[0].isupper() and sentence.endswith(".")
        assert ". " not in sentence and "\n" not in sentence


# --- CSV ---------------------------------------------------------------------------------


def test_utf8_csv_rows_are_numbered_from_the_header() -> None:
    table = read_sheet("sku,quantity,note\nA-1,2,naïve\n".encode())
    assert numbered(table) == [(1, ("sku", "quantity", "note")), (2, ("A-1", "2", "naïve"))]
    assert all(row.formulas == frozenset() for row in table.rows)


def test_utf8_bom_is_not_part_of_the_first_cell() -> None:
    table = read_sheet(b"\xef\xbb\xbfsku,quantity\r\nA-1,2\r\n")
    assert numbered(table) == [(1, ("sku", "quantity")), (2, ("A-1", "2"))]


def test_windows_1252_csv_is_decoded() -> None:
    data = "sku;note;price\nA-1;Café;€ 5\n".encode("cp1252")
    assert numbered(read_sheet(data))[1] == (2, ("A-1", "Café", "€ 5"))


def test_bytes_neither_utf8_nor_windows_1252_are_refused() -> None:
    assert refusal(b"sku,quantity\n\x81\x8d,1") == UNDECODABLE


def test_utf16_text_gets_the_encoding_advice() -> None:
    assert refusal("sku\tquantity\nA-1\t2\n".encode("utf-16")) == UNDECODABLE


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10",
        random.Random(7).randbytes(2000) + b"\x00",
        b"sku,quantity\nA-1\x01,2\n",  # one stray control character is enough
    ],
    ids=["png", "random", "control-character"],
)
def test_binary_content_named_csv_is_not_a_sheet(data: bytes) -> None:
    assert refusal(data) == NOT_A_SHEET


@pytest.mark.parametrize("data", [b"", b"\xef\xbb\xbf"], ids=["empty", "bom-only"])
def test_an_empty_file_says_so(data: bytes) -> None:
    assert refusal(data) == EMPTY_FILE
    with pytest.raises(UnreadableSheet, match=f"^{EMPTY_FILE}$"):
        read_csv_text(data)


def test_whitespace_only_csv_is_a_table_without_rows() -> None:
    assert read_sheet(b" \r\n\r\n,,\r\n") == Table(())


def test_a_word_document_is_not_a_sheet_whatever_its_name() -> None:
    docx = zip_of(
        {"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<document><body/></document>"}
    )
    assert refusal(docx) == NOT_A_SHEET


def test_old_xls_or_password_protected_workbook() -> None:
    assert refusal(OLE2_FILE) == OLD_OR_PROTECTED


def test_semicolon_delimiter_keeps_decimal_commas_in_cells() -> None:
    table = read_sheet(b"sku;quantity;price\nA-1;2;3,50\n")
    assert numbered(table) == [(1, ("sku", "quantity", "price")), (2, ("A-1", "2", "3,50"))]


def test_tab_delimiter() -> None:
    table = read_sheet(b"sku\tquantity\nA, B\t2\n")
    assert numbered(table) == [(1, ("sku", "quantity")), (2, ("A, B", "2"))]


def test_delimiters_inside_quotes_do_not_count() -> None:
    table = read_sheet(b'"a;b;c",quantity\nA-1,2\n')
    assert numbered(table) == [(1, ("a;b;c", "quantity")), (2, ("A-1", "2"))]


def test_a_single_column_defaults_to_comma() -> None:
    assert numbered(read_sheet(b"sku\nA-1, A-2\n")) == [
        (1, ("sku",)),
        (2, ("A-1", " A-2")),
    ]


def test_a_quoted_newline_stays_inside_one_row() -> None:
    data = b'sku,note\r\nA-1,"line one\r\nline two"\r\nA-2,plain\r\n'
    assert numbered(read_sheet(data)) == [
        (1, ("sku", "note")),
        (2, ("A-1", "line one\r\nline two")),
        (3, ("A-2", "plain")),
    ]


def test_blank_rows_are_left_out_but_still_counted() -> None:
    data = b"sku,quantity\n\nA-1,2\n , \n,,\nA-2,3\n"
    assert numbered(read_sheet(data)) == [
        (1, ("sku", "quantity")),
        (3, ("A-1", "2")),
        (6, ("A-2", "3")),
    ]


def test_csv_cells_are_kept_exactly_and_formulas_are_text() -> None:
    table = read_sheet(b"sku,total\n A-1 ,=1+1\n")
    assert table.rows[1] == Row(2, (" A-1 ", "=1+1"), frozenset())


@pytest.mark.parametrize(
    "length",
    [
        limits.MAX_CELL_CHARS + 1,  # just over the limit every reader shares
        200_000,  # over the csv module's own field limit too
    ],
)
def test_a_cell_past_the_csv_field_limit_is_named_by_its_row(length: int) -> None:
    data = b'sku,note\nA-1,ok\nA-2,"' + b"x" * length + b'"\n'
    assert refusal(data) == (
        "Row 3: a cell holds more than 10,000 characters, far more than any sheet needs: "
        "check that row, then save the file again."
    )


def test_a_cell_of_exactly_the_limit_is_read() -> None:
    data = b"sku,note\nA-1," + b"x" * limits.MAX_CELL_CHARS + b"\n"
    assert len(read_sheet(data).rows[1].cells[1]) == limits.MAX_CELL_CHARS


@pytest.mark.parametrize(
    ("data", "row"),
    [
        # the quote opens in a row's last cell and the file ends without closing it
        (b'sku,quantity,notes\nA-1,2,ok\nA-2,3,"to the Saddar branch\nA-3,4,x\nA-4,5,y\n', 3),
        # a quoted cell that spans lines is one row, so the next row's number follows it
        (b'sku,quantity,notes\nA-1,2,"two\nlines"\nA-2,3,"never closed\n', 3),
        (b'sku,quantity\n"A-1,2\n', 2),  # in the first data row
    ],
)
def test_an_unclosed_quote_names_the_row_where_it_opened_and_loses_no_row(data, row) -> None:
    assert refusal(data) == UNCLOSED_QUOTE.format(row=row)


def test_text_after_a_closing_quote_names_its_row() -> None:
    assert refusal(b'sku,quantity\nA-1,2\n"A-2"x,3\n') == MALFORMED_CSV.format(row=3)


def test_mostly_utf8_with_one_stray_windows_1252_byte_is_not_read_as_windows_1252() -> None:
    data = "sku,quantity,notes\nA-1,2,دکان\nA-2,3,Caf".encode() + b"\xe9\n"
    assert refusal(data) == MIXED_ENCODING.format(row=3)


def test_terms_csv_reads_like_an_order_csv() -> None:
    data = "supplier_id;terms\nS-1;Café\n".encode("cp1252")
    assert numbered(read_csv_text(data)) == [(1, ("supplier_id", "terms")), (2, ("S-1", "Café"))]


@pytest.mark.parametrize(
    "data",
    [xlsx_bytes([["supplier_id"]]), OLE2_FILE, b"GIF89a\x01\x00\x01\x00\x00"],
    ids=["xlsx", "ole2", "gif"],
)
def test_terms_must_be_csv(data: bytes) -> None:
    with pytest.raises(UnreadableSheet) as caught:
        read_csv_text(data)
    assert str(caught.value) == NOT_CSV


# --- XLSX --------------------------------------------------------------------------------


def test_xlsx_values_keep_their_types() -> None:
    data = xlsx_bytes(
        [
            ["sku", "quantity", "price", "due"],
            ["007", 2, 3.5, date(2026, 1, 5)],
            ["A-2", 10, 0.1, datetime(2026, 1, 5, 14, 30)],
            [True, None, " x ", None],
        ]
    )
    table = read_sheet(data)
    assert numbered(table) == [
        (1, ("sku", "quantity", "price", "due")),
        (2, ("007", 2, 3.5, date(2026, 1, 5))),
        (3, ("A-2", 10, 0.1, datetime(2026, 1, 5, 14, 30))),
        (4, (True, None, " x ", None)),
    ]
    assert type(table.rows[1].cells[3]) is date  # a datetime would compare unequal anyway
    assert isinstance(table.rows[1].cells[1], int | float)


def test_empty_leading_rows_and_columns_keep_sheet_positions() -> None:
    data = xlsx_bytes([[None, "sku", "quantity"], [None, "A-1", 2]], start_row=2)
    assert numbered(read_sheet(data)) == [
        (3, (None, "sku", "quantity")),
        (4, (None, "A-1", 2)),
    ]


def test_blank_xlsx_rows_are_left_out_but_counted() -> None:
    data = xlsx_bytes([["sku"], [], ["A-1"], ["   "], ["A-2"]])
    assert [row.number for row in read_sheet(data).rows] == [1, 3, 5]


def test_an_empty_first_sheet_is_a_table_without_rows() -> None:
    data = xlsx_bytes([], extra_sheets={"Later": [["sku"]]})
    assert read_sheet(data) == Table(())


def test_the_first_sheet_is_read_when_there_are_several() -> None:
    data = xlsx_bytes([["first"]], extra_sheets={"Second": [["second"]], "Third": [["third"]]})
    assert numbered(read_sheet(data)) == [(1, ("first",))]


def test_the_first_sheet_in_workbook_order_even_if_its_part_is_sheet2() -> None:
    # Swap which part each sheet points to: "Order" (first) now lives in sheet2.xml.
    data = xlsx_bytes([["sku"]], formulas={"B1": ("=1+1", 2)}, extra_sheets={"Other": [["x"]]})
    rels = part_text(data, "xl/_rels/workbook.xml.rels")
    swapped = rels.replace("sheet1.xml", "@").replace("sheet2.xml", "sheet1.xml")
    data = replace_part(data, "xl/_rels/workbook.xml.rels", swapped.replace("@", "sheet2.xml"))
    assert read_sheet(data).rows == (Row(1, ("x",), frozenset()),)


def test_a_chart_sheet_in_front_is_passed_over() -> None:
    buffer = io.BytesIO()
    with xlsxwriter.Workbook(buffer, {"in_memory": True}) as workbook:
        chart_sheet = workbook.add_chartsheet("Chart")
        # A name that XML must escape: calamine's name and workbook.xml's must still match.
        data_sheet = workbook.add_worksheet("Q&A <1> é")
        data_sheet.write_string(0, 0, "sku")
        data_sheet.write_formula(1, 1, "=1+1", None, 2)
        chart = workbook.add_chart({"type": "line"})
        chart.add_series({"values": "='Q&A <1> é'!$B$2:$B$2"})
        chart_sheet.set_chart(chart)
    table = read_sheet(buffer.getvalue())
    assert table.rows == (Row(1, ("sku", None)), Row(2, (None, 2), frozenset({1})))


def test_formula_cells_are_marked_with_their_column() -> None:
    data = xlsx_bytes(
        [["sku", "quantity", "price", "total"], ["A-1", 2, 3.5, None], ["A-2", None, 1, None]],
        formulas={"D2": ("=B2*C2", 7), "B3": ('=""', "")},
    )
    rows = read_sheet(data).rows
    assert rows[0].formulas == frozenset()
    assert rows[1] == Row(2, ("A-1", 2, 3.5, 7), frozenset({3}))
    assert rows[2] == Row(3, ("A-2", None, 1, None), frozenset({1}))


@pytest.mark.parametrize("cached", ["", "#DIV/0!"], ids=["empty", "error"])
def test_a_row_holding_only_a_formula_with_no_value_is_kept(cached: str) -> None:
    data = xlsx_bytes([["sku", "quantity"], ["A-1", 1]], formulas={"C4": ("=1/0", cached)})
    rows = read_sheet(data).rows
    assert [row.number for row in rows] == [1, 2, 4]
    assert rows[2] == Row(4, (None, None, None), frozenset({2}))


def test_shared_formulas_and_cells_without_references() -> None:
    # Excel writes copied formulas as shared ones, and `r` attributes are optional.
    sheet = f"""<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN_NS}"><sheetData>
<row><c t="inlineStr"><is><t>sku</t></is></c><c t="inlineStr"><is><t>qty</t></is></c></row>
<row r="3"><c t="inlineStr"><is><t>A-1</t></is></c><c><v>2</v></c>
 <c><f t="shared" ref="C3:C5" si="0">B3*2</f><v>4</v></c></row>
<row><c r="B4"><v>3</v></c><c><f t="shared" si="0"/><v>6</v></c></row>
<row><c r="C5"><f t="shared" si="0"/><v></v></c></row>
</sheetData></worksheet>"""
    data = replace_part(xlsx_bytes([["placeholder"]]), SHEET1, sheet.encode())
    assert read_sheet(data).rows == (
        Row(1, ("sku", "qty", None)),
        Row(3, ("A-1", 2, 4), frozenset({2})),
        Row(4, (None, 3, 6), frozenset({2})),
        Row(5, (None, None, None), frozenset({2})),
    )


def test_an_xlsx_named_csv_is_read_as_a_workbook() -> None:
    data = xlsx_bytes([["sku", "quantity"], ["007", 2]], formulas={"C2": ("=B2", 2)})
    assert read_sheet(data) == read_sheet(data)
    assert read_sheet(data).rows[1] == Row(2, ("007", 2, 2), frozenset({2}))


def test_a_truncated_workbook_is_damaged() -> None:
    data = xlsx_bytes([["sku"], ["A-1"]])
    assert refusal(data[: len(data) // 2]) == DAMAGED_WORKBOOK


@pytest.mark.parametrize(
    "sheet",
    [
        "<worksheet><sheetData><row",
        sheet_xml('<row r="1"><c r="A0"><f>1</f></c></row>'),
        sheet_xml('<row r="1"><c r="1A"><v>1</v></c></row>'),
        sheet_xml('<row r="x"><c><v>1</v></c></row>'),
    ],
    ids=["truncated", "row-zero", "backwards-reference", "row-not-a-number"],
)
def test_malformed_sheet_xml_is_damaged(sheet: str) -> None:
    data = replace_part(xlsx_bytes([["sku"]]), SHEET1, sheet.encode())
    assert refusal(data) == DAMAGED_WORKBOOK


def test_a_part_only_calamine_reads_is_damaged() -> None:
    data = replace_part(xlsx_bytes([["sku"]]), "xl/sharedStrings.xml", b"<sst><si><t>sku")
    assert refusal(data) == DAMAGED_WORKBOOK


def test_a_missing_sheet_part_is_damaged() -> None:
    data = xlsx_bytes([["sku"]])
    rels = part_text(data, "xl/_rels/workbook.xml.rels").replace("sheet1.xml", "gone.xml")
    data = replace_part(data, "xl/_rels/workbook.xml.rels", rels.encode())
    assert refusal(data) == DAMAGED_WORKBOOK


def test_a_zip_bomb_is_refused_from_its_declared_sizes() -> None:
    buffer = io.BytesIO(xlsx_bytes([["sku"], ["A-1"]]))
    with (
        zipfile.ZipFile(buffer, "a", zipfile.ZIP_DEFLATED) as archive,
        archive.open("xl/media/zeros.bin", "w") as entry,
    ):
        for _ in range(101):
            entry.write(bytes(1024 * 1024))
    data = buffer.getvalue()
    assert len(data) < 1024 * 1024  # small to send, 101 MB once unpacked
    assert refusal(data) == TOO_LARGE


def test_the_unpacked_size_limit_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    data = xlsx_bytes([["sku"], ["A-1"]])
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        unpacked = sum(info.file_size for info in archive.infolist())
    monkeypatch.setattr(workbooks, "MAX_UNPACKED_BYTES", unpacked)
    assert len(read_sheet(data).rows) == 2
    monkeypatch.setattr(workbooks, "MAX_UNPACKED_BYTES", unpacked - 1)
    assert refusal(data) == TOO_LARGE


def test_a_stray_far_cell_is_refused_before_calamine_fills_the_gap() -> None:
    # 3,000 rows x 1,000 columns = 3 million cells, though only two hold anything.
    buffer = io.BytesIO()
    with xlsxwriter.Workbook(buffer, {"in_memory": True}) as workbook:
        sheet = workbook.add_worksheet()
        sheet.write_string(0, 0, "sku")
        sheet.write_string(2999, 999, "stray")
    assert refusal(buffer.getvalue()) == TOO_SPREAD_OUT


def test_cells_with_only_a_style_do_not_count_as_far() -> None:
    buffer = io.BytesIO()
    with xlsxwriter.Workbook(buffer, {"in_memory": True}) as workbook:
        sheet = workbook.add_worksheet()
        sheet.write_string(0, 0, "sku")
        sheet.write_blank(100_000, 100, None, workbook.add_format({"bold": True}))
    assert numbered(read_sheet(buffer.getvalue())) == [(1, ("sku",))]


@pytest.mark.parametrize(
    ("quantity", "number_format"),
    [
        (1e9, "[h]:mm:ss"),  # the first day count Python's timedelta refuses: OverflowError
        (1e15, "[mm]:ss"),  # far past it, in minutes
        (-1e15, "[h]:mm"),  # past chrono's milliseconds: calamine panics
        (-1e15, "yyyy-mm-dd"),  # a date before any calendar: calamine panics too
    ],
)
def test_a_number_no_date_or_time_can_be_is_refused_naming_its_row(
    quantity: float, number_format: str
) -> None:
    rows: list[list[object]] = [["sku", "quantity"], ["A-1", 2], ["A-2", quantity]]
    data = xlsx_bytes(rows, start_row=2, number_formats={"B5": number_format})
    assert refusal(data) == NO_SUCH_TIME.format(row=5)


def test_a_huge_number_formatted_as_a_number_is_read_as_in_a_csv() -> None:
    rows: list[list[object]] = [["sku", "quantity"], ["A-1", -1e15], ["A-2", 1e300]]
    data = xlsx_bytes(rows, number_formats={"B2": "0", "B3": "General"})
    assert numbered(read_sheet(data))[1:] == [(2, ("A-1", -1e15)), (3, ("A-2", 1e300))]


# --- Size --------------------------------------------------------------------------------

ROWS = 10_000


def timed_read(data: bytes, filename: str) -> tuple[Table, float]:
    """The table and the seconds read_sheet took."""
    started = time.perf_counter()
    table = read_sheet(data)
    return table, time.perf_counter() - started


def test_ten_thousand_row_csv_reads_quickly() -> None:
    lines = ["sku,quantity,price,note"] + [f"A-{n},{n},{n}.50,item {n}" for n in range(ROWS)]
    table, seconds = timed_read("\n".join(lines).encode(), "order.csv")
    assert len(table.rows) == ROWS + 1
    assert table.rows[-1] == Row(
        ROWS + 1, (f"A-{ROWS - 1}", str(ROWS - 1), f"{ROWS - 1}.50", f"item {ROWS - 1}")
    )
    assert seconds < 2.0


def test_ten_thousand_row_xlsx_reads_quickly() -> None:
    rows: list[list[object]] = [["sku", "quantity", "price", "note"]]
    rows += [[f"A-{n}", n, n + 0.5, f"item {n}"] for n in range(ROWS)]
    table, seconds = timed_read(xlsx_bytes(rows), "order.xlsx")
    assert len(table.rows) == ROWS + 1
    assert table.rows[-1] == Row(
        ROWS + 1, (f"A-{ROWS - 1}", ROWS - 1, ROWS - 0.5, f"item {ROWS - 1}")
    )
    assert seconds < 2.0
