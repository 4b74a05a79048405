"""Each requester's branch through the real bot: an admin sets it with /branch once a company
file is in force, /users shows it (the default branch for a requester without one), and
every refusal says why and changes nothing; in English and in Urdu."""

from __future__ import annotations

from pathlib import Path

from bot.words.i18n import isolated
from core.company.imports import import_company
from tests.helpers.bot import ADMIN, BotRun, running_bot, said
from tests.helpers.factories import APPROVER_A, REQUESTER, T0
from tests.helpers.urdu import english_heard

SAMPLE = (Path(__file__).parents[2] / "samples" / "company.toml").read_text()


async def branch_of(run: BotRun, user_id: int) -> str | None:
    async with run.store.reading() as tx:
        return await tx.branch_of(user_id)


async def met(run: BotRun, *people: tuple[int, str]) -> None:
    async with run.store.begin() as tx:
        for user_id, name in people:
            await tx.met(user_id, name, T0, started=True)


async def test_an_admin_sets_a_requesters_branch_and_users_shows_it(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await met(run, (ADMIN, "Ayesha"), (REQUESTER, "Bilal"))
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        admin.send_text(f"/branch {REQUESTER} liberty")
        assert await said(admin) == (
            "Not changed: no company file is imported yet: an admin must import one first."
        )
        assert (await import_company(run.store, SAMPLE, T0, "cli:ayesha")).created
        admin.send_text("/users")
        assert f"{REQUESTER}  Bilal  requester  branch: liberty (the default)" in (
            (await said(admin)).splitlines()
        )
        admin.send_text(f"/branch {REQUESTER} HallRoad")  # ids are lower case; typed any case
        assert await said(admin) == f"User {REQUESTER} now orders for Hall Road (hallroad)."
        assert await branch_of(run, REQUESTER) == "hallroad"
        admin.send_text("/users")
        listing = (await said(admin)).splitlines()
        assert f"{REQUESTER}  Bilal  requester  branch: hallroad" in listing
        assert not [line for line in listing if "branch" in line and "requester" not in line]
        admin.send_text("/help")
        assert "/branch ID BRANCH: the branch a requester orders for" in await said(admin)


async def test_refusals_say_why_and_change_nothing(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        assert (await import_company(run.store, SAMPLE, T0, "cli:ayesha")).created
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        for command, answer in (
            (
                f"/branch {REQUESTER} gulberg",
                "Not changed: no branch gulberg in the company file in force (liberty, hallroad).",
            ),
            (
                f"/branch {APPROVER_A} liberty",
                f"Not changed: user {APPROVER_A} is not a requester: grant the role first.",
            ),
            (
                f"/branch {REQUESTER}",
                "Usage: /branch TELEGRAM_ID BRANCH  (/company lists the branches)",
            ),
            (
                f"/branch {REQUESTER} liberty hallroad",
                "Usage: /branch TELEGRAM_ID BRANCH  (/company lists the branches)",
            ),
        ):
            admin.send_text(command)
            assert await said(admin) == answer
        requester = botapi.user(REQUESTER, "Bilal", started=True)
        requester.send_text(f"/branch {REQUESTER} liberty")
        assert await said(requester) == "Only admins can set branches."
        assert await branch_of(run, REQUESTER) is None


async def test_an_urdu_admin_reads_branch_in_urdu(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await met(run, (ADMIN, "Ayesha"), (REQUESTER, "Bilal"))
        async with run.store.begin() as tx:
            assert await tx.set_language(ADMIN, "ur", T0)
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        admin.send_text(f"/branch {REQUESTER} liberty")
        no_company = (
            "ابھی کوئی کمپنی فائل درآمد نہیں ہوئی: پہلے کسی ایڈمن کو ایک فائل درآمد کرنی ہوگی"
        )
        assert await said(admin) == f"تبدیل نہیں ہوا: {isolated(no_company)}۔"
        assert (await import_company(run.store, SAMPLE, T0, "cli:ayesha")).created
        admin.send_text(f"/branch {REQUESTER} gulberg")
        unknown = (
            f"نافذ کمپنی فائل میں برانچ {isolated('gulberg')} موجود نہیں "
            f"({isolated('liberty, hallroad')})"
        )
        assert await said(admin) == f"تبدیل نہیں ہوا: {isolated(unknown)}۔"
        admin.send_text(f"/branch {APPROVER_A} liberty")
        assert "درخواست گزار نہیں" in await said(admin)
        admin.send_text(f"/branch {REQUESTER} liberty")
        assert await said(admin) == (
            f"صارف {isolated(str(REQUESTER))} اب {isolated('Liberty Market')} "
            f"({isolated('liberty')}) کے لیے آرڈر کرتے ہیں۔"
        )
        admin.send_text("/users")
        assert f"برانچ: {isolated('liberty')}" in await said(admin)
        assert english_heard(botapi, ADMIN) == []
