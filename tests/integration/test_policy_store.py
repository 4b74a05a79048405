"""The approval policy's versions, on SQLite and PostgreSQL: an import puts a checked file in
force as written, the same policy again is no new version, a file with problems changes
nothing, two imports at once leave one version in force, and versions cannot be altered."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError

from bot.words.problems import problem_lines
from core.approval.approval_policy import import_policy
from core.approval.policies import BudgetMode, Budgets, Policy, Stage
from core.approval.standing import policy_now
from core.versions import FileKind
from store import schema
from store.sql import SqlStore
from tests.helpers.factories import T0

SAMPLE = (Path(__file__).parents[2] / "samples" / "approval-policy.toml").read_text()
DEFAULT = Policy.default(500_000 * 100)


async def versions(store: SqlStore) -> int:
    async with store.reading() as tx:
        t = schema.policy_versions
        return int((await tx.conn.execute(select(func.count()).select_from(t))).scalar_one())


async def test_with_none_imported_the_configured_default_is_in_force(store: SqlStore) -> None:
    async with store.reading() as tx:
        assert await tx.current_policy() is None
        assert await policy_now(tx, DEFAULT) == DEFAULT


async def test_an_import_puts_the_file_in_force_as_written(store: SqlStore) -> None:
    done = await import_policy(store, SAMPLE, T0, "cli:ayesha")
    assert done.created and done.problems == ()
    async with store.reading() as tx:
        policy = await policy_now(tx, DEFAULT)
        record = await tx.file_record(FileKind.POLICY, done.version)
    assert policy.version == done.version and done.version.startswith("20")
    assert policy.rule_for(2_000_000 * 100, "SUP-1").stages == (
        Stage("managers", 1),
        Stage("owners", 1),
    )
    assert record is not None
    assert record["source"] == SAMPLE  # comments and layout kept, for `policy show`
    assert record["imported_by"] == "cli:ayesha" and record["imported_at"] == T0


async def test_budgets_and_category_conditions_are_put_in_force(store: SqlStore) -> None:
    categories = SAMPLE.replace(
        "when = { total_above_pkr = 200_000 }", 'when = { categories = ["Chargers"] }'
    )
    done = await import_policy(store, categories, T0, "cli:ayesha")
    assert done.created and done.problems == ()
    async with store.reading() as tx:
        policy = await policy_now(tx, DEFAULT)
    assert policy.budgets == Budgets(
        BudgetMode.SOFT, {"accessories": 100_000_000, "chargers": 60_000_000}, Stage("owners")
    )
    assert policy.rule_for(100, "SUP-1", ["cables", "chargers"]).name == "medium"
    assert policy.rule_for(100, "SUP-1", ["cables"]).name == "default"
    assert await versions(store) == 1


async def test_the_same_policy_again_is_no_new_version(store: SqlStore) -> None:
    first = await import_policy(store, SAMPLE, T0, "cli:ayesha")
    relaid = "# the same rules, laid out again\n" + SAMPLE.replace("   = ", " = ")
    again = await import_policy(store, relaid, T0 + timedelta(hours=1), "cli:bilal")
    assert not again.created and again.version == first.version
    changed = await import_policy(
        store, SAMPLE.replace("percent = 3", "percent = 5"), T0 + timedelta(hours=2), "cli:a"
    )
    assert changed.created and changed.version != first.version
    back = await import_policy(store, SAMPLE, T0 + timedelta(hours=3), "cli:a")
    assert back.created and back.version not in (first.version, changed.version)
    assert await versions(store) == 3
    async with store.reading() as tx:
        assert await tx.file_version(FileKind.POLICY) == back.version
        old = await tx.policy(first.version)
    assert old is not None and old.version == first.version  # kept: requests cite it


async def test_a_file_with_problems_changes_nothing(store: SqlStore) -> None:
    first = await import_policy(store, SAMPLE, T0, "cli:ayesha")
    drift = 'add_stage = { group = "owners", approvals = 1 }'
    bad = SAMPLE.replace(drift, 'add_stage = { group = "x" }')
    refused = await import_policy(store, bad, T0 + timedelta(hours=1), "cli:ayesha")
    assert not refused.created and refused.version == ""
    assert problem_lines(refused.problems) == [
        "Line 23, drift.add_stage.group: group 'x' is not defined in [groups] (managers, owners)"
    ]
    async with store.reading() as tx:
        assert await tx.file_version(FileKind.POLICY) == first.version
    assert await versions(store) == 1


async def test_two_imports_at_once_leave_one_version_in_force(store: SqlStore) -> None:
    texts = [SAMPLE.replace("percent = 3", f"percent = {n}") for n in (4, 5)]
    done = await asyncio.gather(*(import_policy(store, t, T0, "cli:a") for t in texts))
    assert all(d.created for d in done)
    async with store.reading() as tx:
        assert await tx.file_version(FileKind.POLICY) in {d.version for d in done}
    assert await versions(store) == 2


async def test_a_stored_version_cannot_be_altered(store: SqlStore) -> None:
    done = await import_policy(store, SAMPLE, T0, "cli:ayesha")
    with pytest.raises(DBAPIError, match="append-only"):
        async with store.begin() as tx:
            await tx.conn.execute(
                text("UPDATE policy_versions SET source = '' WHERE id = :id"), {"id": done.version}
            )
    with pytest.raises(DBAPIError, match="append-only"):
        async with store.begin() as tx:
            await tx.conn.execute(text("DELETE FROM policy_versions"))
