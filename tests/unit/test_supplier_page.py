"""The supplier's page as HTML (bot.web.supplier), from hand-made pages: everything the PDF
prints and every control the issue names, no script and no inline style, every text escaped;
what was recorded and when; a superseded or cancelled order with no form and no link; what
the supplier typed kept beside the reason it was refused; the form's fields read exactly
(rupees to paisa with Decimal) or refused with a message; and the page's size."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from html.parser import HTMLParser
from zoneinfo import ZoneInfo

import pytest

from bot.config import WebAppScript
from bot.web.security import security_headers, supplier_headers
from bot.web.supplier import STATUS_OF_PROBLEM, FormProblem, read_reply, render_page
from core.company.company import Branch, Buyer, Company
from core.drafting.drafts import DraftLine
from core.errors import AnswerProblem
from core.jobs.effects import EffectKind
from core.purchasing.po_document import PoDocument, Signature, po_document
from core.suppliers.answers import (
    Answer,
    LineProposal,
    Reply,
    SupplierPage,
    SupplierReply,
    SupplierStatus,
)
from core.suppliers.links import SupplierLink
from tests.helpers.factories import make_draft

PKT = ZoneInfo("Asia/Karachi")
PREFIX = "0123456789ab"
LINK = SupplierLink("job-1", 3, PREFIX, EffectKind.SEND_PO, datetime(2027, 1, 1, tzinfo=UTC))
DUE = date(2026, 12, 20)
AT = datetime(2026, 12, 5, 9, 3, tzinfo=UTC)  # 14:03 in Karachi
COMPANY = Company(
    Buyer(
        "Lahore Electronics (Pvt) Ltd",
        "12 Main Boulevard, Gulberg III, Lahore",
        ntn="1234567-8",
        strn="32-77-8761-234-56",
        phone="+92 42 3575 0000",
    ),
    (Branch("liberty", "Liberty Market", "Shop 4, Liberty Market, Gulberg, Lahore"),),
    default_branch="liberty",
    version="c1",
)
CABLE = DraftLine("CBL-USBC-1M", "USB-C cable, 1 m", 120, 45_000, gst_basis_points=1800)
GLASS = DraftLine("SCR-GLASS-A15", "Screen glass A15", 300, 15_050, note="boxed in tens")
POWER = DraftLine("PB-20K", "20,000 mAh power bank", 6, 899_900, gst_basis_points=1700)


def document(lines: tuple[DraftLine, ...] = (CABLE, GLASS, POWER), **more: object) -> PoDocument:
    draft = make_draft(lines=lines, delivery_date=DUE, payment_terms="30 days after delivery")
    return po_document(
        replace(draft, **more),
        3,
        company=COMPANY,
        issued=date(2026, 12, 5),
        approvals=(Signature("Ayesha Khan", datetime(2026, 12, 5, 11, 30, tzinfo=PKT), "finance"),),
        key=f"send-po:PO-2026-001:v3:{PREFIX}",
        approved=True,
    )


def page(status: SupplierStatus = SupplierStatus.AWAITING, **answer: object) -> SupplierPage:
    recorded = None
    if answer:
        recorded = Answer(
            "job-1", 3, 1, key=f"send-po:PO-2026-001:v3:{PREFIX}", answered_at=AT, **answer
        )
    return SupplierPage(LINK, document(), status, recorded, status is SupplierStatus.AWAITING)


class Elements(HTMLParser):
    """The elements of a page: each tag with its attributes, and the tags and data-testids of
    the elements around it."""

    VOID = frozenset({"meta", "link", "input", "br", "img"})

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None], tuple[str, ...]]] = []
        self.stack: list[tuple[str, str | None]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        around = tuple(name for pair in self.stack for name in pair if name)
        self.found.append((tag, dict(attrs), around))
        if tag not in self.VOID:
            self.stack.append((tag, dict(attrs).get("data-testid")))

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def testids(self) -> list[str]:
        return [a["data-testid"] or "" for _, a, _ in self.found if "data-testid" in a]

    def inside(self, testid: str, outer: str) -> int:
        return sum(
            1 for _, a, around in self.found if a.get("data-testid") == testid and outer in around
        )


def test_an_open_order_shows_what_the_pdf_prints_and_every_control():
    html = render_page(page(), PKT)
    for text in (
        "Lahore Electronics (Pvt) Ltd",
        "12 Main Boulevard, Gulberg III, Lahore",
        "1234567-8",  # NTN
        "32-77-8761-234-56",  # STRN
        "+92 42 3575 0000",
        "Hall Road Electronics",
        "orders@supplier.example",
        "PO-2026-001",
        "<dt>Version</dt><dd>3</dd>",
        "5 Dec 2026",  # dated
        "Liberty Market",
        "20 Dec 2026",  # delivery by
        "30 days after delivery",
        "CBL-USBC-1M",
        "USB-C cable, 1 m",
        "Rs 450.00",  # unit price
        "Rs 54,000.00",  # 120 × 450
        "boxed in tens",  # a line's note
        "Rs 45,150.00",  # 300 × 150.50
        "GST 17% on Rs 53,994.00",
        "GST 18% on Rs 54,000.00",
        "Total (incl. GST)",
        "Ayesha Khan — finance — 5 Dec 2026, 11:30 PKT",
        f"send-po:PO-2026-001:v3:{PREFIX}",
    ):
        assert text in html, text
    doc = document()
    assert f"Subtotal</dt><dd>Rs {doc.subtotal_paisa / 100:,.2f}" in html
    assert f"Total (incl. GST)</dt><dd>Rs {doc.total_paisa / 100:,.2f}" in html
    found = Elements(html)
    ids = found.testids()
    for testid in ("ack-status", "ack-date", "ack-accept", "ack-reason", "ack-decline"):
        assert ids.count(testid) == 1, testid
    assert ids.count("ack-note") == ids.count("ack-propose") == 1
    assert ids.count("ack-line") == 3
    assert found.inside("ack-qty", "ack-line") == found.inside("ack-price", "ack-line") == 3
    assert "Awaiting your answer." in html


def test_the_page_has_no_script_no_inline_style_and_no_link_but_its_style_sheet():
    found = Elements(render_page(page(), PKT))
    tags = [tag for tag, _, _ in found.found]
    assert "script" not in tags and "style" not in tags and "a" not in tags
    for tag, attrs, _ in found.found:
        assert "style" not in attrs, tag
        assert not [name for name in attrs if name.startswith("on")], tag
    [sheet] = [attrs for tag, attrs, _ in found.found if tag == "link"]
    assert sheet["rel"] == "stylesheet" and str(sheet["href"]).startswith("static/")


def test_every_input_has_a_label_and_the_keyboard_it_needs():
    found = Elements(render_page(page(), PKT))
    boxes = {
        str(attrs["data-testid"]): (attrs, around)
        for tag, attrs, around in found.found
        if tag in ("input", "textarea") and attrs.get("type") != "hidden"
    }
    assert set(boxes) == {"ack-date", "ack-reason", "ack-qty", "ack-price", "ack-note"}
    for testid, (_, around) in boxes.items():
        assert "label" in around, testid  # its label wraps it: read out with it, tapped with it
    date_box = boxes["ack-date"][0]
    assert date_box["type"] == "date" and date_box["min"] == "2026-12-20"
    assert boxes["ack-qty"][0]["inputmode"] == "numeric"
    assert boxes["ack-price"][0]["inputmode"] == "decimal"


def test_enter_in_a_field_submits_nothing():
    """The form's first submit button, the one Enter presses, is disabled."""
    found = Elements(render_page(page(), PKT))
    first = next(attrs for tag, attrs, _ in found.found if tag == "button")
    assert "disabled" in first and "hidden" in first


