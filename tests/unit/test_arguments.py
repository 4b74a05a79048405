"""The typed-argument parsers (bot.words.arguments) the bot and the CLI share: a user id the
database holds or None, a PO number or None, and typed text repeated safely; never an exception."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.words.arguments import BIGINT_MAX, parse_po_number, parse_user_id
from core.texts import ECHO_LIMIT, echo


@pytest.mark.parametrize(
    ("text", "user_id"),
    [
        ("2002", 2002),
        ("007", 7),  # leading zeros are only zeros
        (str(BIGINT_MAX), BIGINT_MAX),  # the largest the database holds
        (str(BIGINT_MAX + 1), None),  # PostgreSQL would refuse it, SQLite's driver overflow
        ("99999999999999999999999", None),
        ("0", None),  # nobody's id
        ("-1", None),
        ("+5", None),  # int() takes it; an id is digits only
        ("1_000", None),  # int() takes it too
        (" 12", None),
        ("12\n", None),
        ("۱۲۳", None),  # Urdu digits: int() reads them; ids are written 0-9
        ("0x10", None),
        ("1e309", None),
        ("", None),
        ("\x00", None),
    ],
)
def test_a_user_id_is_ascii_digits_within_bigint(text, user_id):
    assert parse_user_id(text) == user_id


@pytest.mark.parametrize(
    ("text", "po"),
    [
        ("PO-2026-0001", "PO-2026-0001"),
        ("po-2026-0001", "PO-2026-0001"),  # typed in lower case
        ("PO-2026-0001\n", None),  # a trailing newline is not part of it
        ("\x00", None),  # PostgreSQL's text refuses a NUL: never looked up
        ("ﬁ-1", None),  # upper() would make it "FI-1": checked before
        ("P" * 65, None),  # longer than any PO number
        ("PO--1", None),
        ("", None),
    ],
)
def test_a_po_number_is_a_plain_identifier(text, po):
    assert parse_po_number(text) == po


def test_an_echo_is_quoted_escaped_and_short():
    assert echo("tomorrow") == "'tomorrow'"
    assert echo("a\x00\u200fb") == "'a\\x00\\u200fb'"
    assert echo("x" * 4000) == "'" + "x" * ECHO_LIMIT + "…'"


@settings(max_examples=500)
@given(st.one_of(st.text(), st.integers().map(str), st.from_regex(r"[0-9]{15,25}", fullmatch=True)))
def test_any_text_is_an_id_the_database_holds_or_none(text):
    user_id = parse_user_id(text)
    assert user_id is None or (1 <= user_id <= BIGINT_MAX and str(user_id) == text.lstrip("0"))


@settings(max_examples=300)
@given(st.text())
def test_any_text_is_a_po_number_or_none_and_any_echo_is_short_and_printable(text):
    po = parse_po_number(text)
    assert po is None or (po.isascii() and "\x00" not in po and len(po) <= 64)
    shown = echo(text)
    # At most ECHO_LIMIT characters and "…", each escaped in ten at most (\U0010ffff), quoted.
    assert len(shown) <= (ECHO_LIMIT + 1) * 10 + 2 and shown.isprintable()
