"""Supplier terms files: every problem named by line and column, and a content identity."""

from __future__ import annotations

import random
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.files.limits import EMPTY_FILE
from bot.files.sheets import read_csv_text
from bot.words.problems import PROBLEM_TEXTS, problem_lines
from core.drafting.tables import Row, Table, quote
from core.drafting.terms import (
    REQUIRED,
    Offer,
    content_hash,
    match_key,
    parse_terms,
    version_id,
)
from core.errors import UnreadableSheet
from core.problems import ProblemCode

DATA = Path(__file__).parent.parent / "data" / "terms"
CASES = tomllib.loads((DATA / "cases.toml").read_text())["case"]


def terms_of(name: str):
    terms, problems = parse_terms(read_csv_text((DATA / name).read_bytes()))
    return terms, problem_lines(problems)


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_bad_terms_file_is_refused_with_every_problem_named(case):
    terms, lines = terms_of(case["file"])
    assert terms is None  # an invalid file is not used at all
    assert lines == case["expected"]


def test_empty_terms_file():
    with pytest.raises(UnreadableSheet, match=EMPTY_FILE):
        read_csv_text((DATA / "empty.csv").read_bytes())


def test_good_terms_are_read_into_suppliers_and_offers():
    terms, lines = terms_of("good.csv")
    assert lines == [] and terms is not None
    assert sorted(terms.suppliers) == ["SUP-KHI-02", "SUP-LHR-01"]
    assert terms.suppliers["SUP-KHI-02"].masked_email == "sa***@saddar.com.pk"
    assert terms.offer("sup-khi-02", "pb-20k") == Offer(
        "SUP-KHI-02", "PB-20K", "20,000 mAh power bank", 899_900, 5, None
    )
    assert terms.offer("SUP-KHI-02", "TEA-500G").description == "چائے کی پتی، 500 گرام"
    # cheapest first, whatever the order in the file
    assert [o.supplier_id for o in terms.offers_of("CBL-USBC-1M")] == ["SUP-LHR-01", "SUP-KHI-02"]
    assert terms.offer("SUP-LHR-01", "CHG-65W").unit_price_paisa == 650_050


def _shuffled_csv(seed: int) -> bytes:
    """good.csv with its lines shuffled, its columns reordered and its header re-cased."""
    table = read_csv_text((DATA / "good.csv").read_bytes())
    header, *rows = (list(r.cells) for r in table.rows)
    rng = random.Random(seed)
    order = list(range(len(header)))
    rng.shuffle(order)
    rng.shuffle(rows)
    lines = [[header[i].upper() if rng.random() < 0.5 else f" {header[i]} " for i in order]]
    lines += [[row[i] for i in order] for row in rows]
    return "\n".join(",".join(f'"{cell}"' for cell in line) for line in lines).encode()


@given(st.integers(min_value=0, max_value=10_000))
def test_content_hash_ignores_line_order_column_order_and_header_case(seed):
    reference, _ = terms_of("good.csv")
    shuffled, problems = parse_terms(read_csv_text(_shuffled_csv(seed)))
    assert problems == [] and reference is not None and shuffled is not None
    assert content_hash(shuffled) == content_hash(reference)


def test_content_hash_changes_with_any_price():
    reference, _ = terms_of("good.csv")
    table = read_csv_text((DATA / "good.csv").read_bytes())
    rows = [list(r.cells) for r in table.rows]
    rows[1][5] = "450.01"  # one paisa more
    changed, _ = parse_terms(Table(tuple(Row(i + 1, tuple(r)) for i, r in enumerate(rows))))
    assert reference is not None and changed is not None
    assert content_hash(changed) != content_hash(reference)


def test_version_id_names_the_import_time_and_the_content():
    at = datetime(2026, 11, 29, 16, 18, 12, tzinfo=UTC)
    assert version_id("1a2b3c4d5e6f" + "0" * 52, at) == "20261129T161812Z-1a2b3c4d"


