"""Shared fixtures: the same store tests run on SQLite and, with TEST_POSTGRES_URL, PostgreSQL."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text

from core.policies import Role
from store.engine import make_engine
from store.migrate import upgrade
from store.sql import SqlStore
from tests.factories import APPROVER_A, APPROVER_B, REQUESTER, T0

DATA_KEY = Fernet.generate_key()
POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL")
_TABLES = "audit_events, decisions, effects, drafts, user_roles, jobs"
_pg_ready = False


async def _reset_postgres(url: str) -> None:
    """Once per session: a clean public schema, migrated to head."""
    engine = make_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await upgrade(engine)
    await engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
async def db_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A migrated, empty database; PostgreSQL variants skip without TEST_POSTGRES_URL."""
    global _pg_ready
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'manzoori.db'}"
        engine = make_engine(url)
        await upgrade(engine)
        await engine.dispose()
        return url
    if not POSTGRES_URL:
        pytest.skip("TEST_POSTGRES_URL is not set")
    if not _pg_ready:
        await _reset_postgres(POSTGRES_URL)
        _pg_ready = True
    engine = make_engine(POSTGRES_URL)
    async with engine.begin() as conn:
        await conn.execute(text(f"TRUNCATE {_TABLES} RESTART IDENTITY CASCADE"))
    await engine.dispose()
    return POSTGRES_URL


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[SqlStore]:
    """A SqlStore with the usual cast: one requester and two approvers."""
    store = SqlStore(make_engine(db_url), DATA_KEY)
    async with store.begin() as tx:
        await tx.grant(REQUESTER, Role.REQUESTER, "test", T0)
        await tx.grant(APPROVER_A, Role.APPROVER, "test", T0)
        await tx.grant(APPROVER_B, Role.APPROVER, "test", T0)
    yield store
    await store.close()
