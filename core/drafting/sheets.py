"""Restock sheets: the rows a requester sends, checked on their own before any pricing.

Every problem is reported with the row number a spreadsheet shows; a sheet with any problem
makes no purchase order. Cells are data: a formula is never evaluated, and no text in a sheet
is ever read as an instruction or an approval.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import NamedTuple

from core.drafting.tables import (
    OVERSIZE,
    Cell,
    Row,
    Table,
    column_letter,
    quote,
    read_header,
    stray_cells,
    text_of,
    whole_number,
)
from core.problems import Problem, ProblemCode, Value

REQUIRED = ("sku", "quantity")
# ship_to: the id of the branch the row is delivered to (core.company); needed_by: the date the
# requester needs it by.
OPTIONAL = ("supplier_id", "notes", "ship_to", "needed_by")
# What one Telegram upload or one approval card can reasonably carry.
MAX_SHEET_BYTES = 5 * 1024 * 1024
MAX_DATA_ROWS = 10_000
TOO_MANY_ROWS = Problem(0, None, ProblemCode.TOO_MANY_ROWS, {"limit": MAX_DATA_ROWS})
# No restock line is this large; the cap keeps every total inside a 64-bit integer of paisa
# (1,000,000 units x Rs 1,000,000 x 10,000 lines < 2**63).
MAX_QUANTITY = 1_000_000
# Long enough for "deliver to the Saddar branch before Friday", short enough for a card.
MAX_NOTE = 300


@dataclass(frozen=True)
class Item:
    """A sheet row that names a SKU: what the requester asks for, not yet priced.

    `quantity` is 0 when the row's quantity was unusable; that problem is already reported.
    """

    row: int
    sku: str
    quantity: int
    supplier_id: str | None = None
    note: str = ""
    ship_to: str | None = None  # a branch id as typed (lower case); checked against the company
    needed_by: date | None = None


def too_big(size: int) -> Problem | None:
    """The problem refusing a file of `size` bytes, or None if the size is fine."""
    if size <= MAX_SHEET_BYTES:
        return None
    shown = math.ceil(size * 10 / 1024 / 1024) / 10  # rounded up: 5 MB + 1 byte is "5.1 MB"
    limit = MAX_SHEET_BYTES // 1024 // 1024
    values: dict[str, Value] = {"size": f"{shown:.1f}", "limit": limit}
    return Problem(0, None, ProblemCode.FILE_TOO_BIG, values)


def read_items(table: Table) -> tuple[list[Item], list[Problem]]:
    """Check the header and every row; return the items and every problem found."""
    # First: a file cut at the limit was not read to its end, so nothing else about it is known.
    if table.more_rows:
        return [], [TOO_MANY_ROWS]
    if not table.rows:
        return [], [Problem(0, None, ProblemCode.EMPTY_SHEET)]
    header, *rows = table.rows
    # A header cell computed by a formula (a spilled array, say) could rename any column.
    if header.formulas:
        return [], [
            Problem(
                header.number,
                None,
                ProblemCode.HEADER_FORMULA,
                {"cell": f"{column_letter(index)}{header.number}"},
            )
            for index in sorted(header.formulas)
        ]
    columns, problems = read_header(header, REQUIRED, OPTIONAL)
    if problems:
        return [], problems
    if not rows:
        return [], [Problem(0, None, ProblemCode.NO_ROWS)]
    if len(rows) > MAX_DATA_ROWS:  # a reader that does not cut at the limit
        return [], [TOO_MANY_ROWS]
    # A row holds a stray cell only if it reaches a column without a header: most rows end
    # before the first such column, and need no look at their cells.
    covered = next(i for i in range(len(columns) + 1) if i not in columns.values())
    indexes = _Columns(
        columns["sku"],
        columns["quantity"],
        *(columns.get(name) for name in ("supplier_id", "notes", "ship_to", "needed_by")),
    )
    items = []
    for row in rows:
        row_problems = _formulas(row, columns) if row.formulas else []
        item = _read_row(row, indexes, row_problems, table.decimal_comma)
        if len(row.cells) > covered:
            row_problems += stray_cells(row, columns)
        if item is not None:
            items.append(item)
        problems.extend(row_problems)
    return items, problems


class _Columns(NamedTuple):
    """The index of each column a sheet row is read from; None for an absent optional one."""

    sku: int
    quantity: int
    supplier_id: int | None
    notes: int | None
    ship_to: int | None
    needed_by: int | None


def _formulas(row: Row, columns: dict[str, int]) -> list[Problem]:
    return [
        Problem(row.number, name, ProblemCode.FORMULA)
        for name, index in columns.items()
        if index in row.formulas
    ]


def _quantity_problem(number: int, raw: Cell, quantity: int | None) -> Problem | None:
    """What is wrong with a row's quantity cell, if anything."""
    if quantity is not None and 1 <= quantity <= MAX_QUANTITY:
        return None  # a whole number is never blank, a date or a time
    if not text_of(raw).strip():
        return Problem(number, "quantity", ProblemCode.EMPTY)
    if isinstance(raw, date | time | timedelta):  # Excel turned "10/3" into a date
        return Problem(number, "quantity", ProblemCode.DATE_NOT_QUANTITY, {"value": quote(raw)})
    if quantity is None:
        return Problem(number, "quantity", ProblemCode.NOT_WHOLE, {"value": quote(raw)})
    if quantity < 1:
        shown = quote(raw) if quantity <= -OVERSIZE else str(quantity)
        return Problem(number, "quantity", ProblemCode.BELOW_ONE, {"value": shown})
    shown = quote(raw) if quantity >= OVERSIZE else f"{quantity:,}"
    values: dict[str, Value] = {"value": shown, "limit": MAX_QUANTITY}
    return Problem(number, "quantity", ProblemCode.ABOVE_ROW_LIMIT, values)


