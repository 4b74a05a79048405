"""`manzoori audit export` as an admin runs it, on SQLite and PostgreSQL: a period's events as
CSV on stdout or JSON in a file, and bad days refused before the database is read."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from pathlib import Path

import pytest

from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Verdict
from core.jobs.jobs import AuditEvent, Stamp
from core.jobs.states import State
from core.outbox import dispatch
from core.outbox.dispatch import Attempted
from store.sql import SqlStore
from tests.helpers.cli import RULES, Cli, base_env, ok, with_store
from tests.helpers.documents import with_document
from tests.helpers.factories import APPROVER_A, T0, make_draft, new_job
from tests.helpers.store import grant_cast

pytestmark = pytest.mark.slow  # every test spawns `manzoori` subprocesses

PO = "PO-2026-0001"
LEASE = timedelta(seconds=60)
# T0 is 14:00 on 2026-11-29 in Karachi; 19:30 UTC that day is already the 30th there.
NEXT_DAY = T0.replace(hour=19, minute=30)


@pytest.fixture
def cli(db_url: str, tmp_path: Path) -> Cli:
    return Cli(tmp_path, base_env(db_url))


async def sent_po(store: SqlStore) -> None:
    """The cast, and PO approved at T0 and e-mailed; an invitation on the next Pakistan day."""
    await grant_cast(store)
    job = await opening.open_job(store, new_job(), make_draft(PO), T0, RULES)
    review = Review(PO, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash or "")
    await decisions.decide(store, review, T0, RULES)
    [effect] = await dispatch.claim(store, T0, "r1", LEASE, 10)
    await with_document(store, effect, T0)
    order = await dispatch.start_attempt(store, effect.key, "r1", T0, LEASE, RULES)
    assert order is not None
    done = Attempted("r1", result={"smtp": "250 ok"})
    assert await dispatch.finish_attempt(store, order, done, T0, RULES, 0.5) is State.SENT
    async with store.begin() as tx:
        await tx.append_audit(
            AuditEvent.stamped(Stamp("user:9001", NEXT_DAY), "invite", {"role": "approver"})
        )


def test_export_writes_a_days_events_as_csv_or_json(cli: Cli, db_url: str, tmp_path: Path):
    with_store(db_url, sent_po)
    out = tmp_path / "november.json"
    day, both, to_file = cli.all(
        ("audit", "export", "--from", "2026-11-29", "--to", "2026-11-29"),
        ("audit", "export", "--from", "2026-11-29", "--to", "2026-11-30", "--format", "csv"),
        ("audit", "export", "--from", "2026-11-01", "--to", "2026-11-30", "--format", "json",
         "--output", str(out)),
    )  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(ok(day), newline="")))
    assert [r["event"] for r in rows] == [
        "grant_role", "grant_role", "grant_role", "receive", "validate", "research", "draft",
        "request_approval", "approve", "start_send", "mark_sent",
    ]  # fmt: skip
    approve, sent = rows[8], rows[10]
    assert (approve["po_number"], approve["actor"], approve["stage"]) == (
        PO,
        f"user:{APPROVER_A}",
        "1",
    )
    # The configured default policy (no file imported: no version); under PKR 500,000: one.
    assert approve["policy_version"] == "" and approve["rule"] == "single"
    assert approve["verdict"] == "approve" and approve["draft_version"] == "1"
    assert (sent["result"], sent["draft_version"], sent["draft_hash"]) == (
        "sent", "1", approve["draft_hash"],
    )  # fmt: skip
    assert day.stderr.strip() == "11 audit events, 2026-11-29 to 2026-11-29"
    assert [r["event"] for r in csv.DictReader(io.StringIO(ok(both)))][-1] == "invite"

    assert ok(to_file) == ""
    assert to_file.stderr.strip() == f"12 audit events, 2026-11-01 to 2026-11-30 to {out}"
    events = json.loads(out.read_text(encoding="utf-8"))
    assert [e["event"] for e in events][-3:] == ["start_send", "mark_sent", "invite"]
    assert events[-1]["po_number"] is None and events[-1]["detail"] == {"role": "approver"}
    assert events[-2]["result"] == "sent" and events[-2]["at"] == T0.isoformat()
    assert "hall-road" not in out.read_text() and not list(tmp_path.glob(".*.part"))


def test_bad_days_and_a_backwards_period_are_refused(cli: Cli, tmp_path: Path):
    out = tmp_path / "never.csv"
    nowhere = tmp_path / "no-such-folder" / "audit.csv"
    typo, backwards, no_to, unwritable = cli.all(
        ("audit", "export", "--from", "2026-02-30", "--to", "2026-03-01"),
        ("audit", "export", "--from", "2026-11-30", "--to", "2026-11-01", "--output", str(out)),
        ("audit", "export", "--from", "2026-11-01"),
        ("audit", "export", "--from", "2026-11-01", "--to", "2026-11-01", "--output", str(nowhere)),
    )
    assert typo.returncode == 1 and typo.stdout == ""
    assert typo.stderr.strip() == (
        "error: '2026-02-30' is not a date; write it as YYYY-MM-DD, e.g. 2026-12-31"
    )
    assert backwards.returncode == 1 and not out.exists()
    assert backwards.stderr.strip() == (
        "error: the period ends (2026-11-01) before it starts (2026-11-30)"
    )
    assert no_to.returncode == 2 and "--to" in no_to.stderr  # click's usage error
    assert unwritable.returncode == 1 and unwritable.stderr.strip() == (
        f"error: cannot write {nowhere}: No such file or directory"
    )
