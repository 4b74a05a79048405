"""The restock-sheet corpus: sheets a requester might send, and exactly what they are told.

Every case in tests/data/sheets/cases.toml (its header explains the keys) goes through what the
bot does with an upload: the size check, `read_sheet`, then `check_sheet` against the supplier
terms. A CSV case is then typed into an XLSX workbook and must give the same answer: CSV and
XLSX alike. A few cases are generated here instead of stored: the row limit, the size limit,
and a 10,000-row sheet drafted end to end with each phase timed (`pytest -s` shows the times).
"""

from __future__ import annotations

import csv
import functools
import io
import re
import time
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from bot.files.sheets import read_csv_text, read_sheet
from bot.words.flags import flag_text as describe
from bot.words.problems import problem_lines, problem_text
from core.drafting.drafts import Draft
from core.drafting.flags import FlagCode
from core.drafting.intake import Order, build_draft, check_sheet
from core.drafting.sheets import MAX_DATA_ROWS, MAX_SHEET_BYTES, too_big
from core.drafting.tables import Row, Table
from core.drafting.terms import REQUIRED, Terms, parse_terms
from core.errors import UnreadableSheet
from tests.helpers.xlsx import xlsx_bytes

DATA = Path(__file__).parent.parent / "data"
SHEETS = DATA / "sheets"
CASES: list[dict[str, Any]] = tomllib.loads((SHEETS / "cases.toml").read_text("utf-8"))["case"]
# Files in the folder that are not sheets of a case of their own.
NOT_CASES = {"cases.toml", "terms_numeric.csv"}
VERSION = "20261129T120000Z-c0ffee00"  # a stored version's name; drafts need one
DUAL_ABOVE_PAISA = 500_000 * 100  # the default MANZOORI_DUAL_APPROVAL_ABOVE_PKR
# A cell a requester's spreadsheet would have stored as a number: no sign but "-", no leading
# zero ("00123" stays text, as a column formatted as Text keeps it), no thousands separator.
PLAIN_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")


def case_id(case: dict[str, Any]) -> str:
    return str(case.get("file") or case["name"])


@functools.cache
def terms_from(path: Path) -> Terms:
    """Terms as the admin imported them, with a version name as the store gives them."""
    terms, problems = parse_terms(read_csv_text(path.read_bytes()))
    assert terms is not None, problem_lines(problems)
    return replace(terms, version=VERSION)


def case_terms(case: dict[str, Any]) -> Terms:
    return terms_from(SHEETS / case["terms"] if "terms" in case else DATA / "terms" / "good.csv")


@dataclass(frozen=True)
class Answer:
    """What the requester is told: a refusal of the file, or the sheet's problem lines."""

    refusal: str | None
    lines: list[str]
    orders: list[Order]


def answer(data: bytes, terms: Terms) -> Answer:
    """The upload as the bot handles it: the size first, then the file, then its rows."""
    refusal = too_big(len(data))
    if refusal is not None:
        return Answer(problem_text(refusal), [], [])
    try:
        table = read_sheet(data)
    except UnreadableSheet as error:
        return Answer(str(error), [], [])
    orders, problems = check_sheet(table, terms)
    return Answer(None, problem_lines(problems), orders)


def case_bytes(case: dict[str, Any]) -> bytes:
    """The stored file, or the XLSX-only case's workbook."""
    if "file" in case:
        return (SHEETS / case["file"]).read_bytes()
    rows = [[None if value == "" else value for value in row] for row in case["rows"]]
    formulas = {ref: (f, cached) for ref, (f, cached) in case.get("formulas", {}).items()}
    return xlsx_bytes(rows, formulas=formulas, start_row=case.get("start_row", 0))


def retyped_as_xlsx(case: dict[str, Any]) -> bytes:
    """The CSV's rows typed into a workbook: plain numbers as numbers, other cells as text."""
    data = (SHEETS / case["file"]).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("cp1252")
    records = csv.reader(io.StringIO(text, newline=""), delimiter=case.get("delimiter", ","))
    return xlsx_bytes([[typed(value) for value in record] for record in records])


