"""An Excel .xlsx workbook's first worksheet as rows, read by calamine only after the zip and
its XML have been checked against the limits (bot.files.limits): a zip bomb, a stray far cell,
or one long string repeated everywhere is refused before anything is materialised."""

from __future__ import annotations

import functools
import io
import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from xml.etree import ElementTree
from zipfile import BadZipFile

import python_calamine

from bot.files.limits import (
    CELL_LIMIT,
    CELL_TOO_LONG,
    DAMAGED_WORKBOOK,
    LONG_SHARED_TEXT,
    MAX_CELL_CHARS,
    MAX_CELLS,
    MAX_SHEET_TEXT,
    MAX_UNPACKED_BYTES,
    NO_SUCH_TIME,
    NOT_A_SHEET,
    TOO_LARGE,
    TOO_MUCH_TEXT,
    TOO_SPREAD_OUT,
    UNUSUAL_PARTS,
)
from core.drafting.sheets import MAX_DATA_ROWS
from core.drafting.tables import Cell, Row, Table
from core.errors import UnreadableSheet

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
_STRING_ITEM_TAGS = frozenset(f"{{{namespace}}}si" for namespace in _SHEET_NAMESPACES)
# A part name as Excel writes one: printable ASCII without a backslash (nor NUL, nor spaces).
_PLAIN_NAME = re.compile(r"[!-\[\]-~]+")


def read_xlsx(data: bytes) -> Table:
    """The first worksheet of an XLSX workbook, with its formula cells marked.

    Every guard reads exactly the parts calamine reads (the names are refused unless already
    normal), and refuses before calamine materialises anything too large.
    """
    with _zip_errors(), zipfile.ZipFile(io.BytesIO(data)) as archive:
        _refuse_unusual_names(archive)
        if sum(info.file_size for info in archive.infolist()) > MAX_UNPACKED_BYTES:
            raise UnreadableSheet(TOO_LARGE)
        # A .docx, .ods or .xlsb is a zip too, but not a workbook read here.
        if "xl/workbook.xml" not in archive.namelist():
            raise UnreadableSheet(NOT_A_SHEET)
        parts = _sheet_parts(archive)  # before calamine follows the same targets
        with _calamine_errors():
            workbook = python_calamine.CalamineWorkbook.from_filelike(io.BytesIO(data))
        first = _first_worksheet(workbook)
        if first is None:
            return Table(())
        index, name = first
        if name not in parts:
            raise UnreadableSheet(DAMAGED_WORKBOOK)
        longest = _longest_shared_string(archive)
        scan = _scan_sheet(archive, parts[name])
    _refuse_oversized(scan, longest)
    if scan.filled_rows > 1 + MAX_DATA_ROWS:
        return Table((), more_rows=True)  # the header and the rows allowed, and more
    with _calamine_errors():
        grid = _grid(workbook.get_sheet_by_index(index))
    return Table(tuple(_xlsx_rows(grid, scan)))


def _grid(sheet: python_calamine.CalamineSheet) -> Sequence[Sequence[Cell]]:
    """Every cell from A1 as calamine converts it; refuse a number formatted as a date or a
    duration that no date or duration can be (a quantity of 10^15 formatted [h]:mm, say)."""
    try:
        # Without skip_empty_area, grid[0] is row 1 and column 0 is A, however far data starts.
        return sheet.to_python(skip_empty_area=False)
    except BaseException as error:  # a PanicException is no Exception: see _out_of_range
        row = _unconvertible_row(sheet) if _out_of_range(error) else None
        if row is None:
            raise
    raise UnreadableSheet(NO_SUCH_TIME, row=row)


def _out_of_range(error: BaseException) -> bool:
    """Whether calamine failed to make a date or a duration of a number: Python's timedelta
    refuses more than 999,999,999 days (OverflowError), and chrono panics past 2^63
    milliseconds, which pyo3 raises as a PanicException (a BaseException no module exports)."""
    return isinstance(error, OverflowError) or type(error).__name__ == "PanicException"


def _unconvertible_row(sheet: python_calamine.CalamineSheet) -> int | None:
    """The number of the first row calamine fails to convert, found again one row at a time
    (iter_rows starts at row 1 too); None if every row converts."""
    rows, number = sheet.iter_rows(), 0
    while True:
        number += 1
        try:
            next(rows)
        except StopIteration:
            return None
        except BaseException as error:
            if _out_of_range(error):
                return number
            raise


def _refuse_oversized(scan: _SheetScan, longest_shared: int) -> None:
    """Refuse a sheet whose cells reach too far or would spell out too much text."""
    if scan.long_cell_row is not None:
        raise UnreadableSheet(CELL_TOO_LONG, row=scan.long_cell_row, limit=CELL_LIMIT)
    if scan.last_row * scan.last_column > MAX_CELLS:
        raise UnreadableSheet(TOO_SPREAD_OUT)
    # Each cell of type "s" costs at most the longest shared string: a bound, not a sum, so
    # no list of string lengths is kept.
    if scan.shared_cells * longest_shared > MAX_SHEET_TEXT:
        raise UnreadableSheet(TOO_MUCH_TEXT, limit=f"{MAX_SHEET_TEXT:,}")