def test_codes_match_without_case_or_spaces():
    assert match_key(" Cbl-USBC-1m ") == match_key("CBL-USBC-1M")


def test_amounts_beyond_any_order_are_refused_before_they_reach_the_database():
    header = (DATA / "good.csv").read_text().splitlines()[0]
    line = "SUP1,Hall Road,orders@hallroad.pk,CBL-1,Cable,1000000.01,1,99999999999999999999"
    terms, problems = parse_terms(read_csv_text(f"{header}\n{line}\n".encode()))
    assert terms is None
    assert problem_lines(problems) == [
        "Line 2, unit_price_pkr: is more than the limit of Rs 1,000,000",
        "Line 2, max_qty: 99,999,999,999,999,999,999 is more than the limit of 1,000,000,000",
    ]


def test_a_semicolon_file_reads_the_comma_as_the_decimal_mark():
    """European Excel saves "1.250,50" with semicolons; it must not become Rs 125,050."""
    header = (DATA / "good.csv").read_text().splitlines()[0].replace(",", ";")
    line = "SUP1;Hall Road;orders@hallroad.pk;CBL-1;Cable, 1 m;1.250,50;1.000;"
    terms, problems = parse_terms(read_csv_text(f"{header}\n{line}\n".encode()))
    assert problems == [] and terms is not None
    (offer,) = terms.offers
    assert (offer.description, offer.unit_price_paisa, offer.min_qty) == (
        "Cable, 1 m",
        125_050,
        1000,
    )


def test_a_file_without_a_header_is_told_so_once():
    terms, problems = parse_terms(
        read_csv_text(b"SUP1,Hall Road,orders@hallroad.pk,CBL-1,C,4,1,\n")
    )
    assert terms is None
    assert problem_lines(problems) == [
        "Line 1: this is not a header; the first row must name the columns supplier_id, "
        "supplier_name, supplier_email, sku, description, unit_price_pkr, min_qty, max_qty "
        "(optional: category, payment_terms, lead_days, gst_percent, supplier_phone)"
    ]


def _terms_with_address(address: str):
    header = Row(1, REQUIRED)
    line = Row(2, ("SUP1", "Hall Road", address, "CBL-1", "Cable", "450", "1", ""))
    return parse_terms(Table((header, line)))


@pytest.mark.parametrize(
    "address",
    [
        pytest.param("ördérs@x.pk", id="non_ascii_local_part"),
        pytest.param("orders@пример.pk", id="non_ascii_domain"),
        pytest.param("a:b@x.pk", id="colon_a_group_in_the_to_header"),
        pytest.param("orders(@x.pk", id="comment_parenthesis"),
        pytest.param("=?utf-8?q?x?=@x.pk", id="encoded_word"),
        pytest.param("a%b@x.pk", id="percent_routing"),
        pytest.param("a!b@x.pk", id="bang_routing"),
        pytest.param('"quoted"@x.pk', id="quoted_local_part"),
        pytest.param("a@b@x.pk", id="two_at_signs"),
        pytest.param("a@-x.pk", id="label_starts_with_hyphen"),
        pytest.param("a@x-.pk", id="label_ends_with_hyphen"),
        pytest.param("a@x", id="one_label"),
        pytest.param("a @x.pk", id="space"),
        pytest.param("a@x.pk.", id="trailing_dot"),
        pytest.param("a@[127.0.0.1]", id="ip_literal"),
        pytest.param("a@127.0.0.1", id="dotted_quad"),
        pytest.param(".a@x.pk", id="leading_dot"),
        pytest.param("a.@x.pk", id="trailing_dot_in_local_part"),
        pytest.param("a..b@x.pk", id="doubled_dot"),
        pytest.param("Orders <a@x.pk>", id="display_name"),
        pytest.param("a@x.pk,b@y.pk", id="list"),
        pytest.param("a@x.pk\nBcc: c@y.pk", id="header_injection"),
        pytest.param("a\u200b@x.pk", id="zero_width_space"),
        pytest.param("x" * 65 + "@x.pk", id="local_part_over_64"),
    ],
)
def test_an_address_the_sender_cannot_use_as_is_is_refused_with_its_line(address: str) -> None:
    terms, problems = _terms_with_address(address)
    assert terms is None
    sentence = PROBLEM_TEXTS[ProblemCode.NOT_AN_ADDRESS].format(value=quote(address))
    assert problem_lines(problems) == [f"Line 2, supplier_email: {sentence}"]


