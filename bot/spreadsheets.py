"""Uploaded CSV and XLSX files as `core.tables.Table`; the content, never the name, tells which.

Every refusal is an `UnreadableSheet` carrying one of the sentences below, so the bot can send
it to the user as it is and tests can compare against the constant.
"""

from __future__ import annotations

import csv
import functools
import io
import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from xml.etree import ElementTree
from zipfile import BadZipFile

import python_calamine

from core.errors import UnreadableSheet
from core.tables import Cell, Row, Table

EMPTY_FILE = "The file is empty."
NOT_A_SHEET = (
    "This file is not a spreadsheet I can read: send a CSV file (UTF-8 or Windows-1252) "
    "or an Excel .xlsx workbook."
)
NOT_CSV = 'This file is not a CSV file I can read: save it from Excel as "CSV UTF-8" and send that.'
OLD_OR_PROTECTED = (
    "This file is an old Excel .xls file or a password-protected workbook: save it as .xlsx "
    "(without a password) or as CSV."
)
UNDECODABLE = (
    'This file could not be read as UTF-8 or Windows-1252 text: save it from Excel as "CSV UTF-8".'
)
MALFORMED_CSV = (
    'Row {row} of this CSV file could not be read: check its quotation marks ("), then save '
    "the file again."
)
UNCLOSED_QUOTE = (
    'Row {row}: a quotation mark (") opened in this row is never closed, so every row after it '
    "would be lost: close it, then save the file again."
)
CELL_TOO_LONG = (
    "Row {row}: a cell holds more than {limit:,} characters, far more than any sheet needs: "
    "check that row, then save the file again."
)
MIXED_ENCODING = (
    "Row {row} of this file is not UTF-8 text like the rest of it: save it from Excel as "
    '"CSV UTF-8" and send it again.'
)
DAMAGED_WORKBOOK = (
    "This Excel workbook is damaged or incomplete: open it in Excel, save it again as .xlsx, "
    "and send it again."
)
TOO_LARGE = (
    "This workbook is too large once unpacked (over 100 MB): keep only the rows you need, "
    "or save it as CSV."
)
TOO_SPREAD_OUT = (
    "The first sheet of this workbook spans too many cells: delete anything far below or to "
    "the right of your table, or save it as CSV."
)

# A zip bomb is refused on the sizes its directory declares, before anything is unpacked.
MAX_UNPACKED_BYTES = 100 * 1024 * 1024
# calamine holds the whole rectangle from A1 to the last filled cell in memory, so a single
# stray cell at XFD1048576 would ask for billions of cells; refuse before it tries.
MAX_CELLS = 2_000_000

_ZIP_MAGIC = b"PK\x03\x04"
_OLE2_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")
_UTF8_BOM = b"\xef\xbb\xbf"
# Excel's "Unicode Text" is UTF-16: full of NUL bytes, but the advice to save as UTF-8 fits.
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
# Control bytes are the same in UTF-8 and Windows-1252; text never holds any but tab, CR, LF.
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_DELIMITERS = (",", ";", "\t")
# A well-formed UTF-8 sequence beyond ASCII: a file that holds one is UTF-8, whatever else is in it.
_UTF8_SEQUENCE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}"
)
# A missing part raises KeyError, an unknown compression method NotImplementedError, and a
# malformed row or cell reference ValueError.
_BROKEN_PACKAGE = (BadZipFile, zlib.error, EOFError, NotImplementedError, KeyError, ValueError)
_COLUMN_LETTERS = re.compile(r"[A-Za-z]{1,3}")
# Worksheet tags in the transitional and the strict namespace; extensions such as <xm:f> in
# another namespace are not cells.
_SHEET_NAMESPACES = (
    "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
    "http://purl.oclc.org/ooxml/spreadsheetml/main",
)
_ROW_TAGS, _CELL_TAGS, _FORMULA_TAGS, _VALUE_TAGS = (
    frozenset(f"{{{namespace}}}{name}" for namespace in _SHEET_NAMESPACES for name in names)
    for names in (["row"], ["c"], ["f"], ["v", "is"])
)


def read_sheet(data: bytes) -> Table:
    """A CSV or XLSX file's first sheet as rows; raise UnreadableSheet with one plain sentence.

    The content decides, not the file's name: an .xlsx renamed .csv is still read as a
    workbook, and a binary renamed .csv is still refused.
    """
    if not data.removeprefix(_UTF8_BOM):
        raise UnreadableSheet(EMPTY_FILE)
    if data.startswith(_ZIP_MAGIC):
        return _read_xlsx(data)
    if data.startswith(_OLE2_MAGIC):
        raise UnreadableSheet(OLD_OR_PROTECTED)
    return _read_csv(data, NOT_A_SHEET)


def read_csv_text(data: bytes) -> Table:
    """A CSV file (the supplier terms) as rows; anything else raises UnreadableSheet."""
    if not data.removeprefix(_UTF8_BOM):
        raise UnreadableSheet(EMPTY_FILE)
    # A workbook (zip or OLE2) has NUL bytes in its first few bytes, so it is refused as binary.
    return _read_csv(data, NOT_CSV)


