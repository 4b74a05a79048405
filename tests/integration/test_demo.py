"""`make demo` runs the whole Telegram story, and the supplier gets exactly one e-mail."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from bot.dev import demo

pytestmark = pytest.mark.slow  # spawns the demo
# PO numbers carry the year in Pakistan, as the bot computes it.
YEAR = datetime.now(ZoneInfo("Asia/Karachi")).year
APPROVED, REJECTED = f"PO-{YEAR}-0001", f"PO-{YEAR}-0002"  # Saddar Wholesale, Hall Road Traders


def between(text: str, start: str, end: str) -> str:
    """The part of the transcript from `start` up to `end`."""
    assert start in text and end in text
    return text[text.index(start) : text.index(end, text.index(start))]


def test_demo_tells_the_whole_story_in_telegram(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "demo"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "ERROR" not in done.stderr, done.stderr
    out = done.stdout
    assert "bot → Ali (approver): Welcome! You are now registered as approver." in out
    assert (  # a requester's welcome carries the catalogue's button
        "bot → Bilal (requester):\n    │ Welcome! You are now registered as requester. /help "
        "shows what you can do.\n    │ [ 🛒 Catalogue ]"
    ) in out
    assert "not registered. Your Telegram id is 4000004" in out  # the stranger, politely
    assert 'Row 3, quantity: "twelve" is not a whole number' in out  # the bad sheet, row by row
    assert "restock.csv accepted; 2 purchase orders drafted and sent for approval:" in out

    cards = between(out, "── 4.", "── 5.")
    assert cards.count("— approval needed") == 2
    assert cards.count("│ [ ✅ Approve ]  [ ❌ Reject ]\n    │ [ 📄 Details ]  [ 🔍 Review ]") == 2
    # The Mini App of the first card: its signed URL, and what the page was given to show.
    assert f"taps [ 🔍 Review ] on {APPROVED}: the Mini App opens at" in cards
    assert re.search(rf"http://127\.0\.0\.1:\d+/app/po/{APPROVED}#tgWebAppData=user%3D", cards)
    assert "│ EAR-TWS-01 × 8\n    │ SCR-GLASS-A15 × 300" in cards

    tap = between(out, "── 5.", "── 6.")
    assert tap.count("(pop-up): Approved — e-mailing the supplier.") == 1  # two taps, one decision
    assert "(pop-up): Already approved by you at " in tap
    assert "│ ✅ Approved by Ali at " in tap  # the card edited, its buttons gone
    assert out.count("SMTP sink ← e-mail") == 1
    assert f"Idempotency-Key: send-po:{APPROVED}:v1:" in tap
    assert "Quantity 8 at Rs 2,350.50 each = Rs 18,804.00" in tap
    assert f"bot → Bilal (requester): {APPROVED} was approved" in tap
    assert f"bot → Bilal (requester): {APPROVED} was e-mailed to the supplier." in tap
    # Only the e-mail itself carries an address in clear; cards and replies mask it.
    assert out.count("sales@saddar.example") == 1 and "orders@hallroad.example" not in out

    rejection = between(out, "── 6.", "── 7.")
    assert f"Reason for rejecting {REJECTED} v1?" in rejection
    assert "│ ❌ Rejected by Ali at " in rejection
    assert f"bot → Bilal (requester): {REJECTED} was rejected: {demo.REASON}" in rejection

    status = between(out, "/status", "/history")
    assert f"{APPROVED}  Rs 85,908.72  sent to the supplier" in status
    assert f"{REJECTED}  Rs 219,472.92  rejected" in status
    trail = between(out, f"/history {APPROVED}", "── 9.")
    assert "mark_sent  SENDING -> SENT" in trail
    assert "saddar.example" not in trail  # the audit trail carries no address, not even masked

    # The supplier's PDF is kept beside the database, to open.
    pdf = tmp_path / "manzoori-demo" / f"{APPROVED}.pdf"
    assert f"📎 {APPROVED}.pdf  (saved as manzoori-demo/{APPROVED}.pdf)" in out
    assert pdf.read_bytes().startswith(b"%PDF")
    assert f"Subject: Purchase order {APPROVED} from Lahore Electronics (Pvt) Ltd" in out

    database = tmp_path / "manzoori-demo" / "manzoori.sqlite3"
    assert "sqlite3 manzoori-demo/manzoori.sqlite3 'select po_number, state from jobs'" in out
    with sqlite3.connect(database) as db:
        jobs = db.execute("select po_number, state from jobs order by po_number").fetchall()
    assert jobs == [(APPROVED, "SENT"), (REJECTED, "REJECTED")]


def test_a_step_that_does_not_happen_stops_the_demo_with_a_message(tmp_path, monkeypatch, capsys):
    samples = tmp_path / "samples"
    samples.mkdir()
    for name in ("supplier-terms.csv", "restock-with-errors.csv", "company.toml"):
        (samples / name).write_bytes((demo.SAMPLES / name).read_bytes())
    # A restock.csv that the bot refuses: the two POs never come.
    (samples / "restock.csv").write_bytes(b"sku,quantity\nNO-SUCH-SKU,1\n")
    monkeypatch.setattr(demo, "SAMPLES", samples)
    monkeypatch.setattr(demo, "STEP_TIMEOUT", 1.0)
    monkeypatch.chdir(tmp_path)

    assert demo.run_demo(tmp_path / "demo") == 1
    err = capsys.readouterr().err
    assert "demo failed: Bilal hears 'sent for approval': did not happen within 1 s" in err
