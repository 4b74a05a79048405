"""Spreadsheet rows as plain values, and the rules for reading their cells.

The shell turns a CSV or XLSX file into a `Table`; the intake and terms rules read it here, so
CSV and XLSX get exactly the same checks, and the same problems (codes with their values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, time, timedelta
from decimal import Decimal, InvalidOperation

from core.problems import Place, Problem, ProblemCode, Value
from core.texts import flatten

# What a cell can hold once read: CSV gives text only; XLSX also numbers, booleans and dates.
Cell = str | int | float | bool | date | time | timedelta | None

# Characters that make a spreadsheet treat a cell as a formula (OWASP "CSV injection"):
# a leading =, +, -, @, or a tab / carriage return that some programs strip before them.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# A spreadsheet in a locale whose list separator is ";" splits a comma-separated file at every
# ";", quoted or not, so what follows one is the start of a cell there: a formula start after
# it (spaces and quotation marks between do not help) is defused as well.
_AFTER_SEMICOLON = re.compile(r';(?=[\s"]*[=+\-@])')
# Error messages quote at most this much of a cell, so one bad cell cannot flood a reply.
_QUOTE_LIMIT = 40


@dataclass(frozen=True)
class Row:
    """One non-empty row; `number` is the row number a spreadsheet shows (header = 1)."""

    number: int
    cells: tuple[Cell, ...]
    # Column indexes (0-based) of cells that hold an XLSX formula: their values are never used.
    formulas: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Table:
    """The first worksheet (or the CSV file), with wholly empty rows left out."""

    rows: tuple[Row, ...]
    # A semicolon CSV comes from a locale that writes 1.000,50: "," is the decimal mark there.
    decimal_comma: bool = False
    # The file holds more non-empty rows than a sheet may have, and reading stopped: `rows` is
    # then only the part read (or nothing), so a 5 MB file costs no more than the limit.
    more_rows: bool = False


def read_header(
    row: Row, required: tuple[str, ...], optional: tuple[str, ...], place: Place = Place.ROW
) -> tuple[dict[str, int], list[Problem]]:
    """Map column names to indexes; name every missing, unknown or repeated column."""
    columns: dict[str, int] = {}
    problems: list[Problem] = []
    known = (*required, *optional)
    expected = {"columns": ", ".join(required), "optional": ", ".join(optional)}
    if not any(normalise_header(value) in known for value in row.cells):
        return {}, [Problem(row.number, None, ProblemCode.NOT_A_HEADER, expected, place)]
    for index, cell in enumerate(row.cells):
        name = normalise_header(cell)
        if not name:
            continue  # an empty header cell; data under it is reported by the caller
        if name not in known:
            values: dict[str, Value] = {"value": quote(cell), **expected}
            problems.append(Problem(row.number, None, ProblemCode.UNKNOWN_COLUMN, values, place))
        elif name in columns:
            problems.append(Problem(row.number, name, ProblemCode.COLUMN_TWICE, {}, place))
        else:
            columns[name] = index
    missing = [name for name in required if name not in columns]
    if missing:
        counted: dict[str, Value] = {"names": ", ".join(missing), "count": len(missing)}
        problems.append(Problem(row.number, None, ProblemCode.MISSING_COLUMNS, counted, place))
    return columns, problems


def cell(row: Row, index: int | None) -> Cell:
    """The cell at `index`, or None past the end of a short row or for an absent column."""
    if index is None or index >= len(row.cells):
        return None
    return row.cells[index]


def stray_cells(row: Row, columns: dict[str, int], place: Place = Place.ROW) -> list[Problem]:
    """Values in columns that have no header: the user probably shifted a cell."""
    used = set(columns.values())
    return [
        Problem(
            row.number,
            None,
            ProblemCode.STRAY_CELL,
            {"value": quote(value), "letter": column_letter(i)},
            place,
        )
        for i, value in enumerate(row.cells)
        if i not in used and text_of(value).strip()
    ]


def column_letter(index: int) -> str:
    """0 -> "A", 25 -> "Z", 26 -> "AA": how a spreadsheet names a column."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def normalise_header(cell: Cell) -> str:
    """`" Supplier ID "` -> `"supplier_id"`: case-insensitive, spaces and hyphens ignored."""
    text = text_of(cell).strip().lower()
    return re.sub(r"[\s\-]+", "_", text)


