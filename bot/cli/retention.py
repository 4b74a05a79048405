"""`manzoori purge [--dry-run]`: remove what is past its retention now (docs/retention.md)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Annotated

import typer

from bot.cli.common import JsonFlag, stamp, with_store
from bot.config import Settings
from bot.words import reports
from core.records import retention
from core.records.retention import Purge
from store.sql import SqlStore

DryRunFlag = Annotated[
    bool, typer.Option("--dry-run", help="Print what would be removed; change nothing.")
]


def purge(dry_run: DryRunFlag = False, as_json: JsonFlag = False) -> None:
    """Remove what is past its retention (the runner does this daily), and print the counts."""

    async def work(settings: Settings, store: SqlStore) -> Counter[str]:
        plan = Purge(stamp(), settings.retention(), settings.manzoori_admin_ids)
        if dry_run:
            return await retention.survey(store, plan)
        return await retention.run(store, plan)

    counts = with_store(work)
    if as_json:
        typer.echo(json.dumps({"dry_run": dry_run, "counts": dict(counts)}, indent=2))
    else:
        typer.echo(reports.purge_counts(counts, dry_run=dry_run))
