"""`make demo` runs the whole story and the supplier gets exactly one e-mail."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

pytestmark = pytest.mark.slow
# PO numbers carry the year in Pakistan, as the CLI computes it.
YEAR = datetime.now(ZoneInfo("Asia/Karachi")).year


def test_demo_runs_end_to_end(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "bot.demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "refused: SelfApproval" in out
    assert "refused: DraftChanged" in out
    assert "refused: AlreadyDecided" in out
    assert "rows each performed: [1, 0]" in out or "rows each performed: [0, 1]" in out
    assert "performed 0; e-mails: 1" in out
    assert 'Row 3, quantity: "twelve" is not a whole number' in out  # the bad sheet, row by row
    assert "restock.csv was already submitted; it made 2 purchase orders:" in out
    assert f"PO-{YEAR}-0002 re-drafted as v2 (was v1)" in out  # new terms before the send
    assert "Quantity 12 at Rs 6,750.00 each" in out  # the e-mail carries the new price
    assert f"Idempotency-Key: send-po:PO-{YEAR}-0002:v2:" in out
    assert "mark_sent  SENDING -> SENT" in out
    assert "orders@hallroad.example" not in out  # the audit trail carries no addresses