def _read_row(
    row: Row, columns: _Columns, problems: list[Problem], decimal_comma: bool
) -> Item | None:
    """The row as an item if it names a SKU, even with other problems, so that the SKU is
    checked against the terms too and the requester sees everything wrong at once."""
    cells, formulas, width = row.cells, row.formulas, len(row.cells)

    def value(index: int | None) -> Cell:
        # a formula is no value; a short row or an absent column holds nothing
        if index is None or index >= width or index in formulas:
            return None
        return cells[index]

    sku = _plain(value(columns.sku))
    supplier, note = _plain(value(columns.supplier_id)), _plain(value(columns.notes))
    raw_quantity = value(columns.quantity)
    quantity = whole_number(raw_quantity, decimal_comma)
    if not sku and columns.sku not in formulas:
        problems.append(Problem(row.number, "sku", ProblemCode.EMPTY))
    if columns.quantity not in formulas:  # a formula is reported as one already
        problem = _quantity_problem(row.number, raw_quantity, quantity)
        if problem is not None:
            problems.append(problem)
    if len(note) > MAX_NOTE:
        values: dict[str, Value] = {"length": len(note), "limit": MAX_NOTE}
        problems.append(Problem(row.number, "notes", ProblemCode.TOO_LONG, values))
    ship_to = _plain(value(columns.ship_to)).lower()
    raw_date = value(columns.needed_by)
    needed_by = None if raw_date is None else _date(raw_date)
    if needed_by is None and text_of(raw_date).strip():
        values = {"value": quote(raw_date)}
        problems.append(Problem(row.number, "needed_by", ProblemCode.NOT_A_DATE, values))
    if not sku:
        return None
    usable = quantity is not None and 1 <= quantity <= MAX_QUANTITY
    valid = quantity if usable and quantity is not None else 0  # 0: already reported
    return Item(row.number, sku, valid, supplier or None, note, ship_to or None, needed_by)


# How a date is typed in Pakistan: day first (20/12/2026, 20-12-2026, 20.12.2026), or ISO.
_ISO_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_DAY_FIRST = re.compile(r"(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})")


def _date(value: Cell) -> date | None:
    """A cell as a date: an XLSX date (its day, if it has a time too), or text written as
    2026-12-20 or day first as 20/12/2026; None for anything else."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    text = text_of(value).strip()
    if (iso := _ISO_DATE.fullmatch(text)) is not None:
        year, month, day = (int(part) for part in iso.groups())
    elif (typed := _DAY_FIRST.fullmatch(text)) is not None:
        day, month, year = (int(part) for part in typed.groups())
    else:
        return None
    try:
        return date(year, month, day)
    except ValueError:  # 31/02/2026
        return None


# Whitespace and control characters; of the printable characters, it matches the space alone.
_BLANKS = re.compile(r"[\s\x00-\x1f\x7f]+")


def _plain(value: Cell) -> str:
    """Cell text with runs of whitespace and control characters made one space."""
    if value is None:
        return ""
    text = text_of(value)
    if text.isprintable() and "  " not in text:  # nothing to replace: most cells
        return text.strip()
    return _BLANKS.sub(" ", text).strip()
