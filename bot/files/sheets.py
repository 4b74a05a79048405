"""Uploaded CSV and XLSX files as `core.drafting.tables.Table`; the content, never the name,
tells which (a workbook: bot.files.workbooks; text: bot.files.csv_text). What a file may be
and the sentences that refuse it are in bot.files.limits.
"""

from __future__ import annotations

from bot.files.csv_text import UTF8_BOM, read_csv
from bot.files.limits import EMPTY_FILE, NOT_A_SHEET, NOT_CSV, OLD_OR_PROTECTED
from bot.files.workbooks import read_xlsx
from core.drafting.sheets import MAX_DATA_ROWS
from core.drafting.tables import Table
from core.errors import UnreadableSheet

_ZIP_MAGIC = b"PK\x03\x04"
_OLE2_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")


def read_sheet(data: bytes) -> Table:
    """A CSV or XLSX file's first sheet as rows; raise UnreadableSheet with one plain sentence.

    The content decides, not the file's name: an .xlsx renamed .csv is still read as a
    workbook, and a binary renamed .csv is still refused. Reading stops one row past the
    limit of rows to order, and the Table says so (`more_rows`).
    """
    if not data.removeprefix(UTF8_BOM):
        raise UnreadableSheet(EMPTY_FILE)
    if data.startswith(_ZIP_MAGIC):
        return read_xlsx(data)
    if data.startswith(_OLE2_MAGIC):
        raise UnreadableSheet(OLD_OR_PROTECTED)
    # The header and the rows allowed; a further non-empty row marks the table cut.
    return read_csv(data, NOT_A_SHEET, 1 + MAX_DATA_ROWS)


def read_csv_text(data: bytes) -> Table:
    """A CSV file (the supplier terms) as rows; anything else raises UnreadableSheet."""
    if not data.removeprefix(UTF8_BOM):
        raise UnreadableSheet(EMPTY_FILE)
    # A workbook (zip or OLE2) has NUL bytes in its first few bytes, so it is refused as binary.
    return read_csv(data, NOT_CSV, None)
