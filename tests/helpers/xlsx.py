"""Real .xlsx bytes for tests, written by XlsxWriter, and a way to hand-edit one of their parts."""

from __future__ import annotations

import io
import zipfile
from datetime import date, datetime, time

import xlsxwriter
from xlsxwriter.utility import xl_cell_to_rowcol
from xlsxwriter.worksheet import Worksheet

_FORMATS = {datetime: "yyyy-mm-dd hh:mm:ss", date: "yyyy-mm-dd", time: "hh:mm:ss"}


def xlsx_bytes(
    rows: list[list[object]],
    *,
    formulas: dict[str, tuple[str, object]] | None = None,
    start_row: int = 0,
    extra_sheets: dict[str, list[list[object]]] | None = None,
    number_formats: dict[str, str] | None = None,
) -> bytes:
    """An .xlsx workbook whose first sheet holds `rows` (None = empty cell).

    `formulas` maps an A1 reference to (formula, cached value); `start_row` leaves that many
    empty rows above `rows` (formula references are absolute and are not shifted); each of
    `extra_sheets` follows the first sheet, in order; `number_formats` maps an A1 reference
    of a number in `rows` to the format Excel shows it in ("[h]:mm", "yyyy-mm-dd").
    """
    buffer = io.BytesIO()
    with xlsxwriter.Workbook(buffer, {"in_memory": True}) as workbook:
        formats = {kind: workbook.add_format({"num_format": f}) for kind, f in _FORMATS.items()}
        first = workbook.add_worksheet("Order")
        _write_rows(first, rows, start_row, formats)
        for reference, number_format in (number_formats or {}).items():
            row, column = xl_cell_to_rowcol(reference)
            value = rows[row - start_row][column]
            first.write_number(
                row, column, value, workbook.add_format({"num_format": number_format})
            )
        for reference, (formula, cached) in (formulas or {}).items():
            row, column = xl_cell_to_rowcol(reference)
            first.write_formula(row, column, formula, None, cached)
        for name, sheet_rows in (extra_sheets or {}).items():
            _write_rows(workbook.add_worksheet(name), sheet_rows, 0, formats)
    return buffer.getvalue()


def _write_rows(sheet: Worksheet, rows: list[list[object]], start: int, formats: dict) -> None:
    """Each value with the writer that keeps its type: "007" stays text, dates get a format."""
    for row, values in enumerate(rows, start=start):
        for column, value in enumerate(values):
            if value is None:
                continue
            if isinstance(value, bool):  # before int: a bool is an int to Python
                sheet.write_boolean(row, column, value)
            elif isinstance(value, int | float):
                sheet.write_number(row, column, value)
            elif isinstance(value, str):
                sheet.write_string(row, column, value)
            elif isinstance(value, datetime | date | time):
                kind = next(k for k in (datetime, date, time) if isinstance(value, k))
                sheet.write_datetime(row, column, value, formats[kind])
            else:
                raise TypeError(f"no XLSX writer for {value!r}")


def replace_part(xlsx: bytes, part: str, content: bytes) -> bytes:
    """The same package with one part's bytes replaced (or added), for hand-crafted XML."""
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(xlsx)) as source,
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            if info.filename != part:
                target.writestr(info, source.read(info))
        target.writestr(part, content)
    return buffer.getvalue()


def part_text(xlsx: bytes, part: str) -> str:
    """One part of the package as text, to edit it before `replace_part`."""
    with zipfile.ZipFile(io.BytesIO(xlsx)) as archive:
        return archive.read(part).decode()
