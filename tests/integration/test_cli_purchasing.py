"""`manzoori suppliers …` and `manzoori sheets …` as an admin runs them, on SQLite and PostgreSQL.

The last test imports new terms while `manzoori run` holds the same database, and checks that
the running process re-drafts and then mails the new version, without a restart.
"""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import func, select

from bot.clock import utcnow
from bot.files.limits import NOT_A_SHEET, NOT_CSV
from bot.files.sheets import read_csv_text
from bot.words.problems import problem_text
from core.approval import decisions
from core.approval.decisions import Review
from core.approval.policies import Verdict
from core.drafting.intake import NO_TERMS
from core.errors import DraftChanged
from core.jobs.states import State
from core.purchasing import new_terms
from store import schema
from store.sql import SqlStore
from tests.helpers.cli import RULES, Cli, base_env, ok, with_store
from tests.helpers.factories import APPROVER_A, REQUESTER
from tests.helpers.store import grant_cast

pytestmark = pytest.mark.slow  # every test spawns `manzoori` subprocesses
# PO numbers carry the year in Pakistan, as the CLI computes it.
YEAR = datetime.now(ZoneInfo("Asia/Karachi")).year

DATA = Path(__file__).parent.parent / "data"
TERMS = DATA / "terms" / "good.csv"
HEADER = "supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,max_qty"


@pytest.fixture
def cli(db_url: str, tmp_path: Path) -> Cli:
    """The CLI pointed at the test database, with the usual cast registered."""
    with_store(db_url, grant_cast)
    return Cli(tmp_path, base_env(db_url))


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def count(db_url: str, table) -> int:
    async def work(store: SqlStore) -> int:
        async with store.begin() as tx:
            return int(
                (await tx.conn.execute(select(func.count()).select_from(table))).scalar_one()
            )

    return with_store(db_url, work)


def test_suppliers_import_and_list_with_masked_addresses(cli, db_url, tmp_path):
    first = ok(cli("suppliers", "import", str(TERMS)))
    assert "good.csv imported as supplier terms " in first
    version = first.split("supplier terms ")[1].split(",")[0]
    assert "no waiting purchase order is affected" in first

    again, listing = cli.all(("suppliers", "import", str(TERMS)), ("suppliers", "list"))
    assert ok(again).startswith(f"good.csv has the same content as the terms in force, {version}")
    shown = ok(listing)
    assert f"supplier terms {version}, imported " in shown and "PKT by cli:" in shown
    assert "2 suppliers, 5 offers" in shown
    assert "SUP-LHR-01  Hall Road Traders  or***@hallroad.pk  2 SKUs" in shown
    assert "SUP-KHI-02  Saddar Wholesale  sa***@saddar.com.pk  3 SKUs" in shown
    assert "orders@hallroad.pk" not in shown and "sales@saddar" not in shown
    assert count(db_url, schema.terms_versions) == 1

    bad = write(
        tmp_path / "bad.csv", f"{HEADER}\nSUP1,Hall Road,orders@hallroad.pk,CBL-1,C,-4,1,\n"
    )
    binary = tmp_path / "photo.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    refused, unreadable = cli.all(
        ("suppliers", "import", str(bad)), ("suppliers", "import", str(binary))
    )
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "bad.csv: not imported; nothing changed. Please fix:",
        "Line 2, unit_price_pkr: must not be negative",
    ]
    assert unreadable.returncode == 1  # its bytes refused as its lines would be
    assert unreadable.stderr.splitlines() == [
        "photo.csv: not imported; nothing changed. Please fix:",
        NOT_CSV,
    ]
    assert count(db_url, schema.terms_versions) == 1
    assert f"supplier terms {version}," in ok(cli("suppliers", "list"))


def test_sheets_check_and_submit(cli, db_url, tmp_path):
    good = write(tmp_path / "restock.csv", "SKU,Quantity\ncbl-usbc-1m,20\nTEA-500G,3\n")
    bad = write(tmp_path / "bad.csv", "sku,quantity\nCBL-USBC-1M,abc\nNOPE-1,2\n")
    binary = tmp_path / "photo.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))

    no_terms = cli("sheets", "check", str(good))
    assert no_terms.returncode == 1 and problem_text(NO_TERMS) in no_terms.stdout
    ok(cli("suppliers", "import", str(TERMS)))

    valid, invalid, unreadable, not_a_requester = cli.all(
        ("sheets", "check", str(good)),
        ("sheets", "check", str(bad)),
        ("sheets", "check", str(binary)),
        ("sheets", "submit", str(good), "--requester", str(APPROVER_A)),
    )
    assert ok(valid).splitlines() == [
        "restock.csv is valid; it would make 2 purchase orders:",
        "NEW-1  Saddar Wholesale (sa***@saddar.com.pk)  1 line  Rs 2,697.00",
        "NEW-2  Hall Road Traders (or***@hallroad.pk)  1 line  Rs 9,000.00",
        "  ! CBL-USBC-1M: offered by 2 suppliers; this one is the cheapest at Rs 450.00 "
        "(next: SUP-KHI-02 at Rs 470.00)",
    ]
    assert invalid.returncode == 1
    assert invalid.stdout.splitlines() == [
        "bad.csv: not accepted; nothing was created. Please fix:",
        'Row 2, quantity: "abc" is not a whole number',
        'Row 3, sku: "NOPE-1" is not in the current supplier terms',
    ]
    assert unreadable.returncode == 1  # refused as its rows would be, on the same stream
    assert unreadable.stdout.splitlines() == [
        "photo.csv: not accepted; nothing was created. Please fix:",
        NOT_A_SHEET,
    ]
    assert not_a_requester.returncode == 1
    assert f"user {APPROVER_A} is not a registered requester" in not_a_requester.stderr
    assert count(db_url, schema.jobs) == 0  # checking never stores anything

    made = ok(cli("sheets", "submit", str(good), "--requester", str(REQUESTER))).splitlines()
    assert made[0] == "restock.csv accepted; 2 purchase orders drafted and sent for approval:"
    assert made[1].startswith(f"PO-{YEAR}-0001  Saddar Wholesale")
    assert made[2].startswith(f"PO-{YEAR}-0002  Hall Road Traders")
    repeat = ok(cli("sheets", "submit", str(good), "--requester", str(REQUESTER))).splitlines()
    assert repeat[0] == "restock.csv was already submitted; it made 2 purchase orders:"
    assert repeat[1:] == [
        f"PO-{YEAR}-0001  Saddar Wholesale  Rs 2,697.00  AWAITING_APPROVAL",
        f"PO-{YEAR}-0002  Hall Road Traders  Rs 9,000.00  AWAITING_APPROVAL",
    ]
    assert count(db_url, schema.jobs) == 2


