"""The runner's daily backup (MANZOORI_BACKUP_DIR): one process a day takes it, whichever asks
first; the next day another; only the newest MANZOORI_BACKUP_KEEP are kept, each with its
manifest; without the setting nothing is written."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.bootstrap import DailyBackup
from bot.clock import Runtime
from tests.helpers.bot import settings_for
from tests.helpers.factories import T0

pytestmark = pytest.mark.slow  # on PostgreSQL, pg_dump is a process


def at(moment):
    return lambda: moment


async def test_one_backup_a_day_across_processes_the_newest_kept(store, db_url, tmp_path: Path):
    folder = tmp_path / "backups"
    settings = settings_for(db_url, manzoori_backup_dir=folder, manzoori_backup_keep=2)
    for day in range(3):
        now = T0 + timedelta(days=day, minutes=day)
        for process in ("host-a", "host-b"):  # two processes ask at the same moment
            await DailyBackup(settings, store, Runtime(process, at(now))).run_once()
        later = now + timedelta(hours=6)  # asked again the same day: not due
        await DailyBackup(settings, store, Runtime("host-a", at(later))).run_once()
    names = sorted(p.name for p in folder.iterdir())
    suffix = ".sqlite" if db_url.startswith("sqlite") else ".dump"
    assert names == sorted(  # ".dump" sorts before ".json", ".sqlite" after
        f"manzoori-{day}{ending}"
        for day in ("20261130T090100Z", "20261201T090200Z")
        for ending in (".json", suffix)
    )


async def test_without_a_folder_nothing_is_written(store, db_url, tmp_path: Path):
    settings = settings_for(db_url)
    assert settings.manzoori_backup_dir is None
    await DailyBackup(settings, store, Runtime("host-a", at(T0))).run_once()
    assert list(tmp_path.glob("**/manzoori-*")) == []