def _refuse_unusual_names(archive: zipfile.ZipFile) -> None:
    """Refuse members whose names are not plain relative paths, or that appear twice.

    Python's zipfile and calamine's zip reader would otherwise disagree on which member a
    name means (one cuts a name at a NUL byte, the other does not; a duplicate is the first
    member to one reader and the last to the other).
    """
    names = [info.orig_filename for info in archive.infolist()]
    if len(set(names)) != len(names):
        raise UnreadableSheet(UNUSUAL_PARTS)
    for name in names:
        if not _normal(name.removesuffix("/")):  # a directory entry ends with "/"
            raise UnreadableSheet(UNUSUAL_PARTS)


def _normal(path: str) -> bool:
    """Whether a part name is already normal: printable ASCII segments, none empty, . or .."""
    if not _PLAIN_NAME.fullmatch(path):
        return False
    return all(segment not in ("", ".", "..") for segment in path.split("/"))


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


def _sheet_parts(archive: zipfile.ZipFile) -> dict[str, str]:
    """The zip path of every sheet by name, via workbook.xml and its relationships, resolved
    as calamine resolves them; refuse a target that is not already a normal part name."""
    sheets = [e for e in _parse_part(archive, "xl/workbook.xml").iter() if _local(e.tag) == "sheet"]
    links = _parse_part(archive, "xl/_rels/workbook.xml.rels").iter()
    relationships = [e for e in links if _local(e.tag) == "Relationship"]
    targets = {e.get("Id"): e.get("Target") for e in relationships}
    names = [sheet.get("name") for sheet in sheets]
    # Two sheets of one name, or two relationships of one id, could each be read as either.
    if len(targets) != len(relationships) or len(set(names)) != len(names):
        raise UnreadableSheet(UNUSUAL_PARTS)
    parts: dict[str, str] = {}
    for sheet in sheets:
        # r:id's namespace differs between transitional and strict OOXML; its local name not.
        rel_id = next((value for key, value in sheet.attrib.items() if _local(key) == "id"), None)
        target = targets.get(rel_id)
        name = sheet.get("name")
        if target is None or name is None:
            raise UnreadableSheet(DAMAGED_WORKBOOK)
        parts[name] = _resolve(target)
    return parts


def _resolve(target: str) -> str:
    """A worksheet's zip path as calamine finds it: "/xl/…" and "xl/…" as they are, anything
    else under xl/; refused unless that is already normal, so no reader normalises it."""
    # No "..", ".", "//" or backslash: calamine and posixpath would resolve them differently.
    # "/xl/…" is allowed because openpyxl writes it, and every reader strips the one "/".
    if target.startswith("/xl/"):
        path = target[1:]
    elif target.startswith("xl/"):
        path = target
    else:
        path = f"xl/{target}"
    if not _normal(path):
        raise UnreadableSheet(UNUSUAL_PARTS)
    return path


def _longest_shared_string(archive: zipfile.ZipFile) -> int:
    """Characters in the longest shared string; refuse one longer than any cell may be."""
    if "xl/sharedStrings.xml" not in archive.namelist():  # calamine reads this one name
        return 0
    scan = _StringScan()
    _feed(archive, "xl/sharedStrings.xml", scan)
    return scan.longest


class _StringScan:
    """Parser target for the shared strings: the length of each <si>, kept only as a maximum."""

    def __init__(self) -> None:
        self.longest = 0
        self._length = 0

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        """A new string item starts; runs and phonetic text inside it add to its length."""
        if tag in _STRING_ITEM_TAGS:
            self._length = 0

    def data(self, text: str) -> None:
        """Count the text (whitespace between items too: an over-estimate, never an under)."""
        self._length += len(text)
        if self._length > self.longest:
            self.longest = self._length
            if self._length > MAX_CELL_CHARS:  # stop now: the rest need not be read
                raise UnreadableSheet(LONG_SHARED_TEXT, limit=CELL_LIMIT)


def _parse_part(archive: zipfile.ZipFile, part: str) -> ElementTree.Element:
    """A small XML part of the package, parsed."""
    # Expat (2.4+) refuses entity-expansion bombs and ElementTree never fetches external
    # entities, so the stdlib parser is safe on these parts.
    with _zip_errors():
        return ElementTree.fromstring(archive.read(part))  # noqa: S314 - see above


def _scan_sheet(archive: zipfile.ZipFile, part: str) -> _SheetScan:
    """Stream a worksheet's XML: which cells hold a formula, and how far filled cells reach."""
    scan = _SheetScan()
    _feed(archive, part, scan)
    return scan


