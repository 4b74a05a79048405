"""Alembic, driven from code: `manzoori db upgrade` and `manzoori run` call `upgrade`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

if TYPE_CHECKING:
    from alembic.config import Config

_SCRIPTS = Path(__file__).with_name("migrations")
# The PostgreSQL advisory lock every upgrade takes first: "manzoori" in ASCII, a fixed key no
# other application on a shared server is likely to pick.
MIGRATION_LOCK_KEY = 0x6D616E7A6F6F7269


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config pointing at store/migrations, sharing `connection` if given."""
    from alembic.config import Config  # imported here: Alembic costs every CLI call ~0.3 s

    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.attributes["connection"] = connection
    return config


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Bring the schema to `revision` inside one transaction. Processes that start at once
    wait for each other: on PostgreSQL behind an advisory lock held until this transaction
    ends (the later ones then find the schema at head and do nothing), on SQLite behind the
    write lock that BEGIN IMMEDIATE takes."""
    from alembic import command

    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
            )
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(sync), revision))


def head_revision() -> str | None:
    """The newest revision the code knows."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


async def current(engine: AsyncEngine) -> str | None:
    """The revision the database is at, or None before the first upgrade."""
    from alembic.runtime.migration import MigrationContext

    async with engine.connect() as conn:
        return await conn.run_sync(
            lambda sync: MigrationContext.configure(sync).get_current_revision()
        )
