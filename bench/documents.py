"""The PO's PDF (bot.documents.pdf): how long it takes to render and how large it is, for a
10-line PO in English, one with Urdu text, and a 200-line one; the English ones also with the
supplier's link and its QR code, as a send makes them when MANZOORI_PUBLIC_URL is set.
`python -m bench.documents` prints the figures alone."""

from __future__ import annotations

import asyncio
import io
import statistics
import time
from datetime import date, datetime

from pypdf import PdfReader

from bench.common import Context, Result
from bench.report import render
from bot.documents.pdf import render_po_pdf
from core.approval.policies import PAKISTAN
from core.company.company import Branch, Buyer, Company
from core.drafting.drafts import Draft, DraftLine
from core.purchasing.po_document import PoDocument, Signature, po_document

SECTION = "PO document"
# What a 10-line PO may weigh, Urdu font and all: an attachment nobody thinks twice about.
SIZE_TARGET_KB = 150
RUNS_QUICK, RUNS_FULL = 3, 15  # renders of each document, after one to warm up
LONG_RUNS_QUICK, LONG_RUNS_FULL = 1, 5  # of the 200-line one

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
)
# (SKU, description, unit price in paisa, sales tax in basis points), from samples/.
ITEMS = (
    ("CBL-USBC-1M", "USB-C cable, 1 m", 45_000, 1800),
    ("CHG-65W-GAN", "65 W GaN charger", 650_000, 1800),
    ("PB-20K", "20,000 mAh power bank", 899_900, 1800),
    ("SCR-GLASS-A15", "Screen glass, Galaxy A15", 18_000, 0),
    ("EAR-TWS-01", "Wireless earbuds", 235_050, 1800),
)
URDU_DESCRIPTIONS = ("یو ایس بی سی کیبل، ایک میٹر", "چھت کا پنکھا، 56 انچ")
# A supplier's link as bot.outbox.links makes it: the public URL, the route, a 55-character
# token.
LINK = "https://manzoori.example.com/s/" + "ekLYwL2DT0OJOXYW5y4WdgAB_4CSPFlUAAHJZBznBZAe9bUqyLWR6dc"


def document(lines: int, *, urdu: bool = False, link: str = "") -> PoDocument:
    """An approved PO of `lines` lines, every fourth with a note and a date; with `urdu`, the
    supplier, the branch and every other description are written in Urdu; with `link`, the
    supplier's link and its QR code."""
    made = []
    for number in range(1, lines + 1):
        sku, description, price, tax = ITEMS[number % len(ITEMS)]
        if urdu and number % 2:
            description = URDU_DESCRIPTIONS[number % len(URDU_DESCRIPTIONS)]
        noted = number % 4 == 0
        made.append(
            DraftLine(
                f"{sku}-{number}",
                description,
                number % 50 + 1,
                price,
                note="for the Liberty branch" if noted else "",
                gst_basis_points=tax,
                needed_by=date(2026, 12, 10) if noted else None,
            )
        )
    draft = Draft(
        "PO-2026-0042",
        "SUP-LHR-07",
        "مدینہ الیکٹرونکس" if urdu else "Hall Road Traders",
        "orders@hallroad.example",
        "hallroad-2026-12",
        tuple(made),
        branch_id="hallroad" if urdu else "liberty",
        payment_terms="30 days credit",
        delivery_date=date(2026, 12, 12),
    )
    approvals = (
        Signature("Ayesha Khan", datetime(2026, 12, 5, 14, 5, tzinfo=PAKISTAN), "finance"),
        Signature("Bilal Ahmed", datetime(2026, 12, 5, 16, 30, tzinfo=PAKISTAN), "director"),
    )
    return po_document(
        draft,
        2,
        company=COMPANY,
        issued=date(2026, 12, 5),
        approvals=approvals,
        key="send-po:PO-2026-0042:v2:3f9a1c0d5e7b",
        approved=True,
        link=link,
    )


def _row(name: str, lines: int, runs: int, *, urdu: bool = False, link: str = "") -> Result:
    po = document(lines, urdu=urdu, link=link)
    data = render_po_pdf(po)  # the first render also loads the fonts
    times: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        render_po_pdf(po)
        times.append(time.perf_counter() - start)
    render_ms = 1000 * statistics.median(times)
    kb = len(data) / 1024
    figures = {
        "pages": str(len(PdfReader(io.BytesIO(data)).pages)),
        "KB": f"{kb:.1f}",
        "render ms": f"{render_ms:.0f}",
        "ms/line": f"{render_ms / lines:.1f}",
    }
    if lines > 10:
        return Result(SECTION, name, figures, notes=f"median of {runs}")
    met = kb <= SIZE_TARGET_KB
    return Result(SECTION, name, figures, f"≤ {SIZE_TARGET_KB} KB", met, f"median of {runs}")


async def run(ctx: Context) -> list[Result]:
    """The five rows, each rendered in this process, one render after another."""
    runs = RUNS_QUICK if ctx.quick else RUNS_FULL
    long_runs = LONG_RUNS_QUICK if ctx.quick else LONG_RUNS_FULL
    return [
        _row("10 lines", 10, runs),
        _row("10 lines, with link and QR code", 10, runs, link=LINK),
        _row("10 lines, Urdu", 10, runs, urdu=True),
        _row("200 lines", 200, long_runs),
        _row("200 lines, with link and QR code", 200, long_runs, link=LINK),
    ]


if __name__ == "__main__":
    print(render(asyncio.run(run(Context(quick=False, sqlite_dir="", postgres_url=None)))), end="")
