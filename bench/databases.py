"""The databases a benchmark runs on: fresh and migrated, and counted as they are used."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from store.engine import make_engine
from store.migrate import upgrade

# Where `make bench` finds PostgreSQL unless BENCH_POSTGRES_URL says otherwise: a database
# the bench owns and may wipe (its public schema is dropped and migrated afresh each run).
DEFAULT_POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/bench"


@dataclass(frozen=True)
class Database:
    """One database a flow runs on: its kind ("sqlite" or "postgres"), its label, its URL."""

    kind: str
    label: str
    url: str


def sqlite_database(directory: str, name: str) -> Database:
    """A SQLite file named `name` in `directory` (migrated() empties it)."""
    return Database("sqlite", "SQLite", f"sqlite+aiosqlite:///{Path(directory) / name}.sqlite")


def databases(directory: str, postgres_url: str | None, name: str) -> list[Database]:
    """SQLite (a file for `name` in `directory`) and, when the run has one, PostgreSQL."""
    return [sqlite_database(directory, name)] + (
        [postgres_database(postgres_url)] if postgres_url else []
    )


def postgres_database(url: str) -> Database:
    """The PostgreSQL database at `url`."""
    return Database("postgres", "PostgreSQL", url)


def postgres_url_from_env() -> str | None:
    """BENCH_POSTGRES_URL, or the default; an empty BENCH_POSTGRES_URL means no PostgreSQL."""
    url = os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    return url or None


async def reachable(url: str) -> bool:
    """Whether the database `url` names can be used now, created first if the server has
    no database of that name (on a fresh machine `make bench` finds only `postgres`)."""
    parsed = make_url(url)
    engine = make_engine(str(parsed.set(database="postgres")), isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            found = await conn.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": parsed.database}
            )
            if found.scalar() is None:
                await conn.execute(text(f'CREATE DATABASE "{parsed.database}"'))
        return True
    except Exception:  # any failure to connect means the same here: no PostgreSQL rows
        return False
    finally:
        await engine.dispose()


async def migrated(db: Database) -> AsyncEngine:
    """An engine on `db`, emptied (SQLite: the file removed; PostgreSQL: the public schema
    dropped) and migrated to head."""
    if db.kind == "sqlite":
        path = Path(db.url.removeprefix("sqlite+aiosqlite:///"))
        for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            leftover.unlink(missing_ok=True)
    engine = make_engine(db.url)
    if db.kind == "postgres":
        async with engine.begin() as conn:
            await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            await conn.execute(text("CREATE SCHEMA public"))
    await upgrade(engine)
    return engine


class Counters:
    """Commits and statements an engine performs, counted by SQLAlchemy's engine events."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.commits = 0
        self.statements = 0
        event.listen(engine.sync_engine, "commit", self._on_commit)
        event.listen(engine.sync_engine, "before_cursor_execute", self._on_statement)

    def _on_commit(self, _conn: Any) -> None:
        self.commits += 1

    def _on_statement(self, *_args: Any) -> None:
        # Every statement the engine hands the driver. BEGIN is not among them on either
        # database: asyncpg opens its transactions itself, and on SQLite the driver does
        # (store.sqlite_driver.Connection.begin).
        self.statements += 1

    def reset(self) -> None:
        """Start counting from zero (after the set-up, before the flow)."""
        self.commits = self.statements = 0
