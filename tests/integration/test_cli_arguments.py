"""Odd arguments to `manzoori` (issue 21): each is refused with a clear message and a non-zero
exit, never a traceback. Ids must fit the database's BIGINT, days the range an export covers,
paths must be writable."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.clock import utcnow
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Verdict
from core.outbox import dispatch
from store.sql import SqlStore
from tests.helpers.cli import RULES, Cli, base_env, plain, with_store
from tests.helpers.documents import with_document
from tests.helpers.factories import APPROVER_A, make_draft, new_job
from tests.helpers.store import grant_cast

pytestmark = pytest.mark.slow  # every test spawns `manzoori` subprocesses

PKT = ZoneInfo("Asia/Karachi")
LEASE = timedelta(seconds=60)
HUGE = "99999999999999999999"  # beyond 64 bits
PAST_BIGINT = "9223372036854775808"  # one more than the database's BIGINT holds
NOT_AN_ID = "is not a Telegram user id: digits 0-9, from 1 to 9223372036854775807"


@pytest.fixture
def cli(db_url: str, tmp_path: Path) -> Cli:
    return Cli(tmp_path, base_env(db_url))


def refused(result, message: str, code: int = 1) -> None:
    """The command failed with `code` and said `message`, without a traceback."""
    said = plain(result.stderr)
    assert result.returncode == code, said
    assert "Traceback" not in result.stderr and message in said, said


def test_ids_beyond_what_the_database_holds_are_refused(cli: Cli, tmp_path: Path):
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("sku,quantity\nCHG-65W,3\n")
    results = cli.all(
        ("users", "grant", HUGE, "admin"),  # was an OverflowError from SQLite's driver
        ("users", "grant", PAST_BIGINT, "approver"),
        ("users", "revoke", HUGE),
        ("sheets", "submit", str(sheet), "--requester", HUGE),
        ("users", "grant", "0", "admin"),  # nobody's id
        ("users", "grant", "۱۲۳", "admin"),  # Urdu digits: ids are written 0-9
        ("users", "grant", "0x10", "admin"),
    )
    for result, typed in zip(results, (HUGE, PAST_BIGINT, HUGE, HUGE, "0", "۱۲۳", "0x10"),
                             strict=True):  # fmt: skip
        refused(result, f"'{typed}' {NOT_AN_ID}", code=2)  # click's usage error


def test_a_limit_and_a_po_number_are_read_as_the_database_holds_them(cli: Cli):
    too_many, fine, not_a_po, lower_case = cli.all(
        ("jobs", "list", "--limit", PAST_BIGINT),  # was an OverflowError from SQLite's driver
        ("jobs", "list", "--limit", "9223372036854775807"),
        ("jobs", "show", "PO-2026-0001\x01"),
        ("jobs", "show", "po-2026-0404"),  # read as the bot reads it, in any case
    )
    refused(too_many, "should be less than or equal to 9223372036854775807", code=2)
    assert fine.returncode == 0, fine.stderr
    refused(not_a_po, "'PO-2026-0001\\x01' is not a PO number, such as PO-2026-0001", code=2)
    refused(lower_case, "error: no purchase order PO-2026-0404")


def test_export_days_at_the_edges_of_the_calendar_are_refused_with_the_range(
    cli: Cli, tmp_path: Path
):
    out = tmp_path / "all.csv"
    tomorrow = (utcnow().astimezone(PKT) + timedelta(days=1)).date()
    covered = f"an export covers the days from 2000-01-01 to {tomorrow} (tomorrow)"
    everything, to_the_end, too_early = cli.all(
        ("audit", "export", "--from", "0001-01-01", "--to", "9999-12-31"),  # the issue's
        ("audit", "export", "--from", "2026-01-01", "--to", "9999-12-31", "--output", str(out)),
        ("audit", "export", "--from", "1999-12-31", "--to", "2026-01-01"),
    )
    refused(everything, f"error: the period starts on 0001-01-01: {covered}")
    refused(to_the_end, f"error: the period ends on 9999-12-31: {covered}")
    refused(too_early, f"error: the period starts on 1999-12-31: {covered}")
    assert everything.stdout == "" and not out.exists() and not list(tmp_path.glob(".*.part"))


def test_paths_that_cannot_be_written_are_refused(cli: Cli, tmp_path: Path):
    missing = tmp_path / "no-such-folder" / ".env"
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    env_nowhere, demo_nowhere = cli.all(
        ("init", "--path", str(missing)),  # was FileNotFoundError
        ("demo", "--folder", str(a_file / "demo")),  # was FileNotFoundError (NotADirectory)
    )
    refused(env_nowhere, f"error: cannot write {missing}: No such file or directory")
    refused(demo_nowhere, f"error: cannot use {a_file / 'demo'} as the demo's folder: Not a dir")


async def in_flight(store: SqlStore) -> None:
    """A PO whose send another runner has started and holds for a minute: work still open."""
    await grant_cast(store)
    po, now = "PO-2026-0001", utcnow()
    job = await opening.open_job(store, new_job(), make_draft(po), now, RULES)
    review = Review(po, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash or "")
    await decisions.decide(store, review, now, RULES)
    [effect] = await dispatch.claim(store, now, "r1", LEASE, 10)
    await with_document(store, effect, now)
    assert await dispatch.start_attempt(store, effect.key, "r1", now, LEASE, RULES) is not None


def test_a_runner_out_of_time_says_so_in_one_line(cli: Cli, db_url: str):
    with_store(db_url, in_flight)
    result = cli("runner", "--until-idle", "--max-seconds", "0", MANZOORI_POLL_SECONDS=0.1)
    refused(result, "error: the outbox still had work after --max-seconds 0: run it again")
    negative, endless = cli.all(
        ("runner", "--until-idle", "--max-seconds", "-1"),
        ("runner", "--until-idle", "--max-seconds", "nan"),  # would never time out
    )
    refused(negative, "'-1' is not a number of seconds (0 or more)", code=2)
    refused(endless, "'nan' is not a number of seconds (0 or more)", code=2)
