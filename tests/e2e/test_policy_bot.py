"""The approval policy through the real bot: an admin's policy file with errors is answered
problem by problem with its line and changes nothing; a good one is put in force, audited
under the admin, with its version and description; others are refused and a .toml file is
never taken for a sheet; and an import that leaves a group nobody can approve for, from the
bot or the CLI, reaches the admins as an alert."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.telegram.notices import NoticeRunner
from core.versions import FileKind
from tests.helpers.bot import ADMIN, BotRun, running_bot, said
from tests.helpers.cli import Cli, base_env, ok
from tests.helpers.factories import APPROVER_A, REQUESTER, T0

BAD = b"""[groups]
managers = "Managers"

[[rules]]
name = "big"
when = { total_above_pkr = 1_000_000 }
stages = [{ group = "owners" }]

[[rules]]
name = "default"
stages = [{ group = "managers", approvals = 0 }]
colour = "blue"
"""
GOOD = (
    b'[groups]\nmanagers = "Managers"\nowners = "Owners"\n'
    b'[[rules]]\nname = "big"\nwhen = { total_above_pkr = 1_000_000 }\n'
    b'stages = [{ group = "managers" }, { group = "owners" }]\n'
    b'[[rules]]\nname = "default"\nstages = [{ group = "managers" }]\n'
)


async def in_force(run: BotRun) -> str | None:
    async with run.store.reading() as tx:
        return await tx.file_version(FileKind.POLICY)


async def delivered(run: BotRun) -> None:
    """Notice passes until nothing is due: the alert fanned out, then each admin's copy."""
    runner = NoticeRunner(run.store, run.app.bot, run.settings)
    while await runner.run_once():
        pass


async def test_a_policy_file_with_errors_lists_each_with_its_line(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        admin.send_document(BAD, "policy.toml", "application/toml")
        assert (await said(admin)).splitlines() == [
            "policy.toml: not imported; nothing changed. Please fix:",
            "Line 7, rules[1].stages[1].group: group 'owners' is not defined in [groups] "
            "(managers)",
            "Line 11, rules[2].stages[1].approvals: must be at least 1",
            "Line 12, rules[2]: unknown key 'colour'",
        ]
        assert await in_force(run) is None
        admin.send_text("/policy")
        assert (await said(admin)).startswith("Version: none imported (the configured default)")
        admin.send_document(b"\xff\xfe not text", "photo.toml")
        assert (await said(admin)).splitlines() == [
            "photo.toml: not imported; nothing changed. Please fix:",
            "The file is not UTF-8 text (byte 1).",
        ]
        fetched = len(botapi.calls_to("getFile"))
        admin.send_document(b"# x\n" * 70_000, "huge.toml")
        assert (await said(admin)).splitlines() == [
            "huge.toml: not imported; nothing changed. Please fix:",
            "The file is 280,000 bytes; a policy file is at most 256 KB.",
        ]
        assert len(botapi.calls_to("getFile")) == fetched == 2  # refused before it is fetched
        assert await in_force(run) is None


async def test_a_good_file_is_imported_under_the_admin_and_described(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        async with run.store.begin() as tx:  # Ali, reachable, is a manager; owners has nobody
            botapi.user(APPROVER_A, "Ali", started=True)
            await tx.met(APPROVER_A, "Ali", T0, started=True)
            await tx.set_groups(APPROVER_A, ["managers"], "test", T0)
        # Any file captioned /policy is a policy file, whatever its name.
        admin.send_document(GOOD, "rules.txt", "text/plain", caption="/policy")
        reply = (await said(admin)).splitlines()
        version = await in_force(run)
        assert version is not None
        assert reply[:3] == [
            f"rules.txt imported as approval policy {version}, now in force for new requests "
            "and re-drafts",
            "",
            f"Version: {version}",
        ]
        assert reply[3].startswith("Imported ") and reply[3].endswith(f" by user:{ADMIN}")
        assert "Rule 2, default: every request: 1 approval of Managers" in reply
        assert reply[-1] == (
            "⚠️ group owners has nobody the bot can write to; requests needing it wait until "
            "an admin puts an approver in it (/group ID owners)"
        )
        async with run.store.reading() as tx:
            record = await tx.file_record(FileKind.POLICY, version)
        assert record is not None and record["imported_by"] == f"user:{ADMIN}"
        await delivered(run)  # the admins' alert the import owed
        assert await said(admin) == (
            f"⚠️ Policy {version} is in force.\n"
            "Nobody can approve for Owners yet: add someone with /group ID owners."
        )
        admin.send_text("/policy")
        assert (await said(admin)).splitlines()[0] == f"Version: {version}"


async def test_others_are_refused_and_a_toml_file_is_no_sheet(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_document(GOOD, "policy.toml")
        assert await said(requester) == "Only admins can see or import the approval policy."
        approver = botapi.user(APPROVER_A, "Ali", started=True)
        approver.send_text("/policy")
        assert await said(approver) == "Only admins can see or import the approval policy."
        assert await in_force(run) is None
        requester.send_document(b"sku,quantity\nCHG-65W,1\n", "restock.csv", "text/csv")
        assert (await said(requester)).startswith("restock.csv: not accepted")  # still a sheet


@pytest.mark.slow
async def test_a_cli_import_nobody_can_approve_for_reaches_the_admins(
    botapi, db_url, store, tmp_path: Path
):
    async with running_bot(botapi, db_url) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        path = tmp_path / "policy.toml"
        path.write_bytes(GOOD)
        done = await asyncio.to_thread(Cli(tmp_path, base_env(db_url)), "policy", "import",
                                       str(path))  # fmt: skip
        assert ok(done).startswith("policy.toml imported as approval policy ")
        version = await in_force(run)
        await delivered(run)
        assert await said(admin) == (
            f"⚠️ Policy {version} is in force.\n"
            "Nobody can approve for Managers yet: add someone with /group ID managers.\n"
            "Nobody can approve for Owners yet: add someone with /group ID owners."
        )


async def test_a_file_asking_more_approvals_than_a_group_has_is_imported_with_a_warning(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        async with run.store.begin() as tx:  # Ali, reachable, is the one manager
            botapi.user(APPROVER_A, "Ali", started=True)
            await tx.met(APPROVER_A, "Ali", T0, started=True)
            await tx.set_groups(APPROVER_A, ["managers"], "test", T0)
        three = (
            '[groups]\nmanagers = "Managers"\n'
            '[[rules]]\nname = "board"\nstages = [{ group = "managers", approvals = 3 }]\n'
        )
        admin.send_document(three.encode(), "three.toml", "application/toml")
        reply = (await said(admin)).splitlines()
        assert reply[0].startswith("three.toml imported as approval policy ")
        assert reply[-1] == (
            "⚠️ rule board asks for 3 approvals from group managers; approvers in it: 1. Its "
            "requests wait until an admin puts more in it (/group ID managers)"
        )


async def test_a_file_nested_too_deep_is_answered_with_its_line(botapi, db_url, store):
    """The issue's 4 KB of nested arrays: a problem like any other, not "Something went wrong"."""
    async with running_bot(botapi, db_url) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        admin.send_document(GOOD + b"deep = " + b"[" * 2000 + b"]" * 2000 + b"\n", "deep.toml")
        assert (await said(admin)).splitlines() == [
            "deep.toml: not imported; nothing changed. Please fix:",
            "Line 11: arrays and tables nested more than 16 deep",
        ]
        assert await in_force(run) is None