def text_of(cell: Cell) -> str:
    """A cell as the text a spreadsheet shows: integral numbers without ".0"."""
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "TRUE" if cell else "FALSE"
    if isinstance(cell, float) and cell.is_integer():
        return str(int(cell))
    return str(cell)


def quote(cell: Cell) -> str:
    """A cell for an error message: flattened to one line (core.texts), quoted, shortened."""
    text = flatten(text_of(cell))
    if len(text) > _QUOTE_LIMIT:
        text = text[: _QUOTE_LIMIT - 1] + "…"
    return f'"{text}"'


def neutralise(text: str) -> str:
    """Outside text as a CSV cell no spreadsheet runs, in any locale: flattened to one line
    (core.texts), with a ' before a formula-like start and after a ";" that a formula follows."""
    flat = _AFTER_SEMICOLON.sub(";'", flatten(text))
    return "'" + flat if flat.startswith(FORMULA_START) else flat


def _point_decimal(text: str, decimal_comma: bool) -> str:
    """Number text with "," for thousands and "." for decimals, whatever the file's locale."""
    return text.translate(str.maketrans(",.", ".,")) if decimal_comma else text


# No real quantity or price is written with more characters than this. A longer digit string
# is not converted: Python refuses to print an int of over 4,300 digits (a reply quoting one
# would crash), and turning a 5 MB one into a number costs seconds.
MAX_NUMBER_TEXT = 24
# What a longer, well-formed digit string counts as: more than any limit, and short to print.
OVERSIZE: int = 10**MAX_NUMBER_TEXT


_WHOLE = re.compile(r"[+-]?(\d{1,3}(,\d{3})+|\d+)(\.0*)?")
_AMOUNT = re.compile(r"[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?")


def whole_number(cell: Cell, decimal_comma: bool = False) -> int | None:
    """The cell as a whole number, or None: "12", " 12 ", 12, 12.0 and "1,200" are whole
    ("1.200" where the decimal mark is a comma); a digit string too long to be a real number
    is OVERSIZE, whatever its digits."""
    if isinstance(cell, bool) or cell is None:
        return None
    if isinstance(cell, int):
        return cell
    if isinstance(cell, float):
        return int(cell) if cell.is_integer() else None
    if not isinstance(cell, str):
        return None  # a date or a time is never a quantity
    text = cell.strip()
    if text.isascii() and text.isdigit() and len(text) <= MAX_NUMBER_TEXT:
        return int(text)  # plain digits, as most quantities are typed
    text = _point_decimal(text, decimal_comma)
    if not _WHOLE.fullmatch(text):
        return None
    if len(text) > MAX_NUMBER_TEXT:
        return -OVERSIZE if text.startswith("-") else OVERSIZE
    return int(Decimal(text.replace(",", "")))


def rupees_to_paisa(cell: Cell, decimal_comma: bool = False) -> int | None:
    """A rupee amount with at most two decimals as integer paisa, or None if it is not one."""
    if isinstance(cell, bool) or cell is None or not isinstance(cell, str | int | float):
        return None
    if isinstance(cell, str):
        text = _point_decimal(cell.strip(), decimal_comma)
    else:
        text = repr(cell) if isinstance(cell, float) else str(cell)
    if not _AMOUNT.fullmatch(text):
        return None
    if len(text) > MAX_NUMBER_TEXT:
        return -OVERSIZE if text.startswith("-") else OVERSIZE
    try:
        amount = Decimal(text.replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the pattern above admits only decimals
        return None
    paisa = amount * 100
    return int(paisa) if paisa == paisa.to_integral_value() else None
