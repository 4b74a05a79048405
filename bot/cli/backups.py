"""`manzoori backup DIR` and `manzoori restore FILE`: a consistent snapshot while the bot runs,
with its manifest; and its restore into an empty database, after which every e-mail the snapshot
shows unsettled is held for reconciliation, never sent blindly (core.outbox.restoring)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bot.cli.common import with_store
from bot.clock import utcnow
from bot.config import Settings
from core.outbox.restoring import hold_unsettled
from store import backups
from store.migrate import upgrade
from store.sql import SqlStore


def backup(
    folder: Annotated[Path, typer.Argument(file_okay=False, help="Where to write it.")],
) -> None:
    """Write a snapshot of the database and its manifest (schema revision, time, rows per
    table, SHA-256) into FOLDER, while the bot runs. Sealed fields stay sealed; no key is in
    it."""

    async def work(_settings: Settings, store: SqlStore) -> backups.Manifest:
        return await backups.backup(store.engine, folder, utcnow())

    manifest = with_store(work)
    typer.echo(f"wrote {folder / manifest.file} ({manifest.dialect}, revision {manifest.revision})")
    typer.echo(f"rows: {sum(manifest.rows.values())}, jobs: {manifest.rows.get('jobs', 0)}")
    typer.echo(f"sha256: {manifest.sha256}")


def restore(
    snapshot: Annotated[Path, typer.Argument(dir_okay=False, help="The snapshot to restore.")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace a database that is not empty.")
    ] = False,
) -> None:
    """Restore a snapshot into DATABASE_URL (an empty database, unless --force), bring its
    schema to the newest revision, and hold every e-mail it shows unsettled for
    reconciliation: nothing it held is sent again without a person or the relay's copy."""

    async def work(_settings: Settings, store: SqlStore) -> list[str]:
        manifest = await backups.restore(store.engine, snapshot, force=force)
        await upgrade(store.engine)
        held = await hold_unsettled(store, manifest.taken_at, utcnow())
        taken = manifest.taken_at.isoformat(timespec="seconds")
        lines = [f"restored {snapshot.name}, taken {taken} at revision {manifest.revision}"]
        if held.pos:
            lines.append(
                f"held for reconciliation (in /queue): {', '.join(held.pos)}: they may have "
                "left after the snapshot; the relay's Sent copy or a person settles each"
            )
        else:
            lines.append("no e-mail was unsettled in the snapshot")
        lines.append(
            f"{held.notes} notes to suppliers held, {held.dropped} Telegram messages dropped, "
            f"{held.cards} cards to send again"
        )
        return lines

    for line in with_store(work):
        typer.echo(line)
