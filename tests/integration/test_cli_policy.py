"""`manzoori policy check | import | show` as an admin runs them, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.clock import utcnow
from core.approval.approval_policy import PolicyImport, import_policy
from core.approval.policies import Role
from store.sql import SqlStore
from tests.helpers.cli import Cli, base_env, ok, with_store

pytestmark = pytest.mark.slow  # every test spawns `manzoori` subprocesses

SAMPLE = Path(__file__).parents[2] / "samples" / "approval-policy.toml"


@pytest.fixture
def cli(db_url: str, tmp_path: Path) -> Cli:
    return Cli(tmp_path, base_env(db_url))


def test_check_prints_what_a_valid_file_says_and_stores_nothing(cli: Cli) -> None:
    checked, shown = cli.all(("policy", "check", str(SAMPLE)), ("policy", "show"))
    out = ok(checked)
    assert out.startswith("approval-policy.toml is a valid approval policy:\n")
    assert "Rule 1, large: total above Rs 1,000,000.00: 1 approval of Purchasing managers " in out
    assert "then 1 approval of Owners" in out
    assert "Drift: a line more than 3% above the last sent PO adds 1 approval of Owners" in out
    # Nothing imported: the configuration's rule is still the one in force.
    assert ok(shown).startswith("Version: none imported (the configured default)\n")
    assert "Rule 1, dual: total above Rs 500,000.00: 2 approvals of Approvers" in shown.stdout
    assert "Rule 2, single: every request: 1 approval of Approvers" in shown.stdout


def test_a_file_with_problems_is_refused_with_every_line(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "policy.toml"
    text = SAMPLE.read_text().replace("approvals = 2", "approvals = 0")
    bad.write_text(text.replace('mode = "soft"', 'mode = "hard"'), encoding="utf-8")
    done = cli("policy", "check", str(bad))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "policy.toml: not a valid approval policy. Please fix:",
        "Line 15, rules[2].stages[1].approvals: must be at least 1",
        "Line 27, budgets.over_budget_stage: hard mode refuses a sheet over budget: "
        "it has no stage to add",
    ]
    assert "none imported" in ok(cli("policy", "show"))


def test_files_that_are_not_policies(cli: Cli, tmp_path: Path) -> None:
    binary = tmp_path / "photo.toml"
    binary.write_bytes(b"\xff\xd8\xff\xe0 not text")
    done = cli("policy", "check", str(binary))
    assert done.returncode == 1 and done.stderr.splitlines() == [
        "photo.toml: not a valid approval policy. Please fix:",
        "The file is not UTF-8 text (byte 1).",
    ]
    huge = tmp_path / "huge.toml"
    huge.write_text("# x\n" * 70_000)
    done = cli("policy", "import", str(huge))
    assert done.returncode == 1 and done.stderr.splitlines() == [
        "huge.toml: not imported; nothing changed. Please fix:",
        "The file is 280,000 bytes; a policy file is at most 256 KB.",
    ]


def test_import_then_show_then_the_same_again(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(SAMPLE.read_text(), encoding="utf-8")
    first = cli("policy", "import", str(path))
    assert ok(first).startswith("policy.toml imported as approval policy ")
    version = first.stdout.split("approval policy ")[1].split(",")[0]
    # Nobody is in either group yet: requests needing them would wait for nobody.
    assert first.stderr.splitlines() == [
        f"warning: group {group} has nobody the bot can write to; requests needing it wait "
        f"until an admin puts an approver in it (/group ID {group})"
        for group in ("managers", "owners")
    ]
    again, shown = cli.all(("policy", "import", str(path)), ("policy", "show"))
    assert ok(again).startswith(f"policy.toml says what the approval policy in force, {version}")
    assert ok(shown).startswith(f"Version: {version}\nImported ")


async def roles_of_4244(store: SqlStore) -> frozenset[Role]:
    async with store.reading() as tx:
        return await tx.roles(4244)


def test_users_grant_puts_an_approver_in_groups(cli: Cli, tmp_path: Path, db_url: str) -> None:
    ok(cli("policy", "import", str(SAMPLE)))
    granted = ok(cli("users", "grant", "4242", "approver", "--group", "owners"))
    assert granted.splitlines() == [
        "user 4242 now has role approver",
        "user 4242 is in groups: owners",
    ]
    wrong = cli("users", "grant", "4242", "approver", "--group", "board")
    assert wrong.returncode == 1
    assert "no group board in the approval policy in force (managers, owners)" in wrong.stderr
    typo = cli("users", "grant", "4244", "approver", "--group", "ownres")
    assert typo.returncode == 1 and "no group ownres" in typo.stderr
    assert with_store(db_url, roles_of_4244) == frozenset()  # a typo grants nothing
    assert cli("users", "grant", "4243", "requester", "--group", "owners").returncode == 1


def test_show_prints_an_imported_version_with_its_file(cli: Cli, db_url: str) -> None:
    text = SAMPLE.read_text()

    async def work(store: SqlStore) -> PolicyImport:
        return await import_policy(store, text, utcnow(), "cli:ayesha")

    version = with_store(db_url, work).version
    out = ok(cli("policy", "show"))
    assert out.startswith(f"Version: {version}\nImported ")
    assert " PKT by cli:ayesha\n" in out
    assert "Rule 2, medium: total above Rs 200,000.00: 2 approvals of Purchasing managers" in out
    assert (
        "Budgets (soft), a month: accessories Rs 1,000,000.00, chargers Rs 600,000.00; "
        "over budget adds 1 approval of Owners and a reason\n"
    ) in out
    assert out.endswith(text.rstrip("\n") + "\n")  # the file, comments and all


async def started_4242(store: SqlStore) -> None:
    async with store.begin() as tx:
        await tx.met(4242, "Ali", utcnow(), started=True)


def test_check_and_import_warn_of_a_stage_asking_more_than_its_group_has(
    cli: Cli, tmp_path: Path, db_url: str
) -> None:
    """Sample's rule "medium" asks for 2 managers; with one manager in the database, its
    requests could never pass: check says so before anything is stored, import again."""
    ok(cli("policy", "import", str(SAMPLE)))
    ok(cli("users", "grant", "4242", "approver", "--group", "managers", "--group", "owners"))
    with_store(db_url, started_4242)  # the bot can write to them
    warning = (
        "warning: rule medium asks for 2 approvals from group managers; approvers in it: 1. "
        "Its requests wait until an admin puts more in it (/group ID managers)"
    )
    checked = cli("policy", "check", str(SAMPLE))
    assert checked.returncode == 0 and checked.stderr.splitlines() == [warning]
    edited = tmp_path / "policy.toml"
    edited.write_text(SAMPLE.read_text().replace("percent = 3", "percent = 4"), encoding="utf-8")
    imported = cli("policy", "import", str(edited))
    assert imported.returncode == 0 and imported.stderr.splitlines() == [warning]


def test_a_file_nested_too_deep_is_a_problem_not_a_traceback(cli: Cli, tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text(SAMPLE.read_text() + "deep = " + "{ a = " * 700 + "1" + " }" * 700 + "\n")
    for command in ("check", "import"):
        done = cli("policy", command, str(deep))
        assert done.returncode == 1 and done.stdout == ""
        line = len(SAMPLE.read_text().splitlines()) + 1  # the line after the sample's
        problem = f"Line {line}: arrays and tables nested more than 16 deep"
        assert done.stderr.splitlines()[1:] == [problem]