def test_every_text_from_a_sheet_or_a_file_is_escaped():
    hostile = '<script>alert(1)</script>"onmouseover="x'
    line = DraftLine(hostile, hostile, 1, 100, note=hostile)
    doc = replace(  # past the draft's own checks: the page trusts none of them
        document(),
        lines=(line,),
        supplier_name=hostile,
        payment_terms=hostile,
        buyer=Buyer(hostile, hostile, phone=hostile),
    )
    shown = replace(page(), document=doc)
    typed = {"qty-1": hostile, "reason": "</textarea><script>x</script>", "date": hostile}
    html = render_page(shown, PKT, alert=hostile, typed=typed, bad_line=1)
    assert "<script" not in html and '"onmouseover' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;onmouseover=&quot;x" in html
    found = Elements(html)
    assert not [attrs for _, attrs, _ in found.found if "onmouseover" in attrs]


@pytest.mark.parametrize(
    ("status", "answer", "said"),
    [
        # an accept with a later date: that date
        (
            SupplierStatus.ACCEPTED,
            {"reply": Reply.ACCEPT, "delivery_date": date(2026, 12, 22)},
            "Accepted on 5 Dec 2026, 14:03 PKT — delivery by 22 Dec 2026.",
        ),
        # an accept as it is: the PO's own date
        (
            SupplierStatus.ACCEPTED,
            {"reply": Reply.ACCEPT},
            "Accepted on 5 Dec 2026, 14:03 PKT — delivery by 20 Dec 2026.",
        ),
        # a decline, with its reason
        (
            SupplierStatus.DECLINED,
            {"reply": Reply.DECLINE, "reason": "Out of stock till March"},
            "Declined on 5 Dec 2026, 14:03 PKT. Reason: Out of stock till March",
        ),
        # a proposal, with the buyer
        (
            SupplierStatus.CHANGES_PROPOSED,
            {"reply": Reply.PROPOSE, "lines": (LineProposal(2, quantity=250),)},
            "Changes proposed on 5 Dec 2026, 14:03 PKT; the buyer is considering them.",
        ),
    ],
)
def test_an_answered_order_says_what_was_recorded_and_when_and_offers_nothing(status, answer, said):
    found = Elements(render_page(page(status, **answer), PKT))
    [status_element] = [a for _, a, _ in found.found if a.get("data-testid") == "ack-status"]
    assert found.testids() == ["ack-status"]  # no form, no control
    assert said in render_page(page(status, **answer), PKT)
    assert status_element.get("role") == "status"


