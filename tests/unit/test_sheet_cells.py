"""Sheet cells, property-based (issue 21): whatever a requester puts in a CSV or an XLSX sheet,
reading it (bot.files.sheets) and checking it (core.drafting.intake.check_sheet) ends in a refusal
of the file, one of the readers' sentences with its values, or a table whose check gives either
purchase orders or problems; each can be said in English and in Urdu (bot.words.texts), and nothing
else is ever raised.

The readers are called in this process, as the parse worker calls them (bot.files.parsing), so a
failure shows its traceback here instead of the worker's PARSE_FAILED.
"""

from __future__ import annotations

import csv
import functools
import io
from datetime import datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xlsxwriter.utility import xl_rowcol_to_cell

from bot.files import limits
from bot.files.sheets import read_csv_text, read_sheet
from bot.words import texts
from bot.words.i18n import Language, translator
from core.drafting.intake import build_draft, check_sheet
from core.drafting.sheets import MAX_DATA_ROWS, MAX_QUANTITY
from core.drafting.tables import Cell, Table
from core.drafting.terms import Terms, parse_terms
from core.errors import UnreadableSheet
from core.purchasing.submissions import Submission
from tests.helpers.bot import TERMS
from tests.helpers.urdu import english_runs
from tests.helpers.xlsx import xlsx_bytes

UR = translator(Language.UR)
NAME = "restock.csv"
LEAD = f"{NAME}: not accepted; nothing was created. Please fix:"
# Every sentence a reader refuses a file with (tests/unit/test_file_refusals counts them).
SENTENCES = {
    value
    for name, value in vars(limits).items()
    if name.isupper() and isinstance(value, str) and value.endswith(".")
}
# Fast enough for every run, and never failing on a slow machine's timing.
QUICK = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# What a requester's cells hold: the header's names, the terms' codes, numbers in every
# spelling, text that looks like a formula or a delimiter, and any text at all.
NAMES = ["sku", "quantity", "supplier_id", "notes", " SKU ", "Supplier ID", "qty", ""]
CODES = ["CBL-USBC-1M", "TEA-500G", "CHG-65W", "SUP-KHI-02", "sup-lhr-01", "NOPE-1"]
NUMBERS = [
    "1", "2", "0", "-0", "-1", "50", "1,000", "1.000,50", "2.5", "1e309", "-1e309", "NaN",
    "inf", "1_000", "0x10", "١٢", "١٢٣", "²", "½", "9" * 30, "9" * 5_000, "1000001",
    " 7 ", "+3", "007",
]  # fmt: skip
HOSTILE = [
    "=cmd|' /C calc'!A0", "+1", "@SUM(1)", '"', '""', "a,b", "a;b", "a\tb", "line\nbreak",
    "\r", "\x00", "\x1b[31m", "\u202e", "\ufeff", "x" * 10_000, "x" * 10_001, "   ",
]  # fmt: skip
TEXT_CELLS = st.one_of(
    st.sampled_from(NAMES + CODES + NUMBERS + HOSTILE),
    st.integers().map(str),
    st.floats().map(repr),
    st.text(max_size=12),
)


@functools.cache
def terms() -> Terms:
    """tests/data/terms/good.csv, as imported."""
    found, problems = parse_terms(read_csv_text(TERMS.read_bytes()))
    assert found is not None, problems
    return found


def said(data: bytes) -> str:
    """What the requester would be told of `data`, the properties checked on the way."""
    try:
        table = read_sheet(data)
    except UnreadableSheet as refused:
        assert refused.text in SENTENCES, refused.text
        assert str(refused) == refused.text.format(**refused.params)
        return both(functools.partial(texts.refusal, texts.Refusing.SHEET, NAME, refused))
    numbers = well_formed(table)
    orders, problems = check_sheet(table, terms())
    assert bool(orders) != bool(problems)  # purchase orders, or why there are none
    assert all(problem.row in numbers or problem.row == 0 for problem in problems)
    for n, order in enumerate(orders, start=1):
        draft = build_draft(order, f"PO-2026-{n:04d}", terms(), {}, None)
        assert all(1 <= line.quantity <= MAX_QUANTITY for line in draft.lines)
        assert draft.total_paisa == sum(line.total_paisa for line in draft.lines)
    result = Submission(problems=tuple(problems))
    return both(functools.partial(texts.submission, result, NAME)) if problems else "accepted"


