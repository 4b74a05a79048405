"""`manzoori purge [--dry-run]` and `manzoori jobs show` on a purged PO: real subprocesses."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from bot.clock import utcnow
from core.approval import opening
from core.approval.policies import Rules
from core.jobs import closing
from core.jobs.jobs import Stamp
from tests.helpers.cli import Cli, base_env, ok, with_store
from tests.helpers.factories import make_draft, new_job

pytestmark = pytest.mark.slow  # every test spawns `manzoori` subprocesses

NOTE = "Priya at Hall Road asked us to hold it"
LONG_AGO = timedelta(days=500)  # past the default MANZOORI_RETENTION_DAYS of 400


async def cancelled_long_ago(store):
    then = utcnow() - LONG_AGO
    await opening.open_job(store, new_job(), make_draft("PO-2025-001"), then, Rules())
    await closing.cancel(store, "PO-2025-001", NOTE, Stamp("cli:admin", then))
    async with store.begin() as tx:
        await tx.claim_update(7, then)


def test_purge_dry_run_then_purge_then_show(db_url: str, tmp_path: Path) -> None:
    cli = Cli(tmp_path, base_env(db_url))
    with_store(db_url, cancelled_long_ago)
    dry = ok(cli("purge", "--dry-run"))
    assert dry.startswith("would remove (dry run; nothing was changed):")
    assert "  closed jobs purged              1" in dry.splitlines()
    assert "  processed update ids            1" in dry.splitlines()
    shown = ok(cli("jobs", "show", "PO-2025-001", "--json"))
    assert json.loads(shown)["purged_at"] is None  # the dry run changed nothing

    done = json.loads(ok(cli("purge", "--json")))
    assert done["dry_run"] is False
    assert done["counts"]["jobs"] == 1 and done["counts"]["draft_bodies"] == 1
    assert done["counts"]["audit_texts"] == 1 and done["counts"]["processed_updates"] == 1
    assert ok(cli("purge")).splitlines()[1:] == [
        line.replace(" 1", " 0") for line in dry.splitlines()[1:]
    ]  # nothing left the second time

    text = ok(cli("jobs", "show", "PO-2025-001"))
    assert "purged " in text and "(retention): draft bodies 1" in text and NOTE not in text
    detail = json.loads(ok(cli("jobs", "show", "PO-2025-001", "--json")))
    assert detail["state"] == "CANCELLED" and detail["purged"]["draft_bodies"] == 1
    assert NOTE not in json.dumps(detail)


def test_retention_days_come_from_the_environment(db_url: str, tmp_path: Path) -> None:
    cli = Cli(tmp_path, base_env(db_url))
    with_store(db_url, cancelled_long_ago)
    kept = ok(cli("purge", "--dry-run", "--json", MANZOORI_RETENTION_DAYS=600))
    assert json.loads(kept)["counts"]["jobs"] == 0
    bad = cli("purge", MANZOORI_RETENTION_DAYS=0)
    assert bad.returncode == 1 and "MANZOORI_RETENTION_DAYS" in bad.stderr
