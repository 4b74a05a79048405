"""The PO's CSV (the supplier's attachment and the Details document): no cell is a formula in
any locale, and no cell splits into two."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.outbox.emails import CSV_COLUMNS, render_csv
from core.drafting.drafts import Draft, DraftLine
from core.drafting.tables import FORMULA_START, neutralise

# Cells a requester or a terms list can write, each trying to become a formula or a new field.
HOSTILE = [
    pytest.param("ok;=1+2", id="formula_after_semicolon"),
    pytest.param('ok; "=1+2"', id="formula_after_semicolon_space_and_quote"),
    pytest.param("=1+2", id="equals"),
    pytest.param("+1", id="plus"),
    pytest.param("-1", id="minus"),
    pytest.param("@SUM(1)", id="at"),
    pytest.param("a,b", id="comma"),
    pytest.param('"q"', id="quotes"),
    pytest.param('a","=1', id="quote_comma_formula"),
    pytest.param("\t=1", id="tab_led"),
    pytest.param("\r=1", id="cr_led"),
    pytest.param("x\n=1", id="newline_then_formula"),
    pytest.param("\u200b=1", id="zero_width_then_formula"),
    pytest.param("a;b;+c;@d", id="several_semicolons"),
]
DELIMITERS = [
    pytest.param(",", id="comma_locale"),
    pytest.param(";", id="semicolon_locale"),
    pytest.param("\t", id="tab"),
]


def _csv(value: str) -> str:
    line = DraftLine("CBL-1", value, 2, 45_050, note=value)
    draft = Draft("PO-1", "SUP-1", "S", "orders@supplier.pk", "T1", (line, line))
    return render_csv(draft)


def _fields(text: str, delimiter: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text), delimiter=delimiter))


def _no_formula(text: str, delimiter: str) -> None:
    for row in _fields(text, delimiter):
        for field in row:
            assert not field.lstrip().startswith(FORMULA_START), (delimiter, field)


@pytest.mark.parametrize("delimiter", DELIMITERS)
@pytest.mark.parametrize("value", HOSTILE)
def test_no_field_starts_with_a_formula_character(value: str, delimiter: str) -> None:
    _no_formula(_csv(value), delimiter)


@pytest.mark.parametrize("value", HOSTILE)
def test_every_field_is_quoted_and_none_splits(value: str) -> None:
    text = _csv(value)
    assert text.splitlines()[0] == ",".join(f'"{name}"' for name in CSV_COLUMNS)
    rows = _fields(text, ",")
    assert len(text.splitlines()) == len(rows) == 3  # a line break in a cell is no new row
    for row in rows[1:]:
        assert row == ["CBL-1", neutralise(value), "2", "450.50", "901.00", neutralise(value)]


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("ok;=1+2", "ok;'=1+2"),  # a ";" locale starts a cell after the ";"
        ('ok; "=1+2"', 'ok;\' "=1+2"'),
        ("=1+2", "'=1+2"),
        ("\r=1", "'=1"),  # flattened first, then defused
        ("a;b", "a;b"),  # a ";" before anything harmless is left alone
        ("Cable, 1 m -5%", "Cable, 1 m -5%"),
    ],
)
def test_neutralise(value: str, cell: str) -> None:
    assert neutralise(value) == cell


@given(st.text(max_size=30))
def test_any_text_is_one_field_and_never_a_formula(value: str) -> None:
    text = _csv(value)
    assert [row[1] for row in _fields(text, ",")[1:]] == [neutralise(value)] * 2
    for delimiter in (",", ";", "\t"):
        _no_formula(text, delimiter)
