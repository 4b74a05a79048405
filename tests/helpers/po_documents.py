"""Two PO documents as the tests render them: an approved English PO, and a DRAFT whose
supplier, branch and lines are written in Urdu. Built from core alone: a test can hand them to
a process that must not import fpdf2."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

from core.company.company import Branch, Buyer, Company
from core.drafting.drafts import Draft, DraftLine
from core.purchasing.po_document import PoDocument, Signature, po_document

PKT = ZoneInfo("Asia/Karachi")
# samples/company.toml, with a branch whose name and address are written in Urdu.
COMPANY = Company(
    Buyer(
        "Lahore Electronics (Pvt) Ltd",
        "12 Main Boulevard, Gulberg III, Lahore",
        ntn="1234567-8",
        strn="32-77-8761-234-56",
        phone="+92 42 3575 0000",
    ),
    (
        Branch("liberty", "Liberty Market", "Shop 4, Liberty Market, Gulberg, Lahore"),
        Branch("hallroad", "ہال روڈ", "دکان 12، ہال روڈ، لاہور"),
    ),
    default_branch="liberty",
    version="2026-12-01",
)


def english() -> PoDocument:
    """samples/restock.csv's order from Hall Road Traders, approved in two stages."""
    lines = (
        DraftLine("CBL-USBC-1M", "USB-C cable, 1 m", 120, 45_000, gst_basis_points=1800),
        DraftLine(
            "CHG-65W-GAN",
            "65 W GaN charger",
            12,
            650_000,
            note="for the Liberty branch",
            gst_basis_points=1800,
            needed_by=date(2026, 12, 10),
        ),
        DraftLine("PB-20K", "20,000 mAh power bank", 6, 899_900, gst_basis_points=1800),
        DraftLine("SCR-GLASS-A15", "Screen glass, Galaxy A15", 300, 18_000),
    )
    draft = Draft(
        "PO-2026-0042",
        "SUP-LHR-07",
        "Hall Road Traders",
        "orders@hallroad.example",
        "hallroad-2026-12",
        lines,
        company_version=COMPANY.version,
        branch_id="liberty",
        payment_terms="30 days credit",
        delivery_date=date(2026, 12, 12),
    )
    approvals = (
        Signature("Ayesha Khan", datetime(2026, 12, 5, 14, 5, tzinfo=PKT), "finance"),
        Signature("Bilal Ahmed", datetime(2026, 12, 5, 16, 30, tzinfo=PKT), "director"),
    )
    return po_document(
        draft,
        2,
        company=COMPANY,
        issued=date(2026, 12, 5),
        approvals=approvals,
        key="send-po:PO-2026-0042:v2:3f9a1c0d5e7b",
        approved=True,
    )


def urdu() -> PoDocument:
    """A DRAFT for a supplier named in Urdu, to the branch written in Urdu, with Urdu lines."""
    lines = (
        DraftLine(
            "FAN-CEIL-56",
            "چھت کا پنکھا، 56 انچ، تانبے کی وائنڈنگ",
            10,
            1_250_000,
            note="دکان کے پچھلے دروازے پر اتاریں",
            gst_basis_points=1800,
            needed_by=date(2026, 12, 15),
        ),
        DraftLine("LED-BULB-12W", "ایل ای ڈی بلب، 12 واٹ", 200, 35_000, gst_basis_points=1800),
        DraftLine("EXT-CORD-5M", "Extension cord, 5 m, 4 sockets", 40, 120_000),
    )
    draft = Draft(
        "PO-2026-0057",
        "SUP-LHR-11",
        "مدینہ الیکٹرونکس",
        "orders@madina.example",
        "madina-2026-12",
        lines,
        company_version=COMPANY.version,
        branch_id="hallroad",
        payment_terms="Cash on delivery",
        delivery_date=date(2026, 12, 16),
    )
    return po_document(
        draft,
        1,
        company=COMPANY,
        issued=date(2026, 12, 5),
        approvals=(),
        key="send-po:PO-2026-0057:v1:8c2e4b6a0f13",
        approved=False,
    )