def _read_csv(data: bytes, not_text: str) -> Table:
    """CSV bytes as rows numbered by record; `not_text` is the sentence for binary content."""
    if data.startswith(_UTF16_BOMS):
        raise UnreadableSheet(UNDECODABLE)
    if _CONTROL_BYTES.search(data):
        raise UnreadableSheet(not_text)
    text = _decode(data.removeprefix(_UTF8_BOM))
    delimiter = _delimiter(text)
    # strict: a quotation mark left open at the end of the file is an error, not a cell that
    # silently swallows every later row.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[Row] = []
    number = 0
    try:
        # A record is a row as a spreadsheet shows it, even when a quoted cell spans lines.
        for number, record in enumerate(reader, start=1):
            if any(cell.strip() for cell in record):
                rows.append(Row(number, tuple(record)))
    except csv.Error as error:
        raise UnreadableSheet(_malformed(number + 1, str(error))) from error
    # Excel writes semicolons where the decimal mark is a comma (1.000,50).
    return Table(tuple(rows), decimal_comma=delimiter == ";")


def _malformed(row: int, why: str) -> str:
    """The sentence for a CSV record the csv module refused, naming the row it starts on."""
    if "field larger than field limit" in why:
        return CELL_TOO_LONG.format(row=row, limit=csv.field_size_limit())
    if "unexpected end of data" in why:
        return UNCLOSED_QUOTE.format(row=row)
    return MALFORMED_CSV.format(row=row)


def _decode(data: bytes) -> str:
    """The text as UTF-8; as Windows-1252 (what Excel's plain "CSV" writes) only when nothing in
    it is UTF-8 beyond ASCII, since a UTF-8 file with one stray byte would turn to mojibake."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        if _UTF8_SEQUENCE.search(data):
            row = data.count(b"\n", 0, error.start) + 1
            raise UnreadableSheet(MIXED_ENCODING.format(row=row)) from error
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        raise UnreadableSheet(UNDECODABLE) from None


def _delimiter(text: str) -> str:
    """The most frequent of , ; and tab on the first non-empty line, outside quotes; else ,."""
    # European Excel saves semicolons, and "Text (Tab delimited)" saves tabs.
    first = next((line for line in io.StringIO(text, newline="") if line.strip()), "")
    unquoted = re.sub(r'"[^"]*"', "", first)
    best = max(_DELIMITERS, key=unquoted.count)
    return best if unquoted.count(best) else ","


def _read_xlsx(data: bytes) -> Table:
    """The first worksheet of an XLSX workbook, with its formula cells marked."""
    with _zip_errors(), zipfile.ZipFile(io.BytesIO(data)) as archive:
        if sum(info.file_size for info in archive.infolist()) > MAX_UNPACKED_BYTES:
            raise UnreadableSheet(TOO_LARGE)
        # A .docx, .ods or .xlsb is a zip too, but not a workbook read here.
        if "xl/workbook.xml" not in archive.namelist():
            raise UnreadableSheet(NOT_A_SHEET)
        with _calamine_errors():
            workbook = python_calamine.CalamineWorkbook.from_filelike(io.BytesIO(data))
        first = _first_worksheet(workbook)
        if first is None:
            return Table(())
        index, name = first
        scan = _scan_sheet(archive, _sheet_part(archive, name))
    if scan.last_row * scan.last_column > MAX_CELLS:
        raise UnreadableSheet(TOO_SPREAD_OUT)
    with _calamine_errors():
        # Without skip_empty_area, grid[0] is row 1 and column 0 is A, however far data starts.
        grid = workbook.get_sheet_by_index(index).to_python(skip_empty_area=False)
    return Table(tuple(_xlsx_rows(grid, scan.formulas)))


@contextmanager
def _zip_errors() -> Iterator[None]:
    """Turn a broken archive or XML part into the damaged-workbook sentence."""
    try:
        yield
    except UnreadableSheet:
        raise  # already a sentence (it is a ValueError too, caught below otherwise)
    except (*_BROKEN_PACKAGE, ElementTree.ParseError) as error:
        raise UnreadableSheet(DAMAGED_WORKBOOK) from error


@contextmanager
def _calamine_errors() -> Iterator[None]:
    """Turn calamine's exceptions into the damaged-workbook sentence."""
    # No PasswordError can arise: an encrypted workbook is an OLE2 file, refused before this.
    try:
        yield
    except python_calamine.CalamineError as error:
        raise UnreadableSheet(DAMAGED_WORKBOOK) from error


def _first_worksheet(workbook: python_calamine.CalamineWorkbook) -> tuple[int, str] | None:
    """Index and name of the first worksheet in workbook order; chart sheets are passed over."""
    for index, sheet in enumerate(workbook.sheets_metadata):
        if sheet.typ == python_calamine.SheetTypeEnum.WorkSheet:
            return index, sheet.name
    return None