def typed(value: str) -> object:
    if value == "":
        return None
    if PLAIN_NUMBER.fullmatch(value):
        return float(value) if "." in value else int(value)
    return value


def drafted(orders: list[Order], terms: Terms) -> list[Draft]:
    return [
        build_draft(order, f"PO-2026-{n:04d}", terms, {}, DUAL_ABOVE_PAISA)
        for n, order in enumerate(orders, start=1)
    ]


def as_case_orders(drafts: list[Draft]) -> list[dict[str, Any]]:
    """Drafts in the shape of a case's `orders`: what the approver will read."""
    return [
        {
            "supplier": draft.supplier_id,
            "lines": [
                [line.sku, line.quantity, line.unit_price_paisa, line.note] for line in draft.lines
            ],
            "total_paisa": draft.total_paisa,
            "flags": [[str(flag.code), describe(flag)] for flag in draft.flags],
        }
        for draft in drafts
    ]


def check(got: Answer, case: dict[str, Any], terms: Terms, lines: list[str]) -> None:
    if "refusal" in case:
        assert got == Answer(case["refusal"], [], [])
        return
    assert got.refusal is None
    assert got.lines == lines
    if lines:
        assert got.orders == []  # a sheet with any problem makes no purchase order
    elif "orders" in case:
        assert as_case_orders(drafted(got.orders, terms)) == case["orders"]


def retyped(case: dict[str, Any]) -> bool:
    return "file" in case and case["file"].endswith(".csv") and "refusal" not in case


# --- The corpus -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_sheet_gets_exactly_the_expected_answer(case: dict[str, Any]) -> None:
    terms = case_terms(case)
    check(answer(case_bytes(case), terms), case, terms, case.get("expected"))


@pytest.mark.parametrize(
    "case", [c for c in CASES if retyped(c) and c.get("xlsx", True)], ids=case_id
)
def test_the_same_rows_as_xlsx_get_the_same_answer(case: dict[str, Any]) -> None:
    terms = case_terms(case)
    check(answer(retyped_as_xlsx(case), terms), case, terms, case["expected"])


def test_every_file_in_the_folder_is_a_case() -> None:
    files = {path.name for path in SHEETS.iterdir()} - NOT_CASES
    assert files == {c["file"] for c in CASES if "file" in c}


def test_a_note_survives_windows_1252_exactly() -> None:
    data = (SHEETS / "cp1252.csv").read_bytes()
    assert "Café – 5 €".encode("cp1252") in data  # the file really is Windows-1252
    orders, lines = check_sheet(read_sheet(data), case_terms({}))
    assert lines == []
    notes = {line.item.sku: line.item.note for order in orders for line in order.lines}
    assert notes == {"TEA-500G": "Café – 5 €", "CBL-USBC-1M": "“rush” for Zoë’s shop"}


# --- Limits ---------------------------------------------------------------------------------

ROW_LIMIT_LINE = (
    "The sheet has more than 10,000 rows to order; the limit is 10,000. Split it into smaller "
    "sheets."
)


def csv_of(rows: list[list[object]]) -> bytes:
    return "".join(",".join(str(v) for v in row) + "\r\n" for row in rows).encode()


@pytest.mark.parametrize("kind", ["csv", "xlsx"])
def test_one_row_over_the_limit_refuses_the_whole_sheet(kind: str) -> None:
    rows: list[list[object]] = [["sku", "quantity"]]
    rows += [[f"SKU-{n:05d}", n % 40 + 1] for n in range(MAX_DATA_ROWS + 1)]
    data = csv_of(rows) if kind == "csv" else xlsx_bytes(rows)
    assert answer(data, case_terms({})) == Answer(None, [ROW_LIMIT_LINE], [])


def sheet_of_size(size: int) -> bytes:
    """A CSV of exactly `size` bytes: a header, then one long note."""
    head = b"sku,quantity,notes\r\nCBL-USBC-1M,10,"
    return head + b"x" * (size - len(head))


