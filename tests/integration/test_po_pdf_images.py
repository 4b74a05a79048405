"""The PO's PDF as a person sees it: page 1, rasterised by poppler's pdftoppm (`make fonts`
installs it), is drawn for an English PO and for one whose supplier, branch and lines are
written in Urdu; and another process, hashing with another seed, renders the same bytes.
Slow, as every test that starts a process (tests/conftest.py): pdftoppm, another Python.

MANZOORI_WRITE_DOC_IMAGES=1 also writes the two pages, at 80 dpi, to docs/po-en.png and
docs/po-ur.png."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from PIL import Image

from bot.documents.pdf import render_po_pdf
from core.company.company import Branch, Buyer, Company
from core.drafting.drafts import Draft, DraftLine
from core.purchasing.po_document import PoDocument, Signature, po_document

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
WRITE = os.environ.get("MANZOORI_WRITE_DOC_IMAGES") == "1"
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


def _first_page_png(pdf: Path, dpi: int) -> Path:
    """Page 1 of the PDF as a PNG beside it."""
    prefix = pdf.with_name(f"page-{dpi}")
    subprocess.run(
        ["pdftoppm", "-r", str(dpi), "-png", "-f", "1", "-l", "1", "-singlefile", pdf, prefix],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return prefix.with_suffix(".png")


@pytest.mark.parametrize(("make", "name"), [(english, "po-en.png"), (urdu, "po-ur.png")])
def test_page_one_is_drawn(make: object, name: str, tmp_path: Path) -> None:
    assert callable(make)
    pdf = tmp_path / "po.pdf"
    pdf.write_bytes(render_po_pdf(make()))
    with Image.open(_first_page_png(pdf, 60)) as image:
        assert image.size == (497, 702)  # A4 at 60 dpi
        grey = image.convert("L")
        histogram = grey.histogram()
    inked = sum(histogram[:128])  # pixels darker than mid grey: text and rules
    assert inked > 0.01 * sum(histogram), f"{name}: page 1 is (nearly) blank"
    assert histogram[255] > 0.5 * sum(histogram), f"{name}: page 1 is not a white page"
    if WRITE:
        # A palette PNG, as small as it gets: a page of text needs few colours.
        with Image.open(_first_page_png(pdf, 80)) as image:
            image.convert("RGB").quantize(64).save(DOCS / name, optimize=True)
        assert (DOCS / name).stat().st_size < 150_000


def test_another_process_renders_the_same_bytes() -> None:
    script = (
        "import sys\n"
        "from bot.documents.pdf import render_po_pdf\n"
        "from tests.integration.test_po_pdf_images import english, urdu\n"
        "sys.stdout.buffer.write(render_po_pdf(english()) + render_po_pdf(urdu()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True,
        check=True,
        timeout=120,
    )
    here = render_po_pdf(english()) + render_po_pdf(urdu())
    assert hashlib.sha256(done.stdout).hexdigest() == hashlib.sha256(here).hexdigest()
