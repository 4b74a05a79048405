"""Backups that restore: a consistent snapshot of the database taken while the bot runs, with a
manifest that says what it holds, and its restore into an empty database.

SQLite: the online backup API (sqlite3's `backup`), page by page from a read transaction, so
the copy is one moment of the file while writers go on. PostgreSQL: `pg_dump` in its custom
format, from a snapshot exported by a REPEATABLE READ transaction that the manifest's row counts
are read in too, so the counts are the dump's. Sealed fields stay sealed: a backup never holds
a key.

The manifest (JSON, beside the snapshot) names the schema revision, the time, the dialect, the
row count of every table and the snapshot's SHA-256; a restore refuses a file that does not
match it, a database that is not empty (without `force`), and one of the other dialect.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from core.errors import ConfigError
from store.schema import metadata

MANIFEST_SUFFIX = ".json"
_SUFFIX = {"sqlite": ".sqlite", "postgresql": ".dump"}


class BackupError(ConfigError):
    """A backup or a restore that cannot be done as asked; the message says why."""


@dataclass(frozen=True)
class Manifest:
    """What a snapshot holds."""

    dialect: str
    revision: str | None
    taken_at: datetime
    rows: dict[str, int]
    sha256: str
    file: str  # the snapshot's name, beside the manifest

    def as_json(self) -> str:
        return json.dumps(
            {
                "dialect": self.dialect,
                "revision": self.revision,
                "taken_at": self.taken_at.isoformat(),
                "rows": self.rows,
                "sha256": self.sha256,
                "file": self.file,
            },
            indent=2,
            sort_keys=True,
        )

    @classmethod
    def read(cls, path: Path) -> Manifest:
        try:
            data: dict[str, Any] = json.loads(path.read_text())
            return cls(
                dialect=str(data["dialect"]),
                revision=data["revision"],
                taken_at=datetime.fromisoformat(data["taken_at"]),
                rows={str(k): int(v) for k, v in data["rows"].items()},
                sha256=str(data["sha256"]),
                file=str(data["file"]),
            )
        except FileNotFoundError:
            raise BackupError(f"no manifest beside the snapshot: {path} is missing") from None
        except (ValueError, KeyError, TypeError) as error:
            raise BackupError(f"{path} is not a Manzoori backup manifest ({error})") from None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_of(snapshot: Path) -> Path:
    return snapshot.with_suffix(MANIFEST_SUFFIX)


async def backup(engine: AsyncEngine, folder: Path, now: datetime) -> Manifest:
    """A snapshot of the database behind `engine` in `folder`, and its manifest beside it."""
    dialect = engine.dialect.name
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    snapshot = folder / f"manzoori-{stamp}{_SUFFIX[dialect]}"
    partial = snapshot.with_name(snapshot.name + ".partial")
    try:
        if dialect == "sqlite":
            rows, revision = await asyncio.to_thread(_sqlite_backup, engine, partial)
        else:
            rows, revision = await _postgres_backup(engine, partial)
        os.replace(partial, snapshot)  # a snapshot file is whole, or not there
    finally:
        partial.unlink(missing_ok=True)
    digest = await asyncio.to_thread(sha256_of, snapshot)
    manifest = Manifest(dialect, revision, now, rows, digest, snapshot.name)
    await asyncio.to_thread(manifest_of(snapshot).write_text, manifest.as_json())
    return manifest


def _sqlite_path(engine: AsyncEngine) -> Path:
    database = make_url(str(engine.url)).database
    if not database or database == ":memory:":
        raise BackupError("an in-memory SQLite database cannot be backed up")
    return Path(database)


def _sqlite_backup(engine: AsyncEngine, target: Path) -> tuple[dict[str, int], str | None]:
    source = sqlite3.connect(_sqlite_path(engine))
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)  # one consistent moment, writers going on meanwhile
        return _sqlite_counts(copy)
    finally:
        copy.close()
        source.close()


def _sqlite_counts(db: sqlite3.Connection) -> tuple[dict[str, int], str | None]:
    rows = {
        name: int(db.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0])  # noqa: S608
        for name in sorted(metadata.tables)
    }
    found = db.execute("SELECT version_num FROM alembic_version").fetchone()
    return rows, found[0] if found else None


def _libpq(engine: AsyncEngine) -> str:
    """The engine's URL as pg_dump and pg_restore take it (password included, kept out of
    the process list through PGPASSWORD)."""
    url = make_url(str(engine.url.render_as_string(hide_password=False)))
    return str(
        url.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    )


def _pg_env(engine: AsyncEngine) -> dict[str, str]:
    env = dict(os.environ)
    password = make_url(engine.url.render_as_string(hide_password=False)).password
    if password:
        env["PGPASSWORD"] = str(password)
    return env


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BackupError(
            f"{name} is not installed: install PostgreSQL's client programs "
            "(Debian: postgresql-client) of the server's major version"
        )
    return found


async def _postgres_backup(engine: AsyncEngine, target: Path) -> tuple[dict[str, int], str | None]:
    dump = _tool("pg_dump")
    async with engine.connect() as conn:
        await conn.execute(text("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"))
        snapshot_id = (await conn.execute(text("SELECT pg_export_snapshot()"))).scalar_one()
        rows, revision = await _counts(conn)
        process = await asyncio.create_subprocess_exec(
            dump, "--format=custom", f"--snapshot={snapshot_id}", f"--file={target}",
            _libpq(engine), env=_pg_env(engine),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, errors = await process.communicate()
        await conn.execute(text("COMMIT"))
    if process.returncode != 0:
        raise BackupError(f"pg_dump failed: {errors.decode(errors='replace').strip()[:500]}")
    return rows, revision


async def _counts(conn: AsyncConnection) -> tuple[dict[str, int], str | None]:
    rows = {}
    for name, table in sorted(metadata.tables.items()):
        rows[name] = int((await conn.execute(select(func.count()).select_from(table))).scalar_one())
    revision = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
    return rows, revision


async def is_empty(engine: AsyncEngine) -> bool:
    """Whether the database holds none of our tables, or only empty ones."""
    async with engine.connect() as conn:
        names = await conn.run_sync(lambda sync: set(sync.dialect.get_table_names(sync)))
        for name in sorted(names & set(metadata.tables)):
            if (
                await conn.execute(select(func.count()).select_from(metadata.tables[name]))
            ).scalar():
                return False
    return True


async def restore(engine: AsyncEngine, snapshot: Path, *, force: bool = False) -> Manifest:
    """Restore `snapshot` into the database behind `engine`, after checking its manifest;
    refuse a database that is not empty unless `force`. The caller then holds what the
    snapshot shows unsettled (core.outbox.restoring)."""
    manifest = await asyncio.to_thread(_checked, snapshot)
    dialect = engine.dialect.name
    if manifest.dialect != dialect:
        raise BackupError(f"a {manifest.dialect} backup cannot be restored into {dialect}")
    if dialect == "sqlite":  # a new file in a new folder, as at 2 a.m. on a new disk
        await asyncio.to_thread(_sqlite_path(engine).parent.mkdir, parents=True, exist_ok=True)
    if not force and not await is_empty(engine):
        raise BackupError(
            "the database is not empty: restore into an empty one, or pass --force to replace it"
        )
    if dialect == "sqlite":
        await engine.dispose()
        await asyncio.to_thread(_sqlite_restore, _sqlite_path(engine), snapshot)
    else:
        await _postgres_restore(engine, snapshot, force)
    return manifest


def _checked(snapshot: Path) -> Manifest:
    """The snapshot's manifest, once the file is there and matches it."""
    manifest = Manifest.read(manifest_of(snapshot))
    if not snapshot.exists():
        raise BackupError(f"{snapshot} does not exist")
    if sha256_of(snapshot) != manifest.sha256:
        raise BackupError(f"{snapshot} does not match its manifest's SHA-256: not restored")
    return manifest