def _feed(archive: zipfile.ZipFile, part: str, target: object) -> None:
    """Stream one part of the package through a parser target, in 64 KB pieces."""
    # A parser target builds no tree, so memory stays flat however long the part is; expat is
    # safe here for the reasons given in _parse_part.
    parser = ElementTree.XMLParser(target=target)  # noqa: S314
    with _zip_errors(), archive.open(part) as stream:
        while chunk := stream.read(1 << 16):
            parser.feed(chunk)
        parser.close()


class _SheetScan:
    """Parser target for a worksheet: formula cells, the filled extent and rows, the cells
    that refer to a shared string, and the first row with a cell longer than any may be."""

    def __init__(self) -> None:
        self.formulas: dict[int, set[int]] = {}
        # 1-based (first row, first column, last row, last column) of array, spilled and
        # shared formulas: every cell in one is computed, not only the cell holding the <f>.
        self.ranges: list[tuple[int, int, int, int]] = []
        self.last_row = 0
        self.last_column = 0
        self.filled_rows = 0
        self.shared_cells = 0
        self.long_cell_row: int | None = None
        self._row = 0
        self._column = 0  # 1-based column of the cell being read
        self._filled_row = 0  # the last row counted in filled_rows
        self._length = 0  # characters of text since the current cell opened

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        """Follow rows and cells; an <f>, <v> or <is> belongs to the cell just opened."""
        # No `end` is defined, so expat never calls back for ends: that is the speed.
        if tag in _CELL_TAGS:
            reference = attributes.get("r")
            if reference is None:
                self._column += 1
            else:
                self._row, self._column = _position(reference)
            self._length = 0
            if attributes.get("t") == "s":
                self.shared_cells += 1
            if "cm" not in attributes:  # cell metadata: Excel's mark of a dynamic-array formula
                return
            self.formulas.setdefault(self._row, set()).add(self._column - 1)
        elif tag in _FORMULA_TAGS:  # also a shared formula's bare <f t="shared" si="0"/>
            self.formulas.setdefault(self._row, set()).add(self._column - 1)
            if "ref" in attributes:
                self.ranges.append(_range(attributes["ref"]))
        elif tag not in _VALUE_TAGS:  # a cell with only a style holds nothing
            if tag in _ROW_TAGS:  # `r` may be left out: then it is the next row
                self._row, self._column = int(attributes.get("r") or self._row + 1), 0
                self._length = 0
            return
        # The current cell holds a value or is computed: the extent reaches at least this far.
        row = self._row
        if row != self._filled_row:
            self._filled_row = row
            self.filled_rows += 1
        if row > self.last_row:
            self.last_row = row
        if self._column > self.last_column:
            self.last_column = self._column

    def data(self, text: str) -> None:
        """Count the text of the current cell: its value, inline string or formula."""
        # Text after a row's last cell counts towards that cell too: an over-estimate by the
        # few characters between tags that Excel writes, never an under-estimate.
        self._length += len(text)
        if self._length > MAX_CELL_CHARS and self.long_cell_row is None:
            self.long_cell_row = self._row

    def formula_columns(self, row: int) -> frozenset[int]:
        """0-based columns of the row's computed cells, ranges included (within the extent)."""
        columns = set(self.formulas.get(row, ()))
        for top, left, bottom, right in self.ranges:
            if top <= row <= bottom:
                columns.update(range(left - 1, min(right, self.last_column)))
        return frozenset(columns)


def _range(reference: str) -> tuple[int, int, int, int]:
    """1-based corners of "B2:C9" (or of the single cell "B2")."""
    first, _, last = reference.partition(":")
    top, left = _position(first)
    bottom, right = _position(last or first)
    if top < 1 or bottom < top or right < left:
        raise UnreadableSheet(DAMAGED_WORKBOOK)
    return top, left, bottom, right


def _position(reference: str) -> tuple[int, int]:
    """1-based (row, column) of a cell from its A1 reference."""
    # A row 0 is not caught here: calamine refuses it when it reads the sheet, after this scan.
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


def _xlsx_rows(grid: Sequence[Sequence[Cell]], scan: _SheetScan) -> Iterator[Row]:
    """Rows that hold a value or a formula, numbered as the sheet numbers them."""
    # calamine leaves out a formula cell whose cached value is empty, even in a row of its own;
    # such rows come from the XML scan so the caller can still report the formula.
    computed = bool(scan.formulas or scan.ranges)  # most sheets have no formula at all
    for number in sorted(set(range(1, len(grid) + 1)).union(scan.formulas)):
        values = grid[number - 1] if number <= len(grid) else ()
        cells: list[Cell] = [None if value == "" else value for value in values]
        columns = scan.formula_columns(number) if computed else _NO_COLUMNS
        if columns:
            cells.extend([None] * (max(columns) + 1 - len(cells)))
        if columns or any(_filled(cell) for cell in cells):
            yield Row(number, tuple(cells), frozenset(columns))


_NO_COLUMNS: frozenset[int] = frozenset()


def _filled(cell: Cell) -> bool:
    """Whether a cell holds something other than nothing or blanks."""
    return cell is not None and not (isinstance(cell, str) and not cell.strip())
