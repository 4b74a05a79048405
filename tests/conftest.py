"""Shared fixtures: the same store tests run on SQLite and, with TEST_POSTGRES_URL, PostgreSQL."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from bench.databases import reachable
from store.engine import make_engine
from store.migrate import upgrade
from store.schema import metadata
from store.sql import SqlStore
from tests.helpers.botapi import botapi_fixture  # noqa: F401 - provides the `botapi` fixture
from tests.helpers.dovecot import dovecot  # noqa: F401 - provides the `dovecot` fixture
from tests.helpers.store import DATA_KEY, POSTGRES_URL, grant_cast

_TABLES = ", ".join(metadata.tables)  # every table, so no test sees another's rows
_pg_ready = False
_sqlite_template: Path | None = None


async def _reset_postgres(url: str) -> None:
    """Once per session: a clean public schema, migrated to head; a worker's database made
    first if it is not there yet."""
    if not await reachable(url):  # made, if a worker's database is not there yet
        raise RuntimeError(f"PostgreSQL at {url} is not usable")
    engine = make_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await upgrade(engine)
    await engine.dispose()


async def _migrate_sqlite(url: str) -> None:
    engine = make_engine(url)
    await upgrade(engine)
    await engine.dispose()


def _migrated_sqlite(factory: pytest.TempPathFactory) -> Path:
    """Once per session: an empty SQLite file migrated to head, which each test copies (a
    migration costs about 80 ms, a copy next to nothing)."""
    global _sqlite_template
    if _sqlite_template is None:
        path = factory.mktemp("sqlite-template") / "manzoori.db"
        asyncio.run(_migrate_sqlite(f"sqlite+aiosqlite:///{path}"))
        _sqlite_template = path
    return _sqlite_template


async def _truncate(url: str) -> None:
    engine = make_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text(f"TRUNCATE {_TABLES} RESTART IDENTITY CASCADE"))
    await engine.dispose()


@pytest.fixture(autouse=True)
def _spawning_is_slow(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that starts a process must carry the `slow` marker, which `make test-fast` leaves
    out: in any other test, starting one fails it."""
    if request.node.get_closest_marker("slow") is not None:
        return

    def refuse(self: subprocess.Popen[bytes], args: object, *_: object, **__: object) -> None:
        self._child_created = False  # what Popen.__del__ reads
        raise AssertionError(f"this test starts a process ({args!r}): mark it slow")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(
    request: pytest.FixtureRequest, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """A migrated, empty database; PostgreSQL variants skip without TEST_POSTGRES_URL.

    Synchronous on purpose, so subprocess tests (crash, CLI) can use it as well.
    """
    global _pg_ready
    if request.param == "sqlite":
        path = tmp_path / "manzoori.db"
        shutil.copyfile(_migrated_sqlite(tmp_path_factory), path)
        return f"sqlite+aiosqlite:///{path}"
    if not POSTGRES_URL:
        pytest.skip("TEST_POSTGRES_URL is not set")
    if not _pg_ready:
        asyncio.run(_reset_postgres(POSTGRES_URL))
        _pg_ready = True
    asyncio.run(_truncate(POSTGRES_URL))
    return POSTGRES_URL


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[SqlStore]:
    """A SqlStore with the usual cast: one requester and two approvers."""
    store = SqlStore(make_engine(db_url), DATA_KEY)
    await grant_cast(store)
    yield store
    await store.close()


@pytest.fixture
def smtp_sink():  # -> Iterator[bot.dev.smtp.SmtpSink]
    """A real SMTP server on 127.0.0.1 that records what it accepts and answers as scripted."""
    # Imported here so this fixture stays one self-contained block at the end of the file.
    from bot.dev.smtp import running_sink

    with running_sink() as sink:
        yield sink
