"""Fair shares, end to end: one person's burst, a crowd of strangers or a failing store cannot
cost anyone else their answer, nor lose a tap (bot.telegram.fairness, bot.telegram.app)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError
from telegram import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Update, User

from bot.spreadsheets import read_csv_text
from bot.telegram.app import TAP_FAILED
from bot.telegram.cards import APPROVE_TEXT, DETAILS_TEXT, REJECT_TEXT
from bot.telegram.decisions import DETAILS_IN_FLIGHT, DETAILS_SENDING
from bot.telegram.fairness import STRANGER_REPLIES, TAP_DROPPED, FairProcessor, Shares
from bot.telegram.notices import NoticeRunner
from bot.telegram.orders import SHEET_IN_FLIGHT
from core import purchasing
from core.states import State
from store import schema
from store.sql import SqlStore, SqlTx
from tests.helpers.bot import (
    SHEET,
    all_handled,
    answer,
    cards_out,
    job_and_decisions,
    running_bot,
    said,
    with_terms,
)
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0

pytestmark = pytest.mark.slow  # waits on real time: seconds of sweeps, pacing and timeouts

# Longer than any prompt answer takes here, short enough for a quick test.
STALL = 2.0
# A PO big enough that rendering and uploading it again and again would show.
LINES = 3000
HEADER = "supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,max_qty"


async def big_cards_out(botapi, run):
    """A PO of LINES lines waits for approval, and both approvers hold its card."""
    terms = [HEADER] + [
        f"SUP-BIG-01,Big Traders,orders@big.pk,SKU-{n:05d},Part {n},10.00,1,500"
        for n in range(LINES)
    ]
    table = read_csv_text("\n".join(terms).encode())
    assert (await purchasing.import_terms(run.store, table, T0, "test")).created
    ali = botapi.user(APPROVER_A, "Ali", started=True)
    sana = botapi.user(APPROVER_B, "Sana", started=True)
    async with run.store.begin() as tx:
        await tx.met(APPROVER_A, "Ali", T0, started=True)
        await tx.met(APPROVER_B, "Sana", T0, started=True)
    sheet = "sku,quantity\n" + "".join(f"SKU-{n:05d},2\n" for n in range(LINES))
    requester = botapi.user(REQUESTER, "Bilal")
    requester.send_document(sheet.encode(), "big.csv", "text/csv")
    assert (await said(requester)).startswith("big.csv accepted; 1 purchase order")
    assert await NoticeRunner(run.store, run.app.bot, run.settings).run_once() == 2
    return ali, await ali.next_message(), sana, await sana.next_message()


def job_po(message: Any) -> str:
    """The PO number a Details file is named after ("PO-2026-0001-v1.csv")."""
    return str(message.document.file_name).removesuffix("-v1.csv")


async def test_sixty_details_taps_upload_the_po_once_and_every_tap_is_answered(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, sana, sana_card = await big_cards_out(botapi, run)
        botapi.stall_next("sendDocument", STALL)  # Telegram slow to take the first upload
        taps = [ali.tap(ali_card, DETAILS_TEXT) for _ in range(60)]
        await botapi.wait_for(lambda: botapi.calls_to("sendDocument"))  # under way
        other = sana.tap(sana_card, REJECT_TEXT)  # another approver, meanwhile
        assert (await answer(botapi, other)).startswith("Why reject it?")
        assert botapi.callback_answer(other).age < 1.0
        answers = [await answer(botapi, query) for query in taps]
        assert set(answers) == {DETAILS_SENDING, DETAILS_IN_FLIGHT}
        await all_handled(botapi, run)
        later = ali.tap(ali_card, DETAILS_TEXT)  # after the upload: sent again by its file_id
        assert await answer(botapi, later) == DETAILS_SENDING
        await all_handled(botapi, run)
        uploads = [call for call in botapi.calls_to("sendDocument") if call.files]
        sent = botapi.documents(APPROVER_A)
        assert len(uploads) == 1
        assert len(sent) == answers.count(DETAILS_SENDING) + 1
        assert {m.document.file_id for m in sent} == {sent[0].document.file_id}
        assert {m.caption for m in sent} == {f"{job_po(sent[0])} v1: {LINES:,} lines"}


async def test_one_persons_twenty_slow_updates_do_not_delay_anyone_else(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, _ali_card, sana, sana_card = await cards_out(botapi, run)
        requester = botapi.user(REQUESTER, "Bilal")
        requester.skip_messages()
        botapi.stall_next("sendMessage", STALL, times=20, chat_id=REQUESTER)
        for _ in range(20):
            requester.send_text("/help")  # each reply takes STALL seconds to go out
        await botapi.wait_for(lambda: botapi.calls_to("sendMessage"))
        ali.skip_messages()
        ali.send_text("/help")
        approve = sana.tap(sana_card, APPROVE_TEXT)
        assert await answer(botapi, approve) == "Approved — e-mailing the supplier."
        assert botapi.callback_answer(approve).age < 1.0
        assert "registered as approver" in (await ali.next_message(timeout=1.0)).text
        assert len(requester.messages()) < 20  # the burst was still going out
        botapi.clear_faults()  # the rest of the burst goes out at once
        await all_handled(botapi, run, timeout=4 * STALL)
        assert len(requester.messages()) >= 20  # every one of them answered in the end


async def test_six_hundred_strangers_cost_no_writes_and_do_not_delay_a_card(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await with_terms(run.store)
        for approver, name in ((APPROVER_A, "Ali"), (APPROVER_B, "Sana")):
            botapi.user(approver, name, started=True)
            async with run.store.begin() as tx:
                await tx.met(approver, name, T0, started=True)
        crowd = [botapi.user(700_000 + n, f"Stranger{n}") for n in range(600)]
        said_hi = {person.send_text("hi").update_id for person in crowd}
        requester = botapi.user(REQUESTER, "Bilal")
        sent_at = time.monotonic()
        requester.send_document(SHEET, "restock.csv", "text/csv")
        assert (await said(requester)).startswith("restock.csv accepted; 1 purchase order")
        assert await NoticeRunner(run.store, run.app.bot, run.settings).run_once() == 2
        ali = botapi.user(APPROVER_A, "Ali")
        card = await ali.next_message()
        card_after = time.monotonic() - sent_at
        approve = ali.tap(card, APPROVE_TEXT)
        assert await answer(botapi, approve) == "Approved — e-mailing the supplier."
        assert botapi.callback_answer(approve).age < 1.0
        await all_handled(botapi, run, timeout=30)
        assert card_after < 5.0, card_after
        async with run.store.engine.connect() as conn:
            claimed = set(
                (await conn.execute(select(schema.processed_updates.c.update_id))).scalars()
            )
            met = set((await conn.execute(select(schema.telegram_users.c.user_id))).scalars())
        assert not claimed & said_hi  # no stranger's update was written down
        assert met == {APPROVER_A, APPROVER_B, REQUESTER}  # nor any stranger's name
        answered = sum(len(person.messages()) for person in crowd)
        assert 1 <= answered <= STRANGER_REPLIES  # the crowd shares a small budget of replies


class BusyOnce(SqlStore):
    """A store whose next decision fails as a busy SQLite does ("database is locked"), once."""

    busy = True

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[SqlTx]:
        async with super().begin() as tx:
            yield _BusyDecisions(tx, self) if BusyOnce.busy else tx  # type: ignore[misc]


class _BusyDecisions:
    """Passes everything to the transaction but the first insert_decision, which fails."""

    def __init__(self, tx: SqlTx, store: BusyOnce) -> None:
        self._tx = tx

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    async def insert_decision(self, decision: Any) -> None:
        BusyOnce.busy = False
        raise OperationalError("INSERT INTO decisions", {}, Exception("database is locked"))


async def test_a_tap_whose_handler_failed_is_handled_when_telegram_delivers_it_again(
    botapi, db_url, store
):
    BusyOnce.busy = False  # cards go out on a healthy store
    async with running_bot(botapi, db_url, store_class=BusyOnce) as run:
        _ali, _ali_card, sana, sana_card = await cards_out(botapi, run)
        BusyOnce.busy = True
        query = sana.tap(sana_card, APPROVE_TEXT)
        assert await answer(botapi, query) == TAP_FAILED
        await all_handled(botapi, run)  # the failed handler released its claim
        job, decisions, _ = await job_and_decisions(run)
        assert decisions == [] and job.state is State.AWAITING_APPROVAL
        botapi.redeliver(botapi.callback_query(query).update_id)
        await all_handled(botapi, run)
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.APPROVED and [d.reviewer_id for d in decisions] == [APPROVER_B]


async def test_a_second_sheet_while_the_first_is_checked_is_refused_at_once(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await with_terms(run.store)
        requester = botapi.user(REQUESTER, "Bilal")
        botapi.stall_next("getFile", STALL)  # the first sheet is slow to download
        requester.send_document(SHEET, "first.csv", "text/csv")
        await botapi.wait_for(lambda: botapi.calls_to("getFile"))
        requester.send_document(SHEET, "second.csv", "text/csv")
        assert await said(requester) == SHEET_IN_FLIGHT  # before the first is answered
        reply = await requester.next_message(timeout=STALL + 5)
        assert reply.text.startswith("first.csv accepted; 1 purchase order")
        requester.send_document(b"sku,quantity\nTEA-500G,3\n", "third.csv", "text/csv")
        assert (await said(requester)).startswith("third.csv accepted")  # free again


async def test_taps_beyond_a_senders_backlog_are_answered_not_left_spinning(botapi):
    """The fair processor on its own, with taps made in the emulator: a tap dropped because
    its sender already has too many waiting is answered at once with the truth."""
    bot = botapi.ptb_bot()
    async with bot:
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("Approve", callback_data="x")]])
        await bot.send_message(APPROVER_A, "a card", reply_markup=keyboard)
        queries = [ali.tap(ali.last_message(), "Approve") for _ in range(5)]
        processor = FairProcessor(Shares(per_user=1, per_user_backlog=3, taps=8, messages=8))
        user, handled, gate = User(APPROVER_A, "Ali", False), [], asyncio.Event()

        async def handle(query_id: str) -> None:
            handled.append(query_id)
            await gate.wait()

        tasks = []
        for number, query_id in enumerate(queries, start=1):
            query = CallbackQuery(query_id, user, "chat", data="x")
            query.set_bot(bot)
            update = Update(number, callback_query=query)
            tasks.append(asyncio.create_task(processor.process_update(update, handle(query_id))))
        await asyncio.wait(tasks[3:])  # beyond the backlog of 3: dropped, and answered
        assert [botapi.callback_answer(q).text for q in queries[3:]] == [TAP_DROPPED] * 2
        assert handled == queries[:1] and not any(botapi.callback_answer(q) for q in queries[:3])
        gate.set()
        await asyncio.gather(*tasks)
        assert handled == queries[:3]
