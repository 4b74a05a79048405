"""The real bot over HTTP against the Bot API emulator (bot/dev/botapi), and the steps the
end-to-end tests share: supplier terms imported, a sheet submitted, cards out, a tap answered,
and a wait for what a tap delivers in the background."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import func, select

from bot.bootstrap import Running, running
from bot.config import Settings
from bot.dev.botapi import Emulator
from bot.files.sheets import read_csv_text
from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.notices import NoticeRunner
from core.purchasing import new_terms
from store import schema
from store.engine import SQLITE_BUSY_TIMEOUT_MS, make_engine
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0
from tests.helpers.store import DATA_KEY

ADMIN = 9001  # the one admin of the configuration (MANZOORI_ADMIN_IDS)
TERMS = Path(__file__).parent.parent / "data" / "terms" / "good.csv"
# PO numbers carry the year in Pakistan, as the bot computes it.
YEAR = datetime.now(ZoneInfo("Asia/Karachi")).year
PO = f"PO-{YEAR}-0001"
SHEET = b"sku,quantity,notes\nCHG-65W,3,for <b>Eid</b> & more\n"
# For a test that bounds wall-clock time (a tap answered within a second): it runs untraced,
# since under coverage's tracer (`make test`) the bot and the emulator run two to three times
# slower, and the bound would measure the tracer rather than the bot.
timed = pytest.mark.no_cover


# What `running_bot` yields: the bot, its store, settings and runners (bot.bootstrap.Running).
BotRun = Running


def settings_for(db_url: str, **values: Any) -> Settings:
    """A test's settings on `db_url`: a fresh secret key, the test stores' data key and ADMIN
    as the one admin, with `values` over them."""
    return Settings(
        **{
            "_env_file": None,
            "database_url": db_url,
            "manzoori_secret_key": Fernet.generate_key().decode(),
            "manzoori_data_key": DATA_KEY.decode(),
            "manzoori_admin_ids": frozenset({ADMIN}),
            **values,
        }
    )


@asynccontextmanager
async def running_bot(
    botapi: Emulator,
    db_url: str,
    *,
    store_class: type[SqlStore] = SqlStore,
    busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS,
    web: bool = False,
    loops: bool = False,
    **overrides: Any,
) -> AsyncIterator[BotRun]:
    """The application on the emulator, started as `manzoori run` starts it (long polling, or a
    webhook server when WEBHOOK_* settings are among the `overrides` of the test's settings),
    with a short long poll for quick tests; the runners' passes are the test's to drive.
    `store_class`: a SqlStore subclass that fails on cue, say; `busy_timeout_ms`: how long its
    SQLite writers wait for the lock (short in lock tests); `web`: serve the web front door
    (give a free `web_port` among the `overrides`); `loops`: the runners run their own loops,
    as under `manzoori run` (then the test must not drive their passes itself)."""
    settings = settings_for(
        db_url,
        telegram_bot_token=botapi.token,
        telegram_api_url=f"http://127.0.0.1:{botapi.port}",
        **overrides,  # the same secret key as another process, say
    )
    store = store_class(make_engine(db_url, busy_timeout_ms=busy_timeout_ms), DATA_KEY)
    try:
        async with running(settings, store, loops=loops, long_poll=1, web=web) as run:
            yield run
    finally:
        await store.close()


async def said(user) -> str:
    """The text of the bot's next message to this emulated user."""
    return (await user.next_message()).text


async def with_terms(store) -> None:
    """The supplier terms of tests/data/terms/good.csv, imported."""
    result = await new_terms.import_terms(store, read_csv_text(TERMS.read_bytes()), T0, "test")
    assert result.created


async def submitted(botapi, run) -> None:
    """The requester sends a sheet through the bot; one PO waits for approval."""
    await with_terms(run.store)
    requester = botapi.user(REQUESTER, "Bilal")
    requester.send_document(SHEET, "restock.csv", "text/csv")
    reply = await said(requester)
    assert reply.startswith("restock.csv accepted; 1 purchase order"), reply


async def cards_out(botapi, run):
    """The sheet is submitted and both approvers hold their card."""
    ali = botapi.user(APPROVER_A, "Ali", started=True)
    sana = botapi.user(APPROVER_B, "Sana", started=True)
    async with run.store.begin() as tx:
        await tx.met(APPROVER_A, "Ali", T0, started=True)
        await tx.met(APPROVER_B, "Sana", T0, started=True)
    await submitted(botapi, run)
    assert await NoticeRunner(run.store, run.app.bot, run.settings).run_once() == 2
    return ali, await ali.next_message(), sana, await sana.next_message()


async def answer(botapi, query_id):
    """The text the bot answered this tap with, once it has."""
    return (await botapi.wait_for(lambda: botapi.callback_answer(query_id))).text


async def job_and_decisions(run):
    """The PO's job, its decisions and its sends, as stored now."""
    async with run.store.begin() as tx:
        job = await tx.job_by_po(PO)
        return job, await tx.decisions(job.id), await tx.effects_for(job.id)


async def deliveries_done(run: BotRun, timeout: float = 10.0) -> None:
    """Wait until the bot has handled every update it has taken and has finished the
    deliveries those started: a decision's handler answers the tap, then delivers the card
    edits and the requester's news in a task of its own (bot.telegram.decisions.deliver_now,
    named "deliver-<job id>"). An answer the test has seen is no sign that they are done, nor
    even started, so a test that then runs a notice pass of its own, or asserts on what the
    tap delivers, waits here first.

    Both kinds of task run in this loop, made by PTB's Application.create_task, so they are
    found by name among asyncio's tasks, and waited for until no new one appears.
    """
    handling = f"Application:{run.app.bot.id}:process_concurrent_update"
    this = asyncio.current_task()

    def busy(task: asyncio.Task[Any]) -> bool:
        name = task.get_name()
        return task is not this and (name == handling or name.startswith("deliver-"))

    async with asyncio.timeout(timeout):
        while pending := {task for task in asyncio.all_tasks() if busy(task)}:
            await asyncio.wait(pending)


async def all_handled(botapi: Emulator, run: BotRun, timeout: float = 10.0) -> None:
    """Wait until the bot has taken every update the emulator holds and has finished handling
    them: the way to show that an update was dropped unanswered. An update is confirmed by the
    next getUpdates, then sits in the application's queue until its handling task starts."""
    assert run.app is not None
    app = run.app
    await botapi.wait_for(
        lambda: not botapi.pending_update_ids and app.update_queue.empty(), timeout=timeout
    )
    await deliveries_done(run, timeout)


async def person_rows(store: SqlStore) -> tuple[int, int]:
    """How many rows processed_updates and telegram_users hold now."""
    async with store.engine.connect() as conn:
        counts = [
            (await conn.execute(select(func.count()).select_from(table))).scalar_one()
            for table in (schema.processed_updates, schema.telegram_users)
        ]
    return counts[0], counts[1]


def mail_bot(botapi, db_url, sink, port, **more):
    """The bot with its front door on `port` (its public URL) and mail to the sink."""
    return running_bot(
        botapi, db_url, web=True, web_port=port, manzoori_public_url=f"http://127.0.0.1:{port}",
        smtp_host=sink.host, smtp_port=sink.port, smtp_tls="none", **more,
    )  # fmt: skip


async def approved_and_sent(botapi, run):
    """A sheet through the bot, approved on the cards, e-mailed by the outbox: the people."""
    ali, ali_card, sana, _ = await cards_out(botapi, run)
    assert await answer(botapi, ali.tap(ali_card, APPROVE_TEXT)) == (
        "Approved — e-mailing the supplier."
    )
    await deliveries_done(run)
    assert await run.outbox.run_once() == 1
    return ali, sana


async def delivered(run) -> None:
    """Every notice owed so far delivered (passes until one finds nothing: an admin's alert is
    fanned out in one pass and delivered in the next)."""
    await deliveries_done(run)
    while await run.notices.run_once():
        pass
