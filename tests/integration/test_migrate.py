"""Migrations as several processes starting at once run them: on one fresh PostgreSQL
database, each `manzoori db upgrade` waits for the one before it instead of failing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import insert, make_url, select, text
from sqlalchemy.exc import DBAPIError

from store import schema
from store.engine import make_engine
from store.migrate import alembic_config, current, upgrade
from tests.helpers.cli import Cli, base_env, ok
from tests.helpers.store import BASE_POSTGRES_URL

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
    if not BASE_POSTGRES_URL:
        pytest.skip("TEST_POSTGRES_URL is not set")
    base = make_url(BASE_POSTGRES_URL)
    name = f"{base.database}_migrate_{uuid.uuid4().hex[:8]}"
    asyncio.run(_admin(BASE_POSTGRES_URL, f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        asyncio.run(_admin(BASE_POSTGRES_URL, f'DROP DATABASE "{name}" WITH (FORCE)'))


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


async def _downgrade(url: str, revision: str) -> None:
    from alembic import command

    engine = make_engine(url)
    async with engine.begin() as conn:
        await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), revision))
    await engine.dispose()


_AT = datetime(2026, 11, 30, 19, 30, tzinfo=UTC)


async def _approved_before_budgets(url: str) -> None:
    """At revision 0009 (before budgets): an approved job with its "approve" event, and a
    waiting one."""
    engine = make_engine(url)
    await upgrade(engine, "0009")
    async with engine.begin() as conn:
        for number, state in ((1, "SENT"), (2, "AWAITING_APPROVAL")):
            job_id = f"job-{number}"
            await conn.execute(
                insert(schema.jobs).values(
                    id=job_id, po_number=f"PO-2026-000{number}", state=state, version=5,
                    requester_id=1001, input_ref=f"sheet:{number}", workflow_version="w",
                    source_versions={}, tool_results={}, retry_count=0, created_at=_AT,
                    updated_at=_AT,
                )
            )  # fmt: skip
            for action, at in (("approve", _AT - timedelta(days=2)), ("approve", _AT)):
                await conn.execute(
                    insert(schema.audit_events).values(
                        job_id=job_id, at=at, actor="user:2001", action=action, detail={}
                    )
                )
    await engine.dispose()


async def _approved_at(url: str) -> dict[str, datetime | None]:
    engine = make_engine(url)
    async with engine.connect() as conn:
        t = schema.jobs
        rows = await conn.execute(select(t.c.id, t.c.approved_at).order_by(t.c.id))
        found = {row.id: row.approved_at for row in rows}
    await engine.dispose()
    return found


async def _order_line_update(url: str) -> None:
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE order_lines SET sku = 'x'"))
    finally:
        await engine.dispose()


async def _budgets_revision_round_trip(url: str) -> None:
    """0010 gives a committed job the time of its last approval, and nothing else one;
    going back to 0009 keeps the append-only guards of the tables it changed."""
    await _approved_before_budgets(url)
    engine = make_engine(url)
    await upgrade(engine)
    await engine.dispose()
    assert await _approved_at(url) == {"job-1": _AT, "job-2": None}
    await _downgrade(url, "0009")
    assert await _revision(url) == "0009"
    engine = make_engine(url)
    async with engine.begin() as conn:
        await conn.execute(
            insert(schema.order_lines).values(
                job_id="job-1", draft_version=1, sku="A", supplier_id="S", quantity=1,
                unit_price_paisa=1,
            )
        )  # fmt: skip
    await engine.dispose()
    with pytest.raises(DBAPIError, match="append-only"):
        await _order_line_update(url)


def test_the_budgets_revision_backfills_and_goes_back_on_sqlite(tmp_path: Path) -> None:
    asyncio.run(_budgets_revision_round_trip(f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"))


def test_the_budgets_revision_backfills_and_goes_back_on_postgres(fresh_postgres: str) -> None:
    asyncio.run(_budgets_revision_round_trip(fresh_postgres))


async def _language_revision_round_trip(url: str) -> None:
    """0011 adds each person's language, none chosen for those met before it; going back to
    0010 drops it and keeps the people."""
    engine = make_engine(url)
    await upgrade(engine, "0010")
    users = schema.telegram_users
    async with engine.begin() as conn:
        met = "INSERT INTO telegram_users (user_id, first_name, updated_at) VALUES (7, 'Ali', :at)"
        await conn.execute(text(met), {"at": _AT})
    await upgrade(engine)
    async with engine.begin() as conn:
        assert (await conn.execute(select(users.c.language))).scalars().all() == [None]
        await conn.execute(users.update().values(language="ur"))
    await engine.dispose()
    await _downgrade(url, "0010")
    engine = make_engine(url)
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT user_id, first_name FROM telegram_users"))).all()
    await engine.dispose()
    assert [tuple(row) for row in rows] == [(7, "Ali")]


def test_the_language_revision_adds_the_column_and_goes_back_on_sqlite(tmp_path: Path) -> None:
    asyncio.run(_language_revision_round_trip(f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"))


def test_the_language_revision_adds_the_column_and_goes_back_on_postgres(
    fresh_postgres: str,
) -> None:
    asyncio.run(_language_revision_round_trip(fresh_postgres))


async def _client_decisions_round_trip(url: str) -> None:
    """0012 adds the client decisions, kept as evidence: an UPDATE or DELETE is refused; going
    back to 0011 drops the table."""
    engine = make_engine(url)
    await upgrade(engine)
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO jobs (id, po_number, state, version, requester_id, input_ref, "
                "workflow_version, source_versions, tool_results, retry_count, created_at, "
                "updated_at) VALUES ('j', 'PO-1', 'AWAITING_APPROVAL', 1, 1, 'x', 'w', '{}', "
                "'{}', 0, :at, :at)"
            ),
            {"at": _AT},
        )
        kept = {
            "client_id": "q-1", "job_id": "j", "reviewer_id": 2, "action": "approve",
            "request_sha256": "0" * 64, "draft_version": 1, "at": _AT,
        }  # fmt: skip
        await conn.execute(insert(schema.client_decisions).values(**kept))
    changes = ("UPDATE client_decisions SET draft_version = 2", "DELETE FROM client_decisions")
    for statement in changes:
        with pytest.raises(DBAPIError, match="append-only"):
            async with engine.begin() as conn:
                await conn.execute(text(statement))
    await engine.dispose()
    await _downgrade(url, "0011")
    engine = make_engine(url)
    async with engine.connect() as conn:
        with pytest.raises(DBAPIError):
            await conn.execute(text("SELECT count(*) FROM client_decisions"))
    await engine.dispose()


def test_the_client_decisions_revision_is_append_only_and_goes_back_on_sqlite(
    tmp_path: Path,
) -> None:
    asyncio.run(_client_decisions_round_trip(f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"))


def test_the_client_decisions_revision_is_append_only_and_goes_back_on_postgres(
    fresh_postgres: str,
) -> None:
    asyncio.run(_client_decisions_round_trip(fresh_postgres))


async def _user_branches_round_trip(url: str) -> None:
    """0014 adds each requester's branch, one row per user; going back to 0013 drops it and
    keeps the roles."""
    engine = make_engine(url)
    await upgrade(engine, "0013")
    async with engine.begin() as conn:
        grant = (
            "INSERT INTO user_roles (user_id, role, granted_by, granted_at) "
            "VALUES (1001, 'requester', 'cli:test', :at)"
        )
        await conn.execute(text(grant), {"at": _AT})
    await upgrade(engine, "0014")
    branch = {"user_id": 1001, "branch_id": "liberty", "set_by": "user:9001", "set_at": _AT}
    async with engine.begin() as conn:
        await conn.execute(insert(schema.user_branches).values(**branch))
    with pytest.raises(DBAPIError):  # one branch per user
        async with engine.begin() as conn:
            await conn.execute(insert(schema.user_branches).values(**branch))
    async with engine.connect() as conn:
        t = schema.user_branches
        rows = (await conn.execute(select(t.c.user_id, t.c.branch_id, t.c.set_at))).all()
    assert [tuple(row) for row in rows] == [(1001, "liberty", _AT)]
    await engine.dispose()
    await _downgrade(url, "0013")
    engine = make_engine(url)
    async with engine.connect() as conn:
        roles = (await conn.execute(text("SELECT user_id FROM user_roles"))).scalars().all()
        assert roles == [1001]
        with pytest.raises(DBAPIError):
            await conn.execute(text("SELECT count(*) FROM user_branches"))
    await engine.dispose()


def test_the_user_branches_revision_adds_the_table_and_goes_back_on_sqlite(
    tmp_path: Path,
) -> None:
    asyncio.run(_user_branches_round_trip(f"sqlite+aiosqlite:///{tmp_path / 'm.db'}"))


def test_the_user_branches_revision_adds_the_table_and_goes_back_on_postgres(
    fresh_postgres: str,
) -> None:
    asyncio.run(_user_branches_round_trip(fresh_postgres))
