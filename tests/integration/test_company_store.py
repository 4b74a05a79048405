"""The buyer and its branches, version by version, on SQLite and PostgreSQL: an import puts a
checked company file in force as written, the same content again is no new version, a file
with problems changes nothing, two imports at once leave one version in force, and a stored
version cannot be altered."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from core.company.company import Branch, Buyer
from core.company.imports import import_company
from core.problems import ProblemCode
from core.versions import FileKind
from store.sql import SqlStore
from tests.helpers.factories import T0

SAMPLE = (Path(__file__).parents[2] / "samples" / "company.toml").read_text()


async def in_force(store: SqlStore) -> str | None:
    async with store.reading() as tx:
        return await tx.file_version(FileKind.COMPANY)


async def test_an_import_puts_the_buyer_and_branches_in_force_as_written(store: SqlStore) -> None:
    async with store.reading() as tx:
        assert await tx.current_company() is None  # none yet: POs carry no buyer's details
    done = await import_company(store, SAMPLE, T0, "cli:ayesha")
    assert done.created and done.problems == ()
    async with store.reading() as tx:
        company = await tx.current_company()
        record = await tx.file_record(FileKind.COMPANY, done.version)
    assert company is not None and company.version == done.version
    assert company.buyer == Buyer(
        "Lahore Electronics (Pvt) Ltd",
        "12 Main Boulevard, Gulberg III, Lahore",
        ntn="1234567-8",
        strn="32-77-8761-234-56",
        phone="+92 42 3575 0000",
    )
    assert company.branches == (
        Branch("liberty", "Liberty Market", "Shop 4, Liberty Market, Gulberg, Lahore"),
        Branch("hallroad", "Hall Road", "Shop 12, Hall Road, Lahore"),
    )
    assert company.default_branch == "liberty"
    assert record is not None and record["source"] == SAMPLE  # comments kept, for `show`
    assert (record["imported_by"], record["imported_at"]) == ("cli:ayesha", T0)


async def test_only_new_content_is_a_new_version_and_old_ones_are_kept(store: SqlStore) -> None:
    first = await import_company(store, SAMPLE, T0, "cli:ayesha")
    relaid = "# laid out again\n" + SAMPLE.replace("  # optional", "    # optional")
    again = await import_company(store, relaid, T0 + timedelta(hours=1), "cli:bilal")
    assert (again.created, again.version) == (False, first.version)
    moved = SAMPLE.replace("Shop 12, Hall Road", "Shop 40, Hall Road")
    changed = await import_company(store, moved, T0 + timedelta(hours=2), "cli:ayesha")
    assert changed.created and changed.version != first.version
    assert await in_force(store) == changed.version
    async with store.reading() as tx:
        old = await tx.company(first.version)  # drafts made under it still cite it
    assert old is not None and old.branch("hallroad") == Branch(
        "hallroad", "Hall Road", "Shop 12, Hall Road, Lahore"
    )


async def test_a_company_file_with_problems_changes_nothing(store: SqlStore) -> None:
    first = await import_company(store, SAMPLE, T0, "cli:ayesha")
    bad = SAMPLE.replace('ntn = "1234567-8"', 'ntn = "12345678"')
    refused = await import_company(store, bad, T0 + timedelta(hours=1), "cli:ayesha")
    assert (refused.created, refused.version) == (False, "")
    assert [(p.row, p.code) for p in refused.problems] == [(7, ProblemCode.NOT_AN_NTN)]
    assert await in_force(store) == first.version


async def test_two_imports_at_once_leave_one_version_in_force(store: SqlStore) -> None:
    texts = [SAMPLE.replace("Shop 12", f"Shop {n}") for n in (13, 14)]
    done = await asyncio.gather(*(import_company(store, t, T0, "cli:a") for t in texts))
    assert all(d.created for d in done)
    assert await in_force(store) in {d.version for d in done}


async def test_a_stored_company_version_cannot_be_altered(store: SqlStore) -> None:
    done = await import_company(store, SAMPLE, T0, "cli:ayesha")
    with pytest.raises(DBAPIError, match="append-only"):
        async with store.begin() as tx:
            await tx.conn.execute(
                text("UPDATE company_versions SET source = '' WHERE id = :id"),
                {"id": done.version},
            )
    with pytest.raises(DBAPIError, match="append-only"):
        async with store.begin() as tx:
            await tx.conn.execute(text("DELETE FROM company_versions"))
