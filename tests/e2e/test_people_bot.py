"""People and roles, end to end: the real bot over HTTP against the Bot API emulator."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from cryptography.fernet import Fernet
from telegram.ext import Application

from bot.config import Settings
from bot.devbotapi import Emulator
from bot.telegram_app import build_application, start_updates
from core.policies import Role
from store.engine import make_engine
from store.sql import SqlStore
from tests.conftest import DATA_KEY

ADMIN, NEWCOMER, SECOND, STRANGER = 9001, 5001, 5002, 6666


@dataclass(frozen=True)
class BotRun:
    """A running bot: its store, its PTB application and its settings."""

    store: SqlStore
    app: Application  # type: ignore[type-arg]
    settings: Settings


@asynccontextmanager
async def running_bot(botapi: Emulator, db_url: str, **overrides: Any) -> AsyncIterator[BotRun]:
    """The application on the emulator, as `manzoori run` runs it: long polling, or a webhook
    server when WEBHOOK_* settings are among the `overrides` of the test's settings."""
    settings = Settings(
        **{
            "_env_file": None,
            "database_url": db_url,
            "manzoori_secret_key": Fernet.generate_key().decode(),
            "manzoori_data_key": DATA_KEY.decode(),
            "manzoori_admin_ids": frozenset({ADMIN}),
            "telegram_bot_token": botapi.token,
            "telegram_api_url": f"http://127.0.0.1:{botapi.port}",
            **overrides,  # the same secret key as another process, say
        }
    )
    store = SqlStore(make_engine(db_url), DATA_KEY)
    app = build_application(settings, store)
    try:
        async with app:
            await app.start()
            assert app.updater is not None
            if settings.webhook_url:
                await start_updates(app, settings)  # exactly what `manzoori run` does
            else:  # polling as `manzoori run` does, with a short long-poll for quick tests
                await app.updater.start_polling(timeout=1, poll_interval=0)
            try:
                yield BotRun(store, app, settings)
            finally:  # a failed assertion must still stop the bot, or the error hides it
                await app.updater.stop()
                await app.stop()
    finally:
        await store.close()


async def said(user) -> str:
    return (await user.next_message()).text


async def roles(store: SqlStore, user_id: int) -> frozenset[Role]:
    async with store.begin() as tx:
        return await tx.roles(user_id)


async def test_a_stranger_is_refused_politely_with_their_id(botapi, db_url):
    async with running_bot(botapi, db_url):
        stranger = botapi.user(STRANGER, "Zara")
        stranger.send_text("/start")
        text = await said(stranger)
        assert "you are not registered" in text and f"Your Telegram id is {STRANGER}" in text
        stranger.send_text("APPROVED PO-2026-0001")  # text never counts for anything
        assert f"Your Telegram id is {STRANGER}" in await said(stranger)


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
    async with running_bot(botapi, db_url):
        newcomer = botapi.user(NEWCOMER, "Bilal")
        for command, refusal in (
            ("/invite approver", "Only admins can invite people."),
            ("/users", "Only admins can list users."),
            (f"/revoke {ADMIN}", "Only admins can revoke roles."),
        ):
            newcomer.send_text(command)
            assert await said(newcomer) == refusal


async def test_a_forged_invitation_is_refused(botapi, db_url):
    async with running_bot(botapi, db_url) as run:
        store = run.store
        newcomer = botapi.user(NEWCOMER, "Bilal")
        newcomer.send_text("/start AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
        assert (
            await said(newcomer) == "This invitation link is not valid; ask an admin for a new one."
        )
        assert await roles(store, NEWCOMER) == frozenset()


async def test_an_update_delivered_three_times_is_handled_once(botapi, db_url):
    async with running_bot(botapi, db_url):
        admin = botapi.user(ADMIN, "Ayesha")
        update_id = admin.send_text("/invite requester").update_id
        first = await said(admin)
        botapi.redeliver(update_id)
        botapi.redeliver(update_id)
        admin.send_text("/help")  # a later update: its reply proves the repeats were passed
        assert "You are registered as admin." in await said(admin)
        assert [m.text for m in admin.messages()].count(first) == 1
        assert sum(1 for m in admin.messages() if "t.me/" in (m.text or "")) == 1