def test_a_proposal_lists_its_changes():
    proposed = page(
        SupplierStatus.CHANGES_PROPOSED,
        reply=Reply.PROPOSE,
        delivery_date=date(2026, 12, 28),
        note="new rate from January",
        lines=(LineProposal(1, quantity=100), LineProposal(3, unit_price_paisa=950_000)),
    )
    html = render_page(proposed, PKT)
    assert "<li>Delivery by 28 Dec 2026</li>" in html
    assert "<li>Line 1 (CBL-USBC-1M): quantity 120 → 100</li>" in html
    assert "<li>Line 3 (PB-20K): unit price Rs 8,999.00 → Rs 9,500.00</li>" in html
    assert "<li>Note: new rate from January</li>" in html


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (SupplierStatus.SUPERSEDED, "This order was replaced by version 4, sent to you"),
        (SupplierStatus.CANCELLED, "This order was cancelled."),
    ],
)
def test_a_superseded_or_cancelled_order_says_so_and_shows_no_form_no_lines_no_link(status, said):
    html = render_page(replace(page(), status=status, can_answer=False, current_version=4), PKT)
    found = Elements(html)
    assert said in html
    assert found.testids() == ["ack-status"]
    tags = {tag for tag, _, _ in found.found}
    assert not tags & {"form", "a", "table", "input", "button"}
    assert "CBL-USBC-1M" not in html  # the old lines are not there to act on
    assert "+92 42 3575 0000" in html  # the buyer, to call


def test_a_refused_answer_is_shown_beside_what_was_typed():
    typed = {"answer": "propose", "qty-2": "250", "price-3": "9,500", "note": "from Jan"}
    html = render_page(page(), PKT, alert="Line 2: no.", typed=typed, bad_line=2)
    assert '<p class="alert" role="alert">Line 2: no.</p>' in html
    assert 'name="qty-2" inputmode="numeric" value="250"' in html
    assert 'name="price-3" inputmode="decimal" value="9,500"' in html
    assert ">from Jan</textarea>" in html
    assert "<details open><summary>Propose changes" in html
    assert '<fieldset data-testid="ack-line" class="bad"><legend>2.' in html
    decline = render_page(page(), PKT, alert="Why?", typed={"answer": "decline", "reason": "x"})
    assert "<details open><summary>Decline" in decline and ">x</textarea>" in decline


def fields(**more: str) -> dict[str, str]:
    return {"version": "3", "hash": PREFIX, **more}


@pytest.mark.parametrize(
    ("form", "reply"),
    [
        # an accept as it is
        (fields(answer="accept"), SupplierReply(Reply.ACCEPT, 3, PREFIX)),
        # an accept with a later date; a stray reason, note or line is not part of it
        (
            fields(answer="accept", date="2026-12-22", reason="x", note="y", **{"qty-1": "1"}),
            SupplierReply(Reply.ACCEPT, 3, PREFIX, delivery_date=date(2026, 12, 22)),
        ),
        # a decline is its reason alone, as typed (the core trims it)
        (
            fields(answer="decline", reason=" no stock ", date="2026-12-22"),
            SupplierReply(Reply.DECLINE, 3, PREFIX, reason=" no stock "),
        ),
        # a proposal: rupees with grouping and paisa, a bare number, "Rs", a blank box
        (
            fields(
                answer="propose",
                note="n",
                **{"qty-1": "1,200", "price-1": "1,250.50", "price-2": "Rs 99", "qty-2": " "},
                **{"price-10": "0.1", "qty-3": "0"},
            ),
            SupplierReply(
                Reply.PROPOSE,
                3,
                PREFIX,
                note="n",
                lines=(
                    LineProposal(1, 1_200, 125_050),
                    LineProposal(2, None, 9_900),
                    LineProposal(3, 0, None),
                    LineProposal(10, None, 10),
                ),
            ),
        ),
        # an exact paisa amount that a float would not keep
        (
            fields(answer="propose", **{"price-1": "123,456,789.99"}),
            SupplierReply(Reply.PROPOSE, 3, PREFIX, lines=(LineProposal(1, None, 12_345_678_999),)),
        ),
    ],
)
def test_a_form_is_read_into_the_answer_it_gives(form, reply):
    assert read_reply(form) == reply