@pytest.mark.parametrize(
    "address",
    [
        "orders@supplier.pk",
        "o.rders+po@sub.supplier.com.pk",
        "O'Brien_2@x-y.example",
        "a@xn--p1ai.pk",
    ],
)
def test_a_plain_dot_atom_address_is_accepted(address: str) -> None:
    terms, problems = _terms_with_address(address)
    assert problems == [] and terms is not None
    assert terms.suppliers["SUP1"].email == address


def test_an_empty_address_is_told_so() -> None:
    _, problems = _terms_with_address("")
    assert problem_lines(problems) == ["Line 2, supplier_email: is empty"]


TERMS_HEADER = (
    "supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,max_qty,"
    "payment_terms,lead_days,gst_percent\n"
)


def _terms_csv(*lines: str):
    return parse_terms(read_csv_text((TERMS_HEADER + "".join(lines)).encode()))


def test_payment_terms_lead_days_and_tax_are_read() -> None:
    terms, problems = _terms_csv(
        "S1,Hall Road,o@hr.pk,CBL-1,Cable,450,1,,30 days credit,3,18\n",
        "S1,Hall Road,o@hr.pk,CBL-2,Cable 2,500,1,,,5,17.5%\n",
        "S2,Saddar,o@sd.pk,CBL-1,Cable,460,1,,,,\n",
    )
    assert problems == [] and terms is not None
    assert terms.suppliers["S1"].payment_terms == "30 days credit"  # the blank row takes it
    assert terms.suppliers["S2"].payment_terms == ""
    one, two = terms.offer("S1", "CBL-1"), terms.offer("S1", "CBL-2")
    assert one is not None and two is not None
    assert (one.lead_days, one.gst_basis_points) == (3, 1800)
    assert (two.lead_days, two.gst_basis_points) == (5, 1750)
    offer = terms.offer("S2", "CBL-1")
    assert offer is not None and (offer.lead_days, offer.gst_basis_points) == (None, 0)


def test_terms_without_the_new_columns_keep_their_hash() -> None:
    old, _ = terms_of("good.csv")
    assert old is not None
    # A terms file of the same offers with empty new columns is the same content.
    header = (
        b"supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,max_qty"
    )
    text = (DATA / "good.csv").read_bytes()
    assert text.startswith(header)
    assert content_hash(old) == content_hash(parse_terms(read_csv_text(text))[0])
    taxed, _ = _terms_csv("S1,Hall Road,o@hr.pk,CBL-1,Cable,450,1,,,,18\n")
    untaxed, _ = _terms_csv("S1,Hall Road,o@hr.pk,CBL-1,Cable,450,1,,,,\n")
    assert taxed is not None and untaxed is not None
    assert content_hash(taxed) != content_hash(untaxed)


def test_bad_lead_days_tax_and_payment_terms_are_named_with_their_lines() -> None:
    terms, problems = _terms_csv(
        "S1,Hall Road,o@hr.pk,CBL-1,Cable,450,1,,30 days credit,-1,18\n",
        "S1,Hall Road,o@hr.pk,CBL-2,Cable,450,1,,cash on delivery,400,eighteen\n",
        "S1,Hall Road,o@hr.pk,CBL-3,Cable,450,1,,,2.5,101\n",
        f"S2,Saddar,o@sd.pk,CBL-3,Cable,450,1,,{'x' * 101},,18.123\n",
    )
    assert terms is None
    assert problem_lines(problems) == [
        'Line 2, lead_days: "-1" is not a whole number of days from 0 to 365',
        'Line 3, lead_days: "400" is not a whole number of days from 0 to 365',
        'Line 3, gst_percent: "eighteen" is not a tax rate: a percentage from 0 to 100 with at '
        "most two decimals, like 18",
        'Line 4, lead_days: "2.5" is not a whole number of days from 0 to 365',
        'Line 4, gst_percent: "101" is not a tax rate: a percentage from 0 to 100 with at most '
        "two decimals, like 18",
        "Line 5, payment_terms: is 101 characters long; the limit is 100",
        'Line 5, gst_percent: "18.123" is not a tax rate: a percentage from 0 to 100 with at '
        "most two decimals, like 18",
    ]


