"""Reading cells: numbers, rupees, headers, quoting, formula neutralising, problem lists."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from bot.words.problems import problem_lines, problem_text
from core.drafting.sheets import _BLANKS, _plain
from core.drafting.tables import (
    _WHOLE,
    MAX_NUMBER_TEXT,
    OVERSIZE,
    Row,
    column_letter,
    neutralise,
    normalise_header,
    quote,
    read_header,
    rupees_to_paisa,
    whole_number,
)
from core.problems import Problem, ProblemCode


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("12", 12),
        (" 12 ", 12),  # spaces around a number are not a problem
        ("1,200", 1200),  # Excel's thousands separator
        ("12.0", 12),  # what some programs save for a whole number
        (12, 12),
        (12.0, 12),  # XLSX numbers arrive as floats
        ("-3", -3),  # negative: parsed, so the message can say "must be at least 1"
        ("12.5", None),
        (12.5, None),
        ("1,20", None),  # not a thousands grouping
        ("twelve", None),
        ("", None),
        (None, None),
        (True, None),  # a TRUE cell is not a quantity
        (date(2026, 1, 5), None),  # a date typed in the quantity column
        ("=1+1", None),  # a formula is text, never evaluated
    ],
)
def test_whole_number(cell, expected):
    assert whole_number(cell) == expected


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "007",
        "1" * MAX_NUMBER_TEXT,
        "1" * (MAX_NUMBER_TEXT + 1),
        "\u0661\u0662",
        "\u00b2",
        "1\u00a0",
    ],
)
def test_plain_digits_read_as_the_pattern_reads_them(text):
    """Plain ASCII digits take a short cut; it gives what the general reading gives, and other
    digits (Arabic-Indic, superscript) and over-long strings go the general way."""
    general = _WHOLE.fullmatch(text.strip())
    if general is None:
        assert whole_number(text) is None
    elif len(text.strip()) > MAX_NUMBER_TEXT:
        assert whole_number(text) == OVERSIZE
    else:
        assert whole_number(text) == int(Decimal(text.strip())) == int(text)


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("1250.50", 125_050),
        ("1250.5", 125_050),
        ("1,250.50", 125_050),
        ("1250", 125_000),
        (1250.5, 125_050),
        (0.1, 10),  # repr(0.1) is "0.1": no binary-float drift
        ("0", 0),
        ("-5", -500),  # negative: parsed, so the message can say "must not be negative"
        ("1250.505", None),  # fractions of a paisa
        ("Rs 1250", None),
        ("1.2.3", None),
        ("", None),
        (None, None),
        (True, None),
    ],
)
def test_rupees_to_paisa(cell, expected):
    assert rupees_to_paisa(cell) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("=SUM(A1:A2)", "'=SUM(A1:A2)"),
        ("+92 300 1234567", "'+92 300 1234567"),
        ("-5", "'-5"),
        ("@cmd", "'@cmd"),
        ("\t=1", "'=1"),  # flattened first: the tab goes, the = is still defused
        ("Cable, 1 m", "Cable, 1 m"),
        ("", ""),
    ],
)
def test_neutralise_defuses_formula_starts_only(text, expected):
    assert neutralise(text) == expected


def test_headers_ignore_case_and_spaces():
    assert normalise_header(" Supplier ID ") == "supplier_id"
    assert normalise_header("QUANTITY") == "quantity"
    assert normalise_header("unit-price pkr") == "unit_price_pkr"


def test_read_header_names_unknown_repeated_and_missing_columns():
    row = Row(1, ("SKU", "Qty", "sku", "", "Notes"))
    columns, problems = read_header(row, ("sku", "quantity"), ("notes",))
    assert columns == {"sku": 0, "notes": 4}
    assert [problem_text(p) for p in problems] == [
        'Row 1: unknown column "Qty"; the columns are sku, quantity (optional: notes)',
        "Row 1, sku: this column appears twice",
        "Row 1: missing column quantity",
    ]


def test_quote_shortens_and_flattens():
    assert quote("a\nb") == '"a b"'
    assert quote("x" * 100) == '"' + "x" * 39 + '…"'
    assert quote(5.0) == '"5"'
    assert quote(None) == '""'


def test_column_letters():
    assert [column_letter(i) for i in (0, 25, 26, 27, 701, 702)] == [
        "A", "Z", "AA", "AB", "ZZ", "AAA",
    ]  # fmt: skip


def test_problem_lines_orders_by_row_and_caps_the_list():
    problems = [Problem(n, "quantity", ProblemCode.EMPTY) for n in range(60, 1, -1)]
    lines = problem_lines(problems, limit=50)
    assert lines[0] == "Row 2, quantity: is empty"
    assert lines[49] == "Row 51, quantity: is empty"
    assert lines[50] == "… and 9 more problems"
    assert len(lines) == 51
    whole = Problem(0, None, ProblemCode.NO_ROWS)
    assert problem_lines([whole]) == ["The sheet has a header but no rows to order."]
    assert problem_lines(problems[:2], limit=1)[-1] == "… and 1 more problem"


def test_the_only_printable_blank_is_the_space():
    """_plain passes printable text without a double space by unchanged (but stripped): that
    holds because no printable character but the space is whitespace or a control."""
    blanks = [c for c in map(chr, range(0x110000)) if _BLANKS.fullmatch(c)]
    assert [c for c in blanks if c.isprintable()] == [" "]
    for text in ["a  b", " a\tb ", "a\u00a0b", "a\u2028b", "x\x7fy", "plain", "", "TRUE"]:
        assert _plain(text) == _BLANKS.sub(" ", text).strip()
