"""Migrations as several processes starting at once run them: on one fresh PostgreSQL
database, each `manzoori db upgrade` waits for the one before it instead of failing."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import make_url, text

from store.engine import make_engine
from store.migrate import alembic_config, current
from tests.helpers.cli import Cli, base_env, ok

POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL")
# As many processes as a small deployment starts at once: the bot, the runner, a cron job.
STARTS = 3


async def _admin(url: str, statement: str) -> None:
    """Run CREATE or DROP DATABASE, which cannot run inside a transaction."""
    engine = make_engine(url, isolation_level="AUTOCOMMIT")
    async with engine.connect() as conn:
        await conn.execute(text(statement))
    await engine.dispose()


@pytest.fixture
def fresh_postgres() -> Iterator[str]:
    """A new, empty PostgreSQL database beside the test one, dropped afterwards."""
    if not POSTGRES_URL:
        pytest.skip("TEST_POSTGRES_URL is not set")
    base = make_url(POSTGRES_URL)
    name = f"{base.database}_migrate_{uuid.uuid4().hex[:8]}"
    asyncio.run(_admin(POSTGRES_URL, f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        asyncio.run(_admin(POSTGRES_URL, f'DROP DATABASE "{name}" WITH (FORCE)'))


async def _revision(url: str) -> str | None:
    engine = make_engine(url)
    try:
        return await current(engine)
    finally:
        await engine.dispose()


@pytest.mark.slow
def test_upgrades_started_at_once_on_a_fresh_database_all_succeed(
    fresh_postgres: str, tmp_path: Path
) -> None:
    cli = Cli(tmp_path, base_env(fresh_postgres))
    results = cli.all(*[("db", "upgrade")] * STARTS)
    for result in results:
        assert "database is at the latest schema" in ok(result)
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert asyncio.run(_revision(fresh_postgres)) == head