def test_two_payment_terms_for_one_supplier_are_named_on_the_later_line() -> None:
    terms, problems = _terms_csv(
        "S1,Hall Road,o@hr.pk,CBL-1,Cable,450,1,,,,\n",
        "S1,Hall Road,o@hr.pk,CBL-2,Cable,450,1,,30 days credit,,\n",
        "S1,Hall Road,o@hr.pk,CBL-3,Cable,450,1,,cash on delivery,,\n",
    )
    assert terms is None
    assert problem_lines(problems) == ["Line 4, payment_terms: differs from line 3 for supplier S1"]


PHONE_HEADER = (
    "supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,max_qty,"
    "supplier_phone\n"
)


def _phones_csv(*lines: str):
    return parse_terms(read_csv_text((PHONE_HEADER + "".join(lines)).encode()))


@pytest.mark.parametrize(
    ("written", "digits"),
    [
        ("0300-1234567", "923001234567"),
        ("+92 300 1234567", "923001234567"),
        ("0092 300 1234567", "923001234567"),
        ("(0300) 123 4567", "923001234567"),
        ("+971 50 123 4567", "971501234567"),
    ],
)
def test_a_suppliers_phone_is_kept_as_the_digits_whatsapp_takes(written: str, digits: str) -> None:
    terms, problems = _phones_csv(f'S1,Hall Road,o@hr.pk,CBL-1,Cable,450,1,,"{written}"\n')
    assert problems == [] and terms is not None
    assert terms.suppliers["S1"].phone == digits


def test_a_phone_is_one_per_supplier_and_a_bad_one_is_named_by_its_line() -> None:
    terms, problems = _phones_csv(
        "S1,Hall Road,o@hr.pk,CBL-1,Cable,450,1,,0300-1234567\n",
        "S1,Hall Road,o@hr.pk,CBL-2,Cable 2,450,1,,\n",  # blank: takes line 2's
        "S1,Hall Road,o@hr.pk,CBL-3,Cable 3,450,1,,0301-7654321\n",
        "S2,Saddar,o@sd.pk,CBL-1,Cable,460,1,,call me\n",
        "S3,Anarkali,o@ak.pk,CBL-1,Cable,460,1,,12\n",
    )
    assert terms is None
    assert problem_lines(problems) == [
        "Line 4, supplier_phone: differs from line 2 for supplier S1",
        'Line 5, supplier_phone: "call me" is not a phone number: 7 to 15 digits, with only '
        "spaces and + - ( ) among them, like +92 42 3575 0000",
        'Line 6, supplier_phone: "12" is not a phone number: 7 to 15 digits, with only '
        "spaces and + - ( ) among them, like +92 42 3575 0000",
    ]


def test_terms_with_a_phone_are_other_content_and_without_keep_their_hash() -> None:
    plain, _ = _phones_csv("S1,Hall Road,o@hr.pk,CBL-1,Cable,450,1,,\n")
    phoned, _ = _phones_csv("S1,Hall Road,o@hr.pk,CBL-1,Cable,450,1,,0300-1234567\n")
    bare = parse_terms(
        read_csv_text(
            b"supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,"
            b"max_qty\nS1,Hall Road,o@hr.pk,CBL-1,Cable,450,1,\n"
        )
    )[0]
    assert plain is not None and phoned is not None and bare is not None
    assert content_hash(plain) == content_hash(bare) != content_hash(phoned)
