"""The real bot while the database is held by someone else, and with nobody to ask: every
person gets a true answer, never silence."""

from __future__ import annotations

import sqlite3

import pytest

from bot.telegram.app import TAP_BUSY
from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.notices import NoticeRunner
from bot.words.texts import NOBODY_TO_ASK
from core.approval.policies import Role
from core.jobs.states import State
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.bot import (
    ADMIN,
    PO,
    SHEET,
    answer,
    cards_out,
    job_and_decisions,
    running_bot,
    said,
    with_terms,
)
from tests.helpers.factories import REQUESTER, T0
from tests.helpers.store import DATA_KEY

# The bot's SQLite writers give up after 100 ms here, so three attempts end quickly.
SHORT_BUSY_MS = 100


async def test_a_tap_while_another_process_holds_the_lock_is_told_to_tap_again(
    botapi, db_url, store
):  # store: the usual cast registered
    if not db_url.startswith("sqlite"):
        pytest.skip("PostgreSQL has no database-wide write lock to hold")
    async with running_bot(botapi, db_url, busy_timeout_ms=SHORT_BUSY_MS) as run:
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        holder = sqlite3.connect(db_url.removeprefix("sqlite+aiosqlite:///"), isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")  # another process's long write
            assert await answer(botapi, ali.tap(ali_card, APPROVE_TEXT)) == TAP_BUSY
            holder.rollback()
        finally:
            holder.close()
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.AWAITING_APPROVAL and decisions == []  # as the answer said
        again = ali.tap(ali_card, APPROVE_TEXT)
        assert await answer(botapi, again) == "Approved — e-mailing the supplier."
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.APPROVED and len(decisions) == 1


async def test_a_sheet_with_nobody_to_ask_says_so_and_the_admins_hear(botapi, db_url):
    setup = SqlStore(make_engine(db_url), DATA_KEY)
    async with setup.begin() as tx:
        await tx.grant(REQUESTER, Role.REQUESTER, "test", T0)  # and no approver at all
    await setup.close()
    async with running_bot(botapi, db_url) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        await with_terms(run.store)
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_document(SHEET, "restock.csv", "text/csv")
        reply = await said(requester)
        assert reply.startswith("restock.csv accepted; 1 purchase order")
        assert reply.endswith("\n" + NOBODY_TO_ASK)
        runner = NoticeRunner(run.store, run.app.bot, run.settings)
        assert await runner.run_once() == 1  # the alert, fanned out to each admin
        assert await runner.run_once() == 1  # the one admin's copy
        assert await said(admin) == (
            f"⚠️ {PO} is waiting for approval, but no approver is registered. "
            "Invite one with /invite approver; its card goes out as soon as they join."
        )