@pytest.mark.parametrize(
    ("form", "message", "line"),
    [
        ({"version": "3", "hash": PREFIX}, "Choose Accept, Decline or Propose changes.", None),
        (fields(answer="maybe"), "Choose Accept, Decline or Propose changes.", None),
        (fields(answer="accept", version="x"), "This form is damaged", None),
        (fields(answer="accept", version="²"), "This form is damaged", None),  # isdigit, not int
        (fields(answer="accept", hash="<b>"), "This form is damaged", None),
        (fields(answer="accept", date="20/12/2026"), "like 2026-12-20", None),
        (fields(answer="accept", date="2026-02-30"), "like 2026-12-20", None),
        (fields(answer="propose", **{"qty-2": "12.5"}), "Line 2: the quantity", 2),
        (fields(answer="propose", **{"qty-2": "-1"}), "Line 2: the quantity", 2),
        (fields(answer="propose", **{"qty-2": "1e3"}), "Line 2: the quantity", 2),
        (fields(answer="propose", **{"price-4": "1,25"}), "Line 4: the unit price", 4),
        (fields(answer="propose", **{"price-4": "1.234"}), "Line 4: the unit price", 4),
        (fields(answer="propose", **{"price-4": "NaN"}), "Line 4: the unit price", 4),
        (fields(answer="propose", **{"price-4": "-5"}), "Line 4: the unit price", 4),
    ],
)
def test_a_form_that_cannot_be_read_says_why(form, message, line):
    with pytest.raises(FormProblem) as problem:
        read_reply(form)
    assert message in str(problem.value) and problem.value.line == line


def test_a_refusal_because_the_order_moved_on_is_a_conflict_and_the_rest_bad_input():
    assert STATUS_OF_PROBLEM == {
        AnswerProblem.ANSWERED: 409,
        AnswerProblem.UNDER_REVIEW: 409,
        AnswerProblem.SUPERSEDED: 409,
        AnswerProblem.CANCELLED: 409,
        AnswerProblem.STALE: 409,
        AnswerProblem.REASON_REQUIRED: 400,
        AnswerProblem.DATE_TOO_EARLY: 400,
        AnswerProblem.NOTHING_PROPOSED: 400,
        AnswerProblem.QUANTITY_TOO_HIGH: 400,
        AnswerProblem.BAD_LINE: 400,
        AnswerProblem.TOO_LONG: 400,
    }  # a new problem fails this test until it is given its status


def test_the_page_runs_no_script_and_posts_only_to_itself():
    ours, theirs = supplier_headers(), security_headers(WebAppScript.LOCAL)
    policy = ours["Content-Security-Policy"]
    assert "script-src 'none'" in policy and "form-action 'self'" in policy
    assert "form-action 'none'" in theirs["Content-Security-Policy"]  # the Mini App's, as it was
    rest = policy.replace("script-src 'none'", "").replace("form-action 'self'", "")
    mini = theirs["Content-Security-Policy"].replace("script-src 'self'", "")
    assert rest == mini.replace("form-action 'none'", "")
    assert ours["Cache-Control"] == "no-store" and ours["X-Robots-Tag"] == "noindex"
    assert ours["Referrer-Policy"] == "no-referrer"


def _lines(count: int) -> tuple[DraftLine, ...]:
    return tuple(
        DraftLine(f"SKU-{n:03}", f"Item {n}, a description of ordinary length", 10 + n, 125_050)
        for n in range(1, count + 1)
    )


def test_a_ten_line_order_is_well_under_30_kb_and_a_200_line_one_about_100():
    ten = render_page(replace(page(), document=document(_lines(10))), PKT).encode()
    many = render_page(replace(page(), document=document(_lines(200))), PKT).encode()
    assert len(ten) < 30_000, len(ten)
    assert len(many) < 120_000, len(many)  # docs/suppliers.md gives both figures
