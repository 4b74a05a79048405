"""Each requester's branch, on SQLite and PostgreSQL: the store keeps one per user (set,
changed, cleared, listed); the use case gives a requester a branch of the company file in
force, for admins only, audited, and refuses anyone else, no company file and an unknown
branch; revoking the roles takes the branch away too."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from core.approval.policies import Policy
from core.company.imports import import_company
from core.errors import BranchRefused, NotAnAdmin, Refusal
from core.jobs.jobs import Stamp
from core.people import people
from core.people.people import BranchChange
from core.people.users import Acting
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, REQUESTER, T0

SAMPLE = (Path(__file__).parents[2] / "samples" / "company.toml").read_text()
ADMIN = 9001  # configured in MANZOORI_ADMIN_IDS
ADMINS = frozenset({ADMIN})
SECOND = 1002  # a second requester
DEFAULT = Policy.default(500_000 * 100)
STAMP = Stamp(f"user:{ADMIN}", T0)


async def trail(store: SqlStore, action: str) -> list[tuple[str, dict[str, object]]]:
    """The actor and detail of every audit event of `action`, oldest first."""
    async with store.reading() as tx:
        rows = await tx.conn.execute(
            text("SELECT actor, detail FROM audit_events WHERE action = :a ORDER BY id"),
            {"a": action},
        )
        # raw SQL: SQLite hands JSON back as text, PostgreSQL as data
        return [(a, json.loads(d) if isinstance(d, str) else d) for a, d in rows]


async def test_the_store_sets_changes_clears_and_lists_branches(store: SqlStore) -> None:
    later = T0 + timedelta(hours=1)
    async with store.begin() as tx:
        assert await tx.branch_of(REQUESTER) is None
        assert await tx.branches() == {}
        assert await tx.set_branch(REQUESTER, "liberty", "user:9001", T0) is None
        assert await tx.set_branch(SECOND, "hallroad", "cli:ayesha", T0) is None
        assert await tx.set_branch(REQUESTER, "hallroad", "user:9001", later) == "liberty"
        assert await tx.set_branch(REQUESTER, "hallroad", "user:9002", later) == "hallroad"
    async with store.reading() as tx:
        assert await tx.branch_of(REQUESTER) == "hallroad"
        assert await tx.branches() == {REQUESTER: "hallroad", SECOND: "hallroad"}
        rows = await tx.conn.execute(
            text("SELECT set_by, set_at FROM user_branches WHERE user_id = :u"), {"u": REQUESTER}
        )
        set_by, _set_at = rows.one()
        assert set_by == "user:9001"  # the same branch again wrote nothing
    async with store.begin() as tx:
        assert await tx.set_branch(SECOND, None, "user:9001", later) == "hallroad"
        assert await tx.set_branch(SECOND, None, "user:9001", later) is None  # nothing to clear
        assert await tx.branch_of(SECOND) is None
        assert await tx.branches() == {REQUESTER: "hallroad"}


async def test_an_admin_gives_a_requester_a_branch_of_the_company_audited(
    store: SqlStore,
) -> None:
    assert (await import_company(store, SAMPLE, T0, "cli:ayesha")).created
    change = await people.set_branch(store, REQUESTER, "liberty", STAMP, Acting(ADMIN, ADMINS))
    assert change == BranchChange("liberty", None, "Liberty Market")
    moved = await people.set_branch(store, REQUESTER, "hallroad", STAMP)  # the CLI: no acting
    assert moved == BranchChange("hallroad", "liberty", "Hall Road")
    again = await people.set_branch(store, REQUESTER, "hallroad", STAMP)
    assert again == BranchChange("hallroad", "hallroad", "Hall Road")
    async with store.reading() as tx:
        assert await tx.branch_of(REQUESTER) == "hallroad"
    assert await trail(store, "set_branch") == [  # the same branch again: nothing to audit
        (f"user:{ADMIN}", {"user_id": REQUESTER, "branch": "liberty", "before": None}),
        (f"user:{ADMIN}", {"user_id": REQUESTER, "branch": "hallroad", "before": "liberty"}),
    ]


async def test_only_an_admin_only_for_a_requester_only_a_branch_in_force(
    store: SqlStore,
) -> None:
    with pytest.raises(BranchRefused) as refused:
        await people.set_branch(store, REQUESTER, "liberty", STAMP)
    assert refused.value.reason is Refusal.NO_COMPANY and refused.value.values == {}
    assert str(refused.value) == ("no company file is imported yet: an admin must import one first")
    assert (await import_company(store, SAMPLE, T0, "cli:ayesha")).created
    with pytest.raises(NotAnAdmin):
        await people.set_branch(store, REQUESTER, "liberty", STAMP, Acting(APPROVER_A, ADMINS))
    for outsider in (APPROVER_A, 5555):  # an approver, and someone with no role
        with pytest.raises(BranchRefused, match="is not a requester: grant the role first") as e:
            await people.set_branch(store, outsider, "liberty", STAMP)
        assert (e.value.reason, e.value.values) == (Refusal.NOT_A_REQUESTER_YET, {"user": outsider})
    with pytest.raises(BranchRefused) as refused:
        await people.set_branch(store, REQUESTER, "gulberg", STAMP)
    assert refused.value.reason is Refusal.UNKNOWN_BRANCH
    assert refused.value.values == {"branch": "gulberg", "known": "liberty, hallroad"}
    assert str(refused.value) == (
        "no branch gulberg in the company file in force (liberty, hallroad)"
    )
    with pytest.raises(BranchRefused) as refused:  # typed text is echoed, quoted and cut
        await people.set_branch(store, REQUESTER, "Liberty\n" + "x" * 200, STAMP)
    assert str(refused.value.values["branch"]).startswith("'Liberty\\nxxx")
    assert len(str(refused.value.values["branch"])) < 100
    async with store.reading() as tx:
        assert await tx.branches() == {}
    assert await trail(store, "set_branch") == []


async def test_revoking_the_roles_takes_the_branch_away_too(store: SqlStore) -> None:
    assert (await import_company(store, SAMPLE, T0, "cli:ayesha")).created
    await people.set_branch(store, REQUESTER, "hallroad", STAMP)
    await people.revoke_roles(store, REQUESTER, STAMP, ADMINS, DEFAULT)
    async with store.reading() as tx:
        assert await tx.branch_of(REQUESTER) is None
    assert (await trail(store, "set_branch"))[-1] == (
        f"user:{ADMIN}",
        {"user_id": REQUESTER, "branch": None, "before": "hallroad"},
    )
