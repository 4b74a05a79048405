"""The summary of a typed request (bot.words.typed_texts): each line priced, the totals per
supplier, and never more than one Telegram message, however many lines."""

from __future__ import annotations

from dataclasses import replace

from bot.words.typed_texts import SUMMARY_LIMIT, summary
from core.drafting.drafts import DraftLine
from core.purchasing.requests import RequestLine
from core.purchasing.summaries import TypedRequest
from tests.helpers.factories import REQUESTER, T0, make_draft


def test_a_summary_lists_each_line_at_its_message_line_and_each_suppliers_total() -> None:
    draft = make_draft()
    lines = (RequestLine("ADP-65W", 2), RequestLine("cbl-usb-c-1m", 4, note="for Eid"))
    request = TypedRequest("r", REQUESTER, lines, (1, 3), T0)
    assert summary(request, [draft], 24).splitlines() == [
        "Your request, as I read it (2 lines):",
        'Line 1: ADP-65W 65 W charger, "GaN", PK plug, 2 × Rs 4,500.00 = Rs 9,000.00',
        "Line 3: CBL-USB-C-1M USB-C cable 1 m, 4 × Rs 1,250.00 = Rs 5,000.00 (for Eid)",
        "Hall Road Electronics: 2 lines, Rs 14,000.00 with sales tax",
        "Tap Submit to send it for approval, or Cancel. Submit works for 24 hours.",
    ]


def test_two_hundred_long_lines_fit_one_message_the_rest_counted() -> None:
    skus = [f"SKU-{'X' * 56}-{n:03}" for n in range(200)]  # 64 characters, the most
    draft_lines = tuple(DraftLine(sku, "d" * 200, 1, 100) for sku in skus)
    draft = replace(make_draft(), lines=draft_lines)
    lines = tuple(RequestLine(sku, 1, note="n" * 250) for sku in skus)
    request = TypedRequest("r", REQUESTER, lines, tuple(range(1, 201)), T0)
    said = summary(request, [draft], 24)
    assert len(said) <= SUMMARY_LIMIT
    shown = [line for line in said.splitlines() if line.startswith("Line ")]
    assert 0 < len(shown) < 30
    assert f"… and {200 - len(shown)} more lines" in said
    assert said.endswith("Submit works for 24 hours.")