def _sqlite_restore(target: Path, snapshot: Path) -> None:
    folder = target.parent
    folder.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=target.name, dir=folder)
    os.close(handle)
    try:
        source, copy = sqlite3.connect(snapshot), sqlite3.connect(name)
        try:
            source.backup(copy)
        finally:
            copy.close()
            source.close()
        for leftover in (Path(f"{target}-wal"), Path(f"{target}-shm")):
            leftover.unlink(missing_ok=True)
        os.replace(name, target)
    finally:
        Path(name).unlink(missing_ok=True)


async def _postgres_restore(engine: AsyncEngine, snapshot: Path, force: bool) -> None:
    tool = _tool("pg_restore")
    if force:
        async with engine.begin() as conn:
            await conn.execute(text("DROP SCHEMA public CASCADE"))
            await conn.execute(text("CREATE SCHEMA public"))
    await engine.dispose()
    process = await asyncio.create_subprocess_exec(
        tool, "--no-owner", "--no-privileges", "--exit-on-error", f"--dbname={_libpq(engine)}",
        str(snapshot), env=_pg_env(engine),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, errors = await process.communicate()
    if process.returncode != 0:
        raise BackupError(f"pg_restore failed: {errors.decode(errors='replace').strip()[:500]}")


def prune(folder: Path, keep: int) -> list[Path]:
    """Remove all but the newest `keep` snapshots in `folder` (and their manifests); the ones
    removed. Snapshots are named by their time, so the names sort by age."""
    snapshots = sorted(p for p in folder.glob("manzoori-*") if p.suffix in set(_SUFFIX.values()))
    gone = snapshots[: max(len(snapshots) - keep, 0)]
    for snapshot in gone:
        snapshot.unlink(missing_ok=True)
        manifest_of(snapshot).unlink(missing_ok=True)
    return gone
