"""Writes the hostile-input corpus into tests/corpus/files/: `python -m tests.corpus.build`.

Every file is made here, from a plain workbook or plain text, so the corpus can be rebuilt and
reviewed; tests/corpus/expected.toml gives what each one must be answered with.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from tests.helpers.xlsx import part_text, xlsx_bytes

FILES = Path(__file__).parent / "files"
SHEET = "xl/worksheets/sheet1.xml"
RELS = "xl/_rels/workbook.xml.rels"
MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
# Fixed member times, so a rebuild gives the same bytes.
STAMP = (2026, 1, 1, 0, 0, 0)


def package(parts: list[tuple[str, bytes]]) -> bytes:
    """A zip of the parts in this order (a name may repeat: some cases need that)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in parts:
            info = zipfile.ZipInfo(name, STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, content)
    return buffer.getvalue()


def base_parts() -> list[tuple[str, bytes]]:
    """The parts of a valid workbook with a header and one row."""
    data = xlsx_bytes([["sku", "quantity"], ["CBL-USBC-1M", 2]])
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def with_parts(changes: dict[str, bytes], extra: list[tuple[str, bytes]] = ()) -> bytes:  # type: ignore[assignment]
    """The base workbook with some parts replaced, and further members appended."""
    parts = [(name, changes.get(name, content)) for name, content in base_parts()]
    return package(parts + list(extra))


def retargeted(target: str) -> bytes:
    """workbook.xml.rels with the first sheet's relationship pointing at `target`."""
    rels = part_text(xlsx_bytes([["x"]]), RELS)
    return rels.replace('Target="worksheets/sheet1.xml"', f'Target="{target}"').encode()


def sheet_xml(rows: str, extra: str = "") -> bytes:
    """A worksheet part whose <sheetData> holds `rows`."""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN}">'
        f"<sheetData>{rows}</sheetData>{extra}</worksheet>"
    ).encode()


def shared_strings(*strings: str) -> bytes:
    items = "".join(f"<si><t>{text}</t></si>" for text in strings)
    return f'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{MAIN}">{items}</sst>'.encode()


def header_row() -> str:
    return '<row r="1"><c r="A1" t="inlineStr"><is><t>sku</t></is></c>' + (
        '<c r="B1" t="inlineStr"><is><t>quantity</t></is></c></row>'
    )


def amplified(length: int, cells: int) -> bytes:
    """One shared string of `length` characters, referred to by `cells` cells."""
    # Cells without references, 100 to a row: the repetition is what makes the file small.
    row = "<row>" + '<c t="s"><v>0</v></c>' * 100 + "</row>"
    strings = shared_strings("x" * length)
    return with_parts({SHEET: sheet_xml(row * (cells // 100)), "xl/sharedStrings.xml": strings})


def workbooks() -> dict[str, bytes]:
    """The crafted XLSX cases by file name."""
    sheet = dict(base_parts())[SHEET]
    far = sheet_xml(header_row() + '<row r="1048576"><c r="XFD1048576"><v>1</v></c></row>')
    array = sheet_xml(
        header_row()
        + '<row r="2"><c r="A2" t="inlineStr"><is><t>CBL-USBC-1M</t></is></c>'
        + '<c r="B2"><f t="array" ref="B2:B3">{1000;1000}</f><v>1000</v></c></row>'
        + '<row r="3"><c r="A3" t="inlineStr"><is><t>TEA-500G</t></is></c>'
        + '<c r="B3"><v>1000</v></c></row>'
    )
    spilled_header = sheet_xml(
        '<row r="1"><c r="A1" t="inlineStr"><is><t>sku</t></is></c>'
        + '<c r="B1" t="str" cm="1"><f t="array" ref="B1:B2">VSTACK("quantity",1000)</f>'
        + "<v>quantity</v></c></row>"
        + '<row r="2"><c r="A2" t="inlineStr"><is><t>CBL-USBC-1M</t></is></c>'
        + '<c r="B2"><v>1000</v></c></row>'
    )
    long_inline = sheet_xml(
        header_row()
        + f'<row r="2"><c r="A2" t="inlineStr"><is><t>{"x" * 10_001}</t></is></c></row>'
    )
    return {
        # The case: a target with ".." and "." segments, and a member of that literal
        # name, so that a reader that normalises and one that does not read different parts.
        "dotdot_literal_member.xlsx": with_parts(
            {RELS: retargeted("worksheets/./../worksheets/sheet1.xml")},
            [("xl/worksheets/./../worksheets/sheet1.xml", far)],
        ),
        "dot_target.xlsx": with_parts({RELS: retargeted("./worksheets/sheet1.xml")}),
        "backslash_target.xlsx": with_parts({RELS: retargeted("worksheets\\sheet1.xml")}),
        "absolute_outside_xl.xlsx": with_parts({RELS: retargeted("/worksheets/sheet1.xml")}),
        "empty_segment_target.xlsx": with_parts({RELS: retargeted("worksheets//sheet1.xml")}),
        "duplicate_member.xlsx": with_parts({}, [(SHEET, far)]),
        "backslash_member.xlsx": with_parts({}, [("xl\\worksheets\\sheet2.xml", sheet)]),
        "far_cell.xlsx": with_parts({SHEET: far}),
        # 14 KB and 5 KB uploads that would each ask for gigabytes of text.
        "amplification_14k.xlsx": amplified(10_000, 60_000),
        "amplification_5k.xlsx": amplified(9_000, 20_000),
        "long_shared_string.xlsx": amplified(10_001, 1),
        "long_inline_string.xlsx": with_parts({SHEET: long_inline}),
        "array_formula.xlsx": with_parts({SHEET: array}),
        "spilled_header_formula.xlsx": with_parts({SHEET: spilled_header}),
        # Quantities calamine cannot turn into what their format says: Python's timedelta
        # overflows on the first, chrono panics on the second (found by test_sheet_cells).
        "duration_overflow.xlsx": formatted(1e15, "[h]:mm:ss"),
        "negative_date.xlsx": formatted(-1e15, "yyyy-mm-dd"),
    }


def formatted(quantity: float, number_format: str) -> bytes:
    """A sheet of one row whose quantity Excel shows in `number_format`."""
    rows: list[list[object]] = [["sku", "quantity"], ["CBL-USBC-1M", quantity]]
    return xlsx_bytes(rows, number_formats={"B2": number_format})


def texts() -> dict[str, bytes]:
    """The crafted CSV cases by file name."""
    rows = "".join(f"SKU-{n:05d},1\n" for n in range(10_001))
    return {
        "huge_number.csv": b"sku,quantity\nCBL-USBC-1M," + b"9" * 4_400 + b"\n",
        "unclosed_quote.csv": b'sku,quantity,notes\nA-1,2,ok\nA-2,3,"never closed\nA-3,4,x\n',
        "mixed_encoding.csv": "sku,quantity,notes\nA-1,2,کراچی\n".encode() + b"A-2,3,caf\xe9\n",
        "control_bytes.csv": b"sku,quantity\nA-1\x00,2\n",
        "too_many_rows.csv": ("sku,quantity\n" + rows).encode(),
    }


def main() -> None:
    """Write every case into tests/corpus/files/."""
    FILES.mkdir(exist_ok=True)
    for name, data in {**workbooks(), **texts()}.items():
        (FILES / name).write_bytes(data)


if __name__ == "__main__":
    main()