def _wait_for(condition, what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _job(db_url: str, po: str):
    async def work(store: SqlStore):
        async with store.begin() as tx:
            return await tx.job_by_po(po)

    return with_store(db_url, work)


def test_new_terms_while_manzoori_run_holds_the_database(cli, db_url, tmp_path, smtp_sink):
    """The running process re-drafts on terms it did not import, and mails the new version."""
    sheet = write(tmp_path / "restock.csv", "sku,quantity\nCHG-65W,3\n")
    ok(cli("suppliers", "import", str(TERMS)))
    ok(cli("sheets", "submit", str(sheet), "--requester", str(REQUESTER)))
    env = dict(cli.env, SMTP_HOST=smtp_sink.host, SMTP_PORT=str(smtp_sink.port),
               MANZOORI_POLL_SECONDS="0.1")  # fmt: skip
    running = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "run", "--worker"], cwd=cli.cwd, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # New terms arrive through the store only (as another host would write them): the
        # running process must notice them on its own and re-draft the waiting PO.
        dearer = TERMS.read_text().replace("65 W GaN charger,6500.50", "65 W GaN charger,6600")

        async def import_only(store: SqlStore):
            table = read_csv_text(dearer.encode())
            return await new_terms.import_terms(store, table, utcnow(), "test")

        assert with_store(db_url, import_only).created
        _wait_for(lambda: _job(db_url, f"PO-{YEAR}-0001").draft_version == 2, "the re-draft")
        job = _job(db_url, f"PO-{YEAR}-0001")
        assert job.state is State.AWAITING_APPROVAL and job.total_paisa == 3 * 660_000

        # A CLI import while it runs: works, and re-drafts again (the price goes back). The
        # CLI reports it whether the CLI or the running process got to it first.
        said = ok(cli("suppliers", "import", str(TERMS)))
        assert f"PO-{YEAR}-0001 re-drafted as v3 (was v2)" in said
        assert "CHG-65W: new terms price Rs 6,500.50, was Rs 6,600.00 (-1.5%)" in said

        async def approve(store: SqlStore, version: int, hash_: str):
            return await decisions.decide(
                store,
                Review(f"PO-{YEAR}-0001", APPROVER_A, Verdict.APPROVE, version, hash_),
                utcnow(),
                RULES,
            )

        with pytest.raises(DraftChanged):  # the card for v2 no longer counts
            with_store(db_url, lambda store: approve(store, 2, job.draft_hash))
        current = _job(db_url, f"PO-{YEAR}-0001")
        with_store(db_url, lambda store: approve(store, 3, current.draft_hash))
        _wait_for(lambda: _job(db_url, f"PO-{YEAR}-0001").state is State.SENT, "the e-mail")
        (mail,) = smtp_sink.messages
        body = mail.get_body(("plain",)).get_content()
        assert "Quantity 3 at Rs 6,500.50 each" in body and "Draft version: 3" in body
    finally:
        running.terminate()
        _out, err = running.communicate(timeout=30)
    assert running.returncode == 0, err


def test_po_numbers_are_unique_across_processes(cli, db_url, tmp_path):
    """Four `manzoori sheets submit` processes at once: every PO gets its own number."""
    ok(cli("suppliers", "import", str(TERMS)))
    skus = ["CBL-USBC-1M", "CHG-65W", "PB-20K", "TEA-500G"]
    sheets = [
        write(tmp_path / f"s{n}.csv", f"sku,quantity\n{sku},{n + 5}\n")
        for n, sku in enumerate(skus)
    ]
    results = cli.all(
        *[("sheets", "submit", str(s), "--requester", str(REQUESTER)) for s in sheets]
    )
    numbers = sorted(ok(r).splitlines()[1].split()[0] for r in results)
    assert numbers == [f"PO-{YEAR}-0001", f"PO-{YEAR}-0002", f"PO-{YEAR}-0003", f"PO-{YEAR}-0004"]
    assert count(db_url, schema.jobs) == 4