def test_a_file_over_5_mb_is_refused_before_it_is_read() -> None:
    assert too_big(MAX_SHEET_BYTES) is None  # 5 MB itself is fine
    data = sheet_of_size(6 * 1024 * 1024)
    assert answer(data, case_terms({})) == Answer("The file is 6.0 MB; the limit is 5 MB.", [], [])


OVER_BY_A_BYTE = MAX_SHEET_BYTES + 1


def test_a_file_just_over_5_mb_says_it_is_over() -> None:
    got = answer(sheet_of_size(OVER_BY_A_BYTE), case_terms({}))
    assert got.refusal == "The file is 5.1 MB; the limit is 5 MB."


# --- 10,000 rows, end to end ------------------------------------------------------------------

SUPPLIERS = [
    ("SUP-ALPHA", "Alpha Traders", "orders@alpha.example.pk"),
    ("SUP-BRAVO", "Bravo Wholesale", "sales@bravo.example.pk"),
    ("SUP-CHARLIE", "Charlie & Sons", "po@charlie.example.pk"),
]


def price_paisa(n: int) -> int:
    return (100 + n % 997) * 100 + n % 100


def quantity(n: int) -> int:
    return n % 40 + 1


@functools.cache
def many_terms() -> Terms:
    """10,000 offers, one SKU each, spread over three suppliers."""
    rows = [Row(1, REQUIRED)]  # the terms file's columns, in the documented order
    for n in range(MAX_DATA_ROWS):
        supplier = SUPPLIERS[n % 3]
        price = f"{price_paisa(n) // 100}.{price_paisa(n) % 100:02d}"
        cells = (*supplier, f"SKU-{n:05d}", f"Item {n}", price, "", "")
        rows.append(Row(n + 2, cells))
    terms, problems = parse_terms(Table(tuple(rows)))
    assert terms is not None, problem_lines(problems)
    return replace(terms, version=VERSION)


def many_rows() -> list[list[object]]:
    """10,000 distinct SKUs; every tenth row names its supplier (in lower case)."""
    rows: list[list[object]] = [["sku", "quantity", "supplier_id", "notes"]]
    for n in range(MAX_DATA_ROWS):
        supplier = SUPPLIERS[n % 3][0].lower() if n % 10 == 0 else None
        rows.append([f"SKU-{n:05d}", quantity(n), supplier, f"row {n + 2}"])
    return rows


@pytest.mark.parametrize("kind", ["csv", "xlsx"])
def test_ten_thousand_rows_become_three_priced_drafts(kind: str) -> None:
    terms = many_terms()
    rows = many_rows()
    if kind == "csv":
        data = csv_of([["" if v is None else v for v in row] for row in rows])
    else:
        data = xlsx_bytes(rows)

    started = time.perf_counter()
    table = read_sheet(data)
    read_at = time.perf_counter()
    orders, lines = check_sheet(table, terms)
    checked_at = time.perf_counter()
    drafts = drafted(orders, terms)
    drafted_at = time.perf_counter()
    print(
        f"\n{kind}, {len(data):,} bytes: read_sheet {read_at - started:.3f} s, "
        f"check_sheet {checked_at - read_at:.3f} s, build_draft x{len(drafts)} "
        f"{drafted_at - checked_at:.3f} s"
    )

    assert lines == []
    assert [d.supplier_id for d in drafts] == [s[0] for s in SUPPLIERS]
    for index, draft in enumerate(drafts):
        mine = [n for n in range(MAX_DATA_ROWS) if n % 3 == index]
        assert len(draft.lines) == len(mine)
        assert draft.total_paisa == sum(quantity(n) * price_paisa(n) for n in mine)
        assert draft.total_paisa == sum(line.total_paisa for line in draft.lines)
        assert draft.lines[0].note == f"row {mine[0] + 2}"
        over = draft.total_paisa > DUAL_ABOVE_PAISA
        assert {flag.code for flag in draft.flags} == ({FlagCode.DUAL_APPROVAL} if over else set())
    assert drafted_at - started < 10.0
