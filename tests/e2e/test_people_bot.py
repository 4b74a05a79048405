"""People and roles, end to end: the real bot over HTTP against the Bot API emulator."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select

from bot.telegram.decisions import NOT_VALID
from bot.telegram.people import NOT_MET
from core.approval.policies import Role
from store import schema
from store.sql import SqlStore
from tests.helpers.bot import ADMIN, all_handled, person_rows, running_bot, said
from tests.helpers.factories import T0

NEWCOMER, SECOND, STRANGER = 5001, 5002, 6666


async def roles(store: SqlStore, user_id: int) -> frozenset[Role]:
    async with store.begin() as tx:
        return await tx.roles(user_id)


async def test_a_stranger_is_refused_politely_with_their_id_once_and_nothing_is_kept(
    botapi, db_url
):
    async with running_bot(botapi, db_url) as run:
        stranger = botapi.user(STRANGER, "Zara")
        stranger.send_text("/start")
        text = await said(stranger)
        assert "you are not registered" in text and f"Your Telegram id is {STRANGER}" in text
        stranger.send_text("APPROVED PO-2026-0001")  # text never counts for anything
        stranger.send_text("/help")
        await all_handled(botapi, run)
        assert [m.text for m in stranger.messages()] == [text]  # once per period, then silence
        assert await person_rows(run.store) == (0, 0)  # no update claimed, no name stored


async def test_an_admin_invites_an_approver_who_registers_once(botapi, db_url):
    async with running_bot(botapi, db_url) as run:
        store = run.store
        admin = botapi.user(ADMIN, "Ayesha")
        newcomer, second = botapi.user(NEWCOMER, "Bilal"), botapi.user(SECOND, "Sana")
        admin.send_text("/start")
        assert "registered as admin" in await said(admin)
        admin.send_text("/invite approver")
        link = (await said(admin)).splitlines()[-1]
        prefix = f"https://t.me/{botapi.bot_username}?start="
        assert link.startswith(prefix)
        code = link.removeprefix(prefix)
        assert len(code) <= 64 and code.replace("_", "").replace("-", "").isalnum()

        newcomer.send_text(f"/start {code}")
        assert await said(newcomer) == (
            "Welcome! You are now registered as approver. /help shows what you can do."
        )
        assert await roles(store, NEWCOMER) == {Role.APPROVER}
        second.send_text(f"/start {code}")  # the link was forwarded on
        assert "already used" in await said(second)
        assert await roles(store, SECOND) == frozenset()

        admin.send_text("/users")
        listing = await said(admin)
        assert f"{NEWCOMER}  Bilal  approver" in listing
        admin.send_text(f"/revoke {NEWCOMER}")
        assert await said(admin) == (
            f"User {NEWCOMER} lost: approver. Their pending taps no longer count."
        )
        assert await roles(store, NEWCOMER) == frozenset()


async def test_only_admins_manage_people(botapi, db_url):
    async with running_bot(botapi, db_url) as run:
        async with run.store.begin() as tx:
            await tx.grant(NEWCOMER, Role.REQUESTER, "test", T0)
        newcomer = botapi.user(NEWCOMER, "Bilal")
        for command, refusal in (
            ("/invite approver", "Only admins can invite people."),
            ("/users", "Only admins can list users."),
            (f"/revoke {ADMIN}", "Only admins can revoke roles."),
            (f"/promote {NEWCOMER}", "Only admins can promote people."),
        ):
            newcomer.send_text(command)
            assert await said(newcomer) == refusal


async def test_an_admin_promotes_someone_met_and_revoke_takes_it_back(botapi, db_url):
    async with running_bot(botapi, db_url) as run:
        admin, newcomer = botapi.user(ADMIN, "Ayesha"), botapi.user(NEWCOMER, "Bilal")
        admin.send_text(f"/promote {NEWCOMER}")
        assert await said(admin) == NOT_MET.format(target=NEWCOMER)
        newcomer.send_text("/start")  # a stranger still: turned away, and not remembered
        assert f"Your Telegram id is {NEWCOMER}" in await said(newcomer)
        admin.send_text(f"/promote {NEWCOMER}")
        assert await said(admin) == NOT_MET.format(target=NEWCOMER)
        assert await roles(run.store, NEWCOMER) == frozenset()
        async with run.store.begin() as tx:
            await tx.grant(NEWCOMER, Role.REQUESTER, "test", T0)
        newcomer.send_text("/start")  # with a role, they are met
        assert "registered as requester" in await said(newcomer)
        admin.send_text(f"/promote {NEWCOMER}")
        assert await said(admin) == (
            f"User {NEWCOMER} (Bilal) is now an admin. /revoke {NEWCOMER} takes it back."
        )
        assert await roles(run.store, NEWCOMER) == {Role.ADMIN, Role.REQUESTER}
        assert await said(newcomer) == (
            "Ayesha made you an admin. You can invite people, manage roles and work the review "
            "queue; /help lists the commands."
        )
        newcomer.send_text("/help")
        assert "/promote ID" in await said(newcomer)
        newcomer.send_text("/invite approver")  # a promoted admin is an admin in every way
        assert "t.me/" in await said(newcomer)
        for promoted in (NEWCOMER, ADMIN):  # promoted, and configured
            newcomer.send_text(f"/promote {promoted}")
            assert await said(newcomer) == (
                f"User {promoted} ({'Bilal' if promoted == NEWCOMER else 'Ayesha'}) "
                "is already an admin."
            )
        admin.send_text(f"/revoke {NEWCOMER}")
        assert await said(admin) == (
            f"User {NEWCOMER} lost: admin and requester. Their pending taps no longer count."
        )
        assert await roles(run.store, NEWCOMER) == frozenset()
        heard = len(newcomer.messages())
        newcomer.send_text("/users")  # a stranger again, turned away once this period already
        await all_handled(botapi, run)
        assert len(newcomer.messages()) == heard
        admin.send_text(f"/revoke {ADMIN}")  # the configuration is not a role
        assert await said(admin) == (
            f"User {ADMIN} holds no role. They stay an admin through MANZOORI_ADMIN_IDS, "
            "which only the host can change."
        )


async def test_promote_and_revoke_want_one_telegram_id(botapi, db_url):
    async with running_bot(botapi, db_url):
        admin = botapi.user(ADMIN, "Ayesha")
        for command in ("promote", "revoke"):
            # none; a name; a superscript two (str.isdigit says yes); more than a BIGINT holds
            for arg in ("", " Bilal", " ²", " 1234567890123456789012"):
                admin.send_text(f"/{command}{arg}")
                assert (await said(admin)).startswith(f"Usage: /{command} TELEGRAM_ID")


async def test_a_forged_invitation_is_refused(botapi, db_url):
    async with running_bot(botapi, db_url) as run:
        store = run.store
        newcomer = botapi.user(NEWCOMER, "Bilal")
        for _attempt in range(2):  # an invitation in hand is always answered
            newcomer.send_text("/start AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
            assert (
                await said(newcomer)
                == "This invitation link is not valid; ask an admin for a new one."
            )
        assert await roles(store, NEWCOMER) == frozenset()
        assert await person_rows(store) == (2, 0)  # both claimed; no role, so no name kept


async def test_an_update_delivered_three_times_is_handled_once(botapi, db_url, caplog):
    caplog.set_level(logging.INFO, logger="bot.telegram.app")
    async with running_bot(botapi, db_url):
        admin = botapi.user(ADMIN, "Ayesha")
        update_id = admin.send_text("/invite requester").update_id
        first = await said(admin)
        botapi.redeliver(update_id)
        botapi.redeliver(update_id)
        # Updates are handled side by side, so no later reply proves the repeats were passed
        # over: the bot's log does.
        dropped = f"update {update_id} delivered again; ignored"
        await botapi.wait_for(lambda: caplog.messages.count(dropped) == 2)
        admin.send_text("/help")
        assert "You are registered as admin." in await said(admin)
        assert [m.text for m in admin.messages()].count(first) == 1
        assert sum(1 for m in admin.messages() if "t.me/" in (m.text or "")) == 1


async def rows_of(store: SqlStore) -> list[list[Any]]:
    """Every row of processed_updates and telegram_users, as they are now."""
    async with store.engine.connect() as conn:
        return [
            list(await conn.execute(select(table).order_by(*table.primary_key.columns)))
            for table in (schema.processed_updates, schema.telegram_users)
        ]


async def test_a_forged_button_is_refused_before_any_database_work(botapi, db_url):
    async with running_bot(botapi, db_url) as run:
        stranger = botapi.user(STRANGER, "Zara")
        stranger.send_text("/start")
        reply = await stranger.next_message()
        before = await rows_of(run.store)
        assert before == [[], []]  # a stranger's /start is not claimed, their name not kept
        for data in ("a.forged.1.0123456789ab.AAAAAAAAAAAAAAAA", "x", "é" * 20):
            query = stranger.tap_data(reply, data)
            answered = await botapi.wait_for(lambda q=query: botapi.callback_answer(q))
            assert answered.text == NOT_VALID
        assert await rows_of(run.store) == before  # no update claimed, no user touched
