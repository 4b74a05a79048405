"""`manzoori backup` and `manzoori restore` as the IT person runs them at 2 a.m.: a snapshot with
its manifest, restored into a new database file, what was held said plainly, `verify` clean,
and a second restore over it refused without --force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.clock import utcnow
from store.sql import SqlStore
from tests.helpers import suppliers
from tests.helpers.cli import Cli, base_env, ok, with_store
from tests.helpers.factories import make_draft
from tests.helpers.review import RULES
from tests.helpers.store import grant_cast

pytestmark = pytest.mark.slow  # every test spawns `manzoori` subprocesses


def test_backup_then_restore_into_a_new_file(tmp_path: Path) -> None:
    source = f"sqlite+aiosqlite:///{tmp_path / 'shop.db'}"
    cli = Cli(tmp_path, base_env(source))
    ok(cli("db", "upgrade"))

    async def approved(store: SqlStore) -> None:
        await grant_cast(store)
        await suppliers.approved(store, make_draft("PO-2026-0042"), utcnow(), RULES)

    with_store(source, approved)
    said = ok(cli("backup", str(tmp_path / "backups"))).splitlines()
    [snapshot] = sorted((tmp_path / "backups").glob("manzoori-*.sqlite"))
    manifest = json.loads(snapshot.with_suffix(".json").read_text())
    assert said[0] == f"wrote {snapshot} (sqlite, revision {manifest['revision']})"
    assert manifest["rows"]["jobs"] == 1 and manifest["file"] == snapshot.name

    target = f"sqlite+aiosqlite:///{tmp_path / 'new' / 'shop.db'}"
    told = ok(cli("restore", str(snapshot), DATABASE_URL=target)).splitlines()
    assert told[0].startswith(f"restored {snapshot.name}, taken ")
    assert told[1].startswith("held for reconciliation (in /queue): PO-2026-0042: ")
    assert ok(cli("verify", DATABASE_URL=target)).startswith("verified")
    shown = json.loads(ok(cli("jobs", "show", "PO-2026-0042", "--json", DATABASE_URL=target)))
    assert shown["state"] == "UNKNOWN_OUTCOME"

    again = cli("restore", str(snapshot), DATABASE_URL=target)
    assert again.returncode == 1 and "the database is not empty" in again.stderr
