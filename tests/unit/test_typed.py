"""Issue 28: a message's lines read as a request (core.purchasing.typed), the nearest SKUs
suggested, and whether a tap on its summary may act (core.purchasing.summaries)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.problems import Place, Problem, ProblemCode
from core.purchasing.requests import RequestLine
from core.purchasing.summaries import Standing, SummaryState, TypedRequest, standing
from core.purchasing.typed import (
    MAX_CHARS,
    MAX_LINES,
    Known,
    Typed,
    at_message_lines,
    read_message,
    suggest,
)
from tests.helpers.factories import T0

SKUS = ("CBL-USBC-1M", "CHG-65W-GAN", "PB-20K", "TEA-500G", "SCR-GLASS-A15", "CABLE")
KNOWN = Known(SKUS, {"liberty": "Liberty Market", "hallroad": "Hall Road"})


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("CBL-USBC-1M 40", RequestLine("CBL-USBC-1M", 40)),  # SKU, then quantity
        ("CHG-65W-GAN x 10", RequestLine("CHG-65W-GAN", 10)),  # x before the quantity
        ("CHG-65W-GAN x10", RequestLine("CHG-65W-GAN", 10)),
        ("CHG-65W-GAN × 10", RequestLine("CHG-65W-GAN", 10)),  # the multiplication sign
        ("40 CBL-USBC-1M", RequestLine("CBL-USBC-1M", 40)),  # quantity first
        ("40 x CBL-USBC-1M", RequestLine("CBL-USBC-1M", 40)),
        ("40x CBL-USBC-1M", RequestLine("CBL-USBC-1M", 40)),
        ("5 pcs of PB-20K", RequestLine("PB-20K", 5)),
        ("CBL-USBC-1M: 40 pcs", RequestLine("CBL-USBC-1M", 40)),  # a colon and a unit
        ("CBL-USBC-1M:40", RequestLine("CBL-USBC-1M", 40)),
        ("PB-20K=3", RequestLine("PB-20K", 3)),
        ("PB-20K, 3 units", RequestLine("PB-20K", 3)),
        ("PB-20K - 3", RequestLine("PB-20K", 3)),
        ("  PB-20K    3  ", RequestLine("PB-20K", 3)),  # spaces around and between
        ("- PB-20K 3", RequestLine("PB-20K", 3)),  # a list's bullet
        ("• PB-20K 3", RequestLine("PB-20K", 3)),
        ("TEA-500G 1,200", RequestLine("TEA-500G", 1200)),  # thousands grouped
        ("cbl-usbc-1m 40", RequestLine("cbl-usbc-1m", 40)),  # case is the intake's to match
        ("CABLE 4", RequestLine("CABLE", 4)),  # letters only: a SKU of the terms
        # A note after the quantity, or a branch of the company's.
        ("CHG-65W-GAN x 10 for Liberty", RequestLine("CHG-65W-GAN", 10, ship_to="liberty")),
        ("TEA-500G 3 for hallroad", RequestLine("TEA-500G", 3, ship_to="hallroad")),
        ("TEA-500G 3 for HALL ROAD", RequestLine("TEA-500G", 3, ship_to="hallroad")),
        ("TEA-500G 3 for Karachi", RequestLine("TEA-500G", 3, note="for Karachi")),
        ("TEA-500G 3 (urgent)", RequestLine("TEA-500G", 3, note="urgent")),
        (
            "TEA-500G 3 - for the Eid display",
            RequestLine("TEA-500G", 3, note="for the Eid display"),
        ),
        ("TEA-500G 3 عید کے لیے", RequestLine("TEA-500G", 3, note="عید کے لیے")),  # Urdu note
        ("PB-20K 3 🙂", RequestLine("PB-20K", 3, note="🙂")),  # an emoji note
        # Urdu and Arabic-Indic digits; marks pasted from a right-to-left chat.
        ("PB-20K ۱۲", RequestLine("PB-20K", 12)),
        ("PB-20K ٣", RequestLine("PB-20K", 3)),
        ("\u200fPB-20K\u200f \u200e۴۰\u200e", RequestLine("PB-20K", 40)),
        ("PB-\u200b20K 3", RequestLine("PB-20K", 3)),  # a zero-width space inside the SKU
        ("\u2067PB-20K 3\u2069", RequestLine("PB-20K", 3)),  # a right-to-left isolate around
    ],
)
def test_a_line_reads_as_a_sku_and_a_quantity(text: str, line: RequestLine) -> None:
    typed = read_message(text, KNOWN)
    assert typed == Typed((line,), (1,), (), looks_like_request=True)


@pytest.mark.parametrize(
    "text",
    [
        "ok",  # an approver's word
        "ok 2",  # letters only, and no SKU of the terms
        "approve 2",
        "theek hai",
        "hello there\nhow are you",
        "🙂",
        "40",  # a quantity alone
        "PO-2026-0001",  # a code alone
        "\u200f\u200e",  # only marks
        "",
    ],
)
def test_text_that_is_no_request_is_left_alone(text: str) -> None:
    assert read_message(text, KNOWN) == Typed()


def test_empty_lines_are_skipped_but_lines_keep_their_numbers() -> None:
    typed = read_message("CBL-USBC-1M 40\n\n\nPB-20K 5\r\n", KNOWN)
    assert typed.lines == (RequestLine("CBL-USBC-1M", 40), RequestLine("PB-20K", 5))
    assert typed.numbers == (1, 4)


def test_a_line_that_cannot_be_read_is_named_and_nothing_is_kept() -> None:
    typed = read_message("CBL-USBC-1M 40\nPB-20K forty\nplease hurry\nTEA-500G 3", KNOWN)
    assert typed.lines == () and typed.looks_like_request
    assert [(p.row, p.code, p.place) for p in typed.problems] == [
        (2, ProblemCode.UNREADABLE_LINE_NEAR, Place.LINE),
        (3, ProblemCode.UNREADABLE_LINE, Place.LINE),  # nothing like a SKU: no suggestion
    ]
    assert typed.problems[0].values == {
        "value": '"PB-20K forty"',
        "suggestions": "PB-20K",
    }


@pytest.mark.parametrize(
    "line",
    [
        "PB-20K 1234567890",  # more digits than any quantity: not read as one
        "PB-20K " + "9" * 5000,  # more digits than int() reads
        "PB-20K 3 " + "x" * 500,  # a line longer than any order line
        "🙂 PB-20K 3",  # something before the SKU
        "PB-20K 3.5",  # not a whole number
        "PB-20K -3",  # a sign is no quantity
        "=PB-20K 3",  # a formula's start
    ],
)
def test_hostile_lines_are_problems_not_crashes(line: str) -> None:
    typed = read_message("CBL-USBC-1M 40\n" + line, KNOWN)
    assert typed.lines == ()
    assert [(p.row, p.place) for p in typed.problems] == [(2, Place.LINE)]
    assert len(str(typed.problems[0].values["value"])) <= 100  # quoted short, on one line


def test_an_override_between_sku_and_quantity_is_dropped() -> None:
    assert read_message("PB-20K\u202e 3", KNOWN).lines == (RequestLine("PB-20K", 3),)


def test_a_message_of_too_many_lines_is_refused_as_a_whole() -> None:
    typed = read_message("PB-20K 1\n" * (MAX_LINES + 1), KNOWN)
    assert typed.problems == (Problem(0, None, ProblemCode.TOO_MANY_LINES, {"limit": MAX_LINES}),)
    assert typed.looks_like_request and typed.lines == ()
    assert len(read_message("PB-20K 1\n" * MAX_LINES, KNOWN).lines) == MAX_LINES


def test_a_message_too_long_is_refused_without_reading_it_all() -> None:
    typed = read_message("PB-20K 1 " + "x" * MAX_CHARS, KNOWN)
    assert [p.code for p in typed.problems] == [ProblemCode.MESSAGE_TOO_LONG]
    chatter = read_message("hello " * MAX_CHARS, KNOWN)  # long, but no request: left alone
    assert not chatter.looks_like_request


def test_suggestions_are_the_nearest_skus_or_none() -> None:
    assert suggest("CBL-USB-1M", SKUS)[0] == "CBL-USBC-1M"
    assert suggest("pb20k", SKUS)[0] == "PB-20K"
    assert suggest("CHG-65W", SKUS)[0] == "CHG-65W-GAN"
    assert suggest("ZZZZZZZZ-9", SKUS) == ()
    assert suggest("CBL-USBC-1M", ()) == ()
    assert len(suggest("C", SKUS * 10)) <= 3


def test_the_intakes_problems_are_put_at_the_message_lines() -> None:
    typed = read_message("CBL-USBC-1M 40\n\nCBL-USB-1M 2\nCBL-USBC-1M 3", KNOWN)
    intake = [
        Problem(2, "sku", ProblemCode.UNKNOWN_SKU, {"value": '"CBL-USB-1M"'}),
        Problem(3, "sku", ProblemCode.ALREADY_ON_ROW, {"sku": "CBL", "supplier": "S", "first": 1}),
        Problem(0, None, ProblemCode.TERMS_CHANGED),
    ]
    placed = at_message_lines(typed, intake, SKUS)
    assert [(p.row, p.code, p.place) for p in placed] == [
        (3, ProblemCode.UNKNOWN_SKU_NEAR, Place.LINE),
        (4, ProblemCode.ALREADY_ON_LINE, Place.LINE),
        (0, ProblemCode.TERMS_CHANGED, Place.LINE),
    ]
    assert placed[0].values["suggestions"] == "CBL-USBC-1M"
    assert placed[1].values["first"] == 1
    nothing_near = at_message_lines(typed, intake[:1], ("ZZZ-1",))
    assert nothing_near[0].code is ProblemCode.UNKNOWN_SKU


REQUEST = TypedRequest("r-1", 1001, (RequestLine("PB-20K", 3),), (1,), T0)
DAY = timedelta(hours=24)


@pytest.mark.parametrize(
    ("request_", "tapper", "after", "found"),
    [
        (None, 1001, timedelta(0), Standing.GONE),  # purged, or never made
        (REQUEST, 2001, timedelta(0), Standing.NOT_YOURS),  # someone else's tap
        (REQUEST, 1001, timedelta(0), Standing.OPEN),
        (REQUEST, 1001, DAY - timedelta(seconds=1), Standing.OPEN),  # the last second
        (REQUEST, 1001, DAY, Standing.EXPIRED),  # 24 hours on
        (REQUEST, 2001, DAY, Standing.NOT_YOURS),  # not theirs, expired or not
        (
            TypedRequest("r-1", 1001, REQUEST.lines, (1,), T0, SummaryState.CANCELLED),
            1001,
            timedelta(0),
            Standing.CANCELLED,
        ),
        (  # submitted: a Submit again returns its POs, even after a day
            TypedRequest("r-1", 1001, REQUEST.lines, (1,), T0, SummaryState.SUBMITTED),
            1001,
            DAY * 2,
            Standing.SUBMITTED,
        ),
    ],
)
def test_what_a_tap_finds(
    request_: TypedRequest | None, tapper: int, after: timedelta, found: Standing
) -> None:
    assert standing(request_, tapper, T0 + after) is found


def test_the_same_request_is_the_same_sheet() -> None:
    assert REQUEST.sheet().sha256 == REQUEST.sheet().sha256
    other = TypedRequest("r-2", 1001, REQUEST.lines, (1,), T0)
    assert other.sheet().sha256 != REQUEST.sheet().sha256
