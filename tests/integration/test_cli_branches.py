"""`manzoori users grant ID requester --branch BRANCH` as an admin runs it, on SQLite and
PostgreSQL: the role and the branch in one command, audited; a branch that is not one of the
company file in force grants nothing; --branch is for requesters only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from core.approval.policies import Role
from store import schema
from store.sql import SqlStore
from tests.helpers.cli import Cli, base_env, ok, with_store

pytestmark = pytest.mark.slow  # every test spawns `manzoori` subprocesses

SAMPLE = Path(__file__).parents[2] / "samples" / "company.toml"


@pytest.fixture
def cli(db_url: str, tmp_path: Path) -> Cli:
    return Cli(tmp_path, base_env(db_url))


def person(user_id: int):  # -> Callable[[SqlStore], Awaitable[...]]
    """A user's roles and branch, and every audit event about people, oldest first."""

    async def read(store: SqlStore) -> tuple[frozenset[Role], str | None, list[Any]]:
        async with store.reading() as tx:
            roles, branch = await tx.roles(user_id), await tx.branch_of(user_id)
            t = schema.audit_events
            query = select(t).where(t.c.job_id.is_(None)).order_by(t.c.id)
            events = (await tx.conn.execute(query)).all()
        return roles, branch, [(e.actor, e.action, e.detail) for e in events]

    return read


def test_a_requester_is_granted_with_their_branch(cli: Cli, db_url: str) -> None:
    refused = cli("users", "grant", "4242", "requester", "--branch", "liberty")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == (
        "error: no company file is imported yet: an admin must import one first\n"
    )
    ok(cli("company", "import", str(SAMPLE)))
    typo = cli("users", "grant", "4242", "requester", "--branch", "hall-road")
    assert typo.returncode == 1 and typo.stderr == (
        "error: no branch hall-road in the company file in force (liberty, hallroad)\n"
    )
    assert with_store(db_url, person(4242))[:2] == (frozenset(), None)  # a typo grants nothing
    granted = ok(cli("users", "grant", "4242", "requester", "--branch", "hallroad"))
    assert granted.splitlines() == [
        "user 4242 now has role requester",
        "user 4242 orders for Hall Road (hallroad)",
    ]
    moved = ok(cli("users", "grant", "4242", "requester", "--branch", "liberty"))
    assert moved.splitlines() == [
        "user 4242 already had role requester",
        "user 4242 orders for Liberty Market (liberty)",
    ]
    roles, branch, events = with_store(db_url, person(4242))
    assert (roles, branch) == ({Role.REQUESTER}, "liberty")
    assert [(action, detail) for _actor, action, detail in events] == [
        ("grant_role", {"user_id": 4242, "role": "requester"}),
        ("set_branch", {"user_id": 4242, "branch": "hallroad", "before": None}),
        ("set_branch", {"user_id": 4242, "branch": "liberty", "before": "hallroad"}),
    ]
    assert all(actor.startswith("cli:") for actor, _action, _detail in events)
    plain = ok(cli("users", "grant", "4243", "requester"))  # no --branch: the default applies
    assert plain.strip() == "user 4243 now has role requester"
    assert with_store(db_url, person(4243))[1] is None


def test_branch_is_for_requesters(cli: Cli, db_url: str) -> None:
    ok(cli("company", "import", str(SAMPLE)))
    for role in ("approver", "admin"):
        done = cli("users", "grant", "4242", role, "--branch", "liberty")
        assert done.returncode == 1 and done.stderr == "error: --branch is for requesters\n"
    assert with_store(db_url, person(4242)) == (frozenset(), None, [])
