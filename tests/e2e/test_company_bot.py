"""The buyer and its branches through the real bot: an admin's company file with problems is
answered problem by problem with its line and changes nothing; a good one is put in force under
the admin and described, /company says so; a company file is never taken for a policy or a
sheet, and nobody else may send or see one."""

from __future__ import annotations

from pathlib import Path

from core.versions import FileKind
from tests.helpers.bot import ADMIN, BotRun, running_bot, said
from tests.helpers.factories import APPROVER_A, REQUESTER

SAMPLE = (Path(__file__).parents[2] / "samples" / "company.toml").read_bytes()


async def in_force(run: BotRun, kind: FileKind) -> str | None:
    async with run.store.reading() as tx:
        return await tx.file_version(kind)


async def test_a_company_file_is_checked_then_imported_and_described(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        admin.send_text("/company")
        assert (await said(admin)).startswith("No company file is imported yet")
        bad = SAMPLE.replace(b'ntn = "1234567-8"', b'ntn = "1234"')
        admin.send_document(bad, "Company.toml", "application/toml")
        reply = (await said(admin)).splitlines()
        assert reply[0] == "Company.toml: not imported; nothing changed. Please fix:"
        assert [line.split(":")[0] for line in reply[1:]] == ["Line 7, buyer.ntn"]
        assert await in_force(run, FileKind.COMPANY) is None
        admin.send_document(SAMPLE, "company.toml", "application/toml")
        reply = (await said(admin)).splitlines()
        version = await in_force(run, FileKind.COMPANY)
        assert version is not None and await in_force(run, FileKind.POLICY) is None
        assert reply[:3] == [
            f"company.toml imported as company version {version}, now in force for new POs",
            "",
            f"Version: {version}",
        ]
        assert reply[3].startswith("Imported ") and reply[3].endswith(f" by user:{ADMIN}")
        assert reply[4:] == [
            "Buyer: Lahore Electronics (Pvt) Ltd, 12 Main Boulevard, Gulberg III, Lahore",
            "NTN 1234567-8 · STRN 32-77-8761-234-56 · Phone +92 42 3575 0000",
            "Branch liberty: Liberty Market, Shop 4, Liberty Market, Gulberg, Lahore (the default)",
            "Branch hallroad: Hall Road, Shop 12, Hall Road, Lahore",
        ]
        # Any file captioned /company is one, whatever its name; the same content is no new one.
        admin.send_document(SAMPLE, "details.txt", "text/plain", caption="/company")
        assert (await said(admin)).splitlines()[0] == (
            f"details.txt says what the company version in force, {version}, says; nothing imported"
        )
        admin.send_text("/company")
        assert (await said(admin)).splitlines()[0] == f"Version: {version}"


async def test_others_may_neither_send_nor_see_the_company(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        refused = "Only admins can see or import the buyer's details and branches."
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_document(SAMPLE, "company.toml")
        assert await said(requester) == refused
        approver = botapi.user(APPROVER_A, "Ali", started=True)
        approver.send_text("/company")
        assert await said(approver) == refused
        assert await in_force(run, FileKind.COMPANY) is None