def well_formed(table: Table) -> set[int]:
    """The table's row numbers, checked to be as a spreadsheet shows them."""
    numbers = [row.number for row in table.rows]
    assert numbers == sorted(set(numbers)) and all(n >= 1 for n in numbers)
    assert len(table.rows) <= 1 + MAX_DATA_ROWS
    for row in table.rows:
        assert all(isinstance(cell, Cell) for cell in row.cells)  # None among them
    return set(numbers)


def both(render: Any) -> str:
    """A refusal said in English and in Urdu: the lead naming the file, then the reasons, and
    no English sentence in the Urdu outside an isolated value."""
    english, urdu = render(tr=translator(Language.EN)), render(tr=UR)
    assert english.splitlines()[0] == LEAD
    assert len(urdu.splitlines()) == len(english.splitlines())
    assert english_runs(urdu) == []
    return english


@st.composite
def csv_files(draw: st.DrawFn) -> bytes:
    """A CSV file as a spreadsheet or a hand would write it: often the real header."""
    header = draw(st.one_of(st.permutations(NAMES[:4]), st.lists(TEXT_CELLS, max_size=5)))
    rows = draw(st.lists(st.lists(TEXT_CELLS, max_size=5), max_size=6))
    delimiter = draw(st.sampled_from([",", ";", "\t"]))
    quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, quoting=quoting, lineterminator="\r\n")
    writer.writerows([list(header), *rows])
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "cp1252", "utf-16"]))
    return buffer.getvalue().encode(encoding, errors="replace")


@QUICK
@given(csv_files())
def test_any_csv_is_refused_or_checked_and_said(data: bytes) -> None:
    said(data)


@QUICK
@given(st.binary(max_size=300))
def test_any_bytes_are_refused_or_checked_and_said(data: bytes) -> None:
    said(data)


@QUICK
@given(csv_files())
def test_any_csv_read_as_terms_is_refused_or_a_table(data: bytes) -> None:
    try:
        table = read_csv_text(data)
    except UnreadableSheet as refused:
        assert refused.text in SENTENCES
        return
    well_formed(table)
    parse_terms(table)


# XLSX cells as a spreadsheet stores them, each number perhaps shown in a format that makes
# calamine read it as a date, a time or a duration.
FORMATS = ["General", "0.00", "@", "yyyy-mm-dd", "hh:mm", "[h]:mm:ss", "yyyy-mm-dd hh:mm"]
XLSX_CELLS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e9, -1e15, 1e15, 1e300, -1e300, 2958466.0, -1.0, 0.5]),
    st.datetimes(min_value=datetime(1900, 3, 1), max_value=datetime(9999, 12, 31)),
    st.times(),
    TEXT_CELLS,
)


@st.composite
def workbooks(draw: st.DrawFn) -> tuple[list[list[Any]], dict[str, str]]:
    """A workbook's rows, under the real header, and the format of each of its numbers."""
    rows = [list(draw(st.permutations(NAMES[:4])))]
    rows += draw(st.lists(st.lists(XLSX_CELLS, max_size=4), max_size=4))
    formats = {
        xl_rowcol_to_cell(r, c): draw(st.sampled_from(FORMATS))
        for r, row in enumerate(rows)
        for c, value in enumerate(row)
        if isinstance(value, int | float) and not isinstance(value, bool)
    }
    return rows, formats


@settings(QUICK, max_examples=60)
@given(workbooks())
def test_any_workbook_is_refused_or_checked_and_said(
    workbook: tuple[list[list[Any]], dict[str, str]],
) -> None:
    rows, formats = workbook
    said(xlsx_bytes(rows, number_formats=formats))