def _sheet_part(archive: zipfile.ZipFile, name: str) -> str:
    """The zip path of the worksheet called `name`, via workbook.xml and its relationships."""
    sheets = _parse_part(archive, "xl/workbook.xml").iter()
    sheet = next((e for e in sheets if _local(e.tag) == "sheet" and e.get("name") == name), None)
    # r:id's namespace differs between transitional and strict OOXML; its local name does not.
    attributes = {} if sheet is None else sheet.attrib
    rel_id = next((value for key, value in attributes.items() if _local(key) == "id"), None)
    links = _parse_part(archive, "xl/_rels/workbook.xml.rels").iter()
    targets = {e.get("Id"): e.get("Target") for e in links if _local(e.tag) == "Relationship"}
    target = targets.get(rel_id) if rel_id is not None else None
    if target is None:
        raise UnreadableSheet(DAMAGED_WORKBOOK)
    if target.startswith("/"):
        return target[1:]
    return posixpath.normpath(posixpath.join("xl", target))


def _parse_part(archive: zipfile.ZipFile, part: str) -> ElementTree.Element:
    """A small XML part of the package, parsed."""
    # Expat (2.4+) refuses entity-expansion bombs and ElementTree never fetches external
    # entities, so the stdlib parser is safe on these parts.
    with _zip_errors():
        return ElementTree.fromstring(archive.read(part))  # noqa: S314 - see above


def _scan_sheet(archive: zipfile.ZipFile, part: str) -> _SheetScan:
    """Stream a worksheet's XML: which cells hold a formula, and how far filled cells reach."""
    scan = _SheetScan()
    # A parser target builds no tree, so memory stays flat however long the sheet is; expat is
    # safe here for the reasons given in _parse_part.
    parser = ElementTree.XMLParser(target=scan)  # noqa: S314
    with _zip_errors(), archive.open(part) as stream:
        while chunk := stream.read(1 << 16):
            parser.feed(chunk)
        parser.close()
    return scan


class _SheetScan:
    """Parser target for a worksheet: formula columns by row number, and the filled extent."""

    def __init__(self) -> None:
        self.formulas: dict[int, set[int]] = {}
        self.last_row = 0
        self.last_column = 0
        self._row = 0
        self._column = 0  # 1-based column of the cell being read

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        """Follow rows and cells; an <f>, <v> or <is> belongs to the cell just opened."""
        # Only `start` is defined, so expat never calls back for ends or text: that is the speed.
        if tag in _CELL_TAGS:
            self._row, self._column = _position(attributes.get("r"), self._row, self._column + 1)
        elif tag in _FORMULA_TAGS:  # also a shared formula's bare <f t="shared" si="0"/>
            self.formulas.setdefault(self._row, set()).add(self._column - 1)
            self._stretch()
        elif tag in _VALUE_TAGS:  # a cell with only a style holds nothing
            self._stretch()
        elif tag in _ROW_TAGS:  # `r` may be left out: then it is the next row
            self._row, self._column = int(attributes.get("r") or self._row + 1), 0

    def _stretch(self) -> None:
        """The current cell holds something: the extent reaches at least this far."""
        if self._row > self.last_row:
            self.last_row = self._row
        if self._column > self.last_column:
            self.last_column = self._column


def _position(reference: str | None, row: int, next_column: int) -> tuple[int, int]:
    """1-based (row, column) of a cell: from its A1 reference, or the next column if it has none."""
    # A row 0 is not caught here: calamine refuses it when it reads the sheet, after this scan.
    if reference is None:
        return row, next_column
    letters = reference.rstrip("0123456789")
    return int(reference[len(letters) :]), _column_number(letters)


@functools.cache
def _column_number(letters: str) -> int:
    """1-based column of "A", "B", ... "XFD"; cached, as a sheet repeats the same few."""
    if not _COLUMN_LETTERS.fullmatch(letters):
        raise UnreadableSheet(DAMAGED_WORKBOOK)
    column = 0
    for letter in letters.upper():
        column = column * 26 + ord(letter) - ord("A") + 1
    return column


def _local(name: str) -> str:
    """An XML tag or attribute name without its {namespace}."""
    return name.rpartition("}")[2]


def _xlsx_rows(grid: Sequence[Sequence[Cell]], formulas: dict[int, set[int]]) -> Iterator[Row]:
    """Rows that hold a value or a formula, numbered as the sheet numbers them."""
    # calamine leaves out a formula cell whose cached value is empty, even in a row of its own;
    # such rows come from the XML scan so the caller can still report the formula.
    for number in sorted(set(range(1, len(grid) + 1)).union(formulas)):
        values = grid[number - 1] if number <= len(grid) else ()
        cells: list[Cell] = [None if value == "" else value for value in values]
        columns = formulas.get(number, set())
        if columns:
            cells.extend([None] * (max(columns) + 1 - len(cells)))
        if columns or any(_filled(cell) for cell in cells):
            yield Row(number, tuple(cells), frozenset(columns))


def _filled(cell: Cell) -> bool:
    """Whether a cell holds something other than nothing or blanks."""
    return cell is not None and not (isinstance(cell, str) and not cell.strip())
