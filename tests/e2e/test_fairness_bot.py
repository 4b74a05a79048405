"""Fair shares, end to end: one person's burst, a crowd of strangers or a failing store cannot
cost anyone else their answer, nor lose a tap (bot.telegram.fairness, bot.telegram.app)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from bot.files.sheets import read_csv_text
from bot.telegram.app import TAP_FAILED
from bot.telegram.cards import APPROVE_TEXT, DETAILS_TEXT, REJECT_TEXT
from bot.telegram.context import STRANGER_TAP, TAP_DROPPED, TOO_MANY
from bot.telegram.decisions import DETAILS_IN_FLIGHT, DETAILS_SENDING
from bot.telegram.fairness import STRANGER_REPLIES, Shares
from bot.telegram.notices import NoticeRunner
from bot.telegram.orders import LARGE_SHEET, SHEET_IN_FLIGHT
from core.approval.policies import Role
from core.jobs.states import State
from core.purchasing import new_terms
from store import schema
from store.sql import SqlStore, SqlTx
from tests.helpers.bot import (
    ADMIN,
    SHEET,
    all_handled,
    answer,
    cards_out,
    job_and_decisions,
    running_bot,
    said,
    timed,
    with_terms,
)
from tests.helpers.factories import APPROVER_A, APPROVER_B, OUTSIDER, REQUESTER, T0

# waits on real time: seconds of sweeps, pacing and timeouts; answers are timed
pytestmark = [pytest.mark.slow, pytest.mark.timed]

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
    assert (await new_terms.import_terms(run.store, table, T0, "test")).created
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


@timed
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
        # Those still waiting behind Ali's own taps after their patience: dropped, and said so.
        assert set(answers) - {TAP_DROPPED} == {DETAILS_SENDING, DETAILS_IN_FLIGHT}
        assert max(botapi.callback_answer(query).age for query in taps) < 1.0
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


@timed
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


@timed
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


T = TypeVar("T", bound=SqlTx)


class BusyOnce(SqlStore):
    """A store whose next decision fails as a busy SQLite does ("database is locked"), once,
    in a transaction of its own or in its burst's (SqlStore.begin_batch)."""

    busy = True

    @asynccontextmanager
    async def transaction(self, kind: type[T]) -> AsyncIterator[T]:
        async with super().transaction(kind) as tx:
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


async def test_a_large_sheet_waits_for_the_large_one_before_it_and_a_small_one_does_not(
    botapi, db_url, store
):
    """While one large sheet is being read, a second large one (another requester's) waits
    its turn, not downloaded yet; a restock sheet of a few rows is answered meanwhile."""
    first, second, small = REQUESTER, OUTSIDER, APPROVER_B
    async with running_bot(botapi, db_url) as run:
        await with_terms(run.store)
        async with run.store.begin() as tx:
            for user_id in (second, small):
                await tx.grant(user_id, Role.REQUESTER, "test", T0)
        senders = [botapi.user(user_id, f"R{user_id}") for user_id in (first, second, small)]

        def large(n: int) -> bytes:  # blank rows pad it past LARGE_SHEET; each one differs
            return SHEET + f"TEA-500G,{n},\n".encode() + b",,\n" * (LARGE_SHEET // 3)

        botapi.stall_next("getFile", STALL)  # the first large sheet is slow to download
        senders[0].send_document(large(1), "large-1.csv", "text/csv")
        await botapi.wait_for(lambda: len(botapi.calls_to("getFile")) == 1)
        senders[1].send_document(large(2), "large-2.csv", "text/csv")
        senders[2].send_document(SHEET, "small.csv", "text/csv")
        assert (await said(senders[2])).startswith("small.csv accepted; 1 purchase order")
        assert len(botapi.calls_to("getFile")) == 2  # the first's and the small one's
        assert senders[1].messages() == []
        assert (await senders[0].next_message(timeout=STALL + 5)).text.startswith("large-1.csv")
        assert (await senders[1].next_message(timeout=10)).text.startswith("large-2.csv")


@timed
async def test_every_tap_of_a_burst_from_one_approver_is_answered_within_a_second(
    botapi, db_url, store
):
    """Sixty taps at once on one card: the sender's backlog and their taps' patience
    (fairness.Shares) drop most of them, and each of those is answered so; the approval
    counts once."""
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        buttons = [DETAILS_TEXT if n % 2 else APPROVE_TEXT for n in range(60)]

        # Tapped from another thread, as Telegram's updates come: the bot's loop runs meanwhile.
        # All sixty reach the bot at once: the first tap_backlog are taken, the rest dropped.
        def burst() -> list[str]:
            with botapi.at_once():
                return [ali.tap(ali_card, b) for b in buttons]

        queries = await asyncio.to_thread(burst)
        await all_handled(botapi, run, timeout=30)
        answers = [botapi.callback_answer(q) for q in queries]
        assert all(a is not None for a in answers), "a tap was left spinning"
        assert max(a.age for a in answers) < 1.0
        texts = Counter(a.text for a in answers)
        assert texts[TAP_DROPPED] >= 60 - Shares().tap_backlog  # beyond the taps' backlog
        assert texts["Approved — e-mailing the supplier."] == 1
        _job, decisions, _ = await job_and_decisions(run)
        assert [d.reviewer_id for d in decisions] == [APPROVER_A]


@timed
async def test_a_stranger_is_answered_at_every_tap_however_often(botapi, db_url, store):
    """A stranger with a card's callback data (forwarded to them, say): their chat hears the
    refusal once, but every tap of theirs is answered, one at a time or a hundred at once."""
    async with running_bot(botapi, db_url) as run:
        _ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        data = ali_card.button(APPROVE_TEXT).callback_data
        zara = botapi.user(OUTSIDER, "Zara")
        zara.send_text("/start")
        refusal = await zara.next_message()
        for _ in range(3):  # one after the other: every one answered, not only the first
            assert await answer(botapi, zara.tap_data(refusal, data)) == STRANGER_TAP
        burst = await asyncio.to_thread(lambda: [zara.tap_data(refusal, data) for _ in range(100)])
        await all_handled(botapi, run, timeout=30)
        answers = [botapi.callback_answer(q) for q in burst]
        assert all(a is not None for a in answers), "a stranger's tap was left spinning"
        assert {a.text for a in answers} <= {STRANGER_TAP, TAP_DROPPED}
        assert max(a.age for a in answers) < 1.0
        zara.send_text("hello?")
        await all_handled(botapi, run)
        assert len(zara.messages()) == 1  # the chat's refusal stays once per period
        _job, decisions, _ = await job_and_decisions(run)
        assert decisions == []


async def test_a_burst_of_commands_beyond_the_backlog_is_told_of_once(botapi, db_url, store):
    """An admin sends a hundred /invite at once: those beyond their backlog are not handled,
    and the admin hears that once, not a hundred times and not never."""
    async with running_bot(botapi, db_url) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        for _ in range(100):
            admin.send_text("/invite requester")
        await all_handled(botapi, run, timeout=60)
        texts = [m.text for m in admin.messages()]
        assert texts.count(TOO_MANY) == 1
        invitations = [t for t in texts if t != TOO_MANY]
        assert Shares().per_user_backlog <= len(invitations) < 100
        assert all("t.me/" in t or "/start " in t for t in invitations), invitations[:3]
