"""What happens to cards after they go out: a second approval, a new draft, the deadline, a
crash before the edit, and a PO that lands in the admins' queue; end to end over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from bot.bootstrap import run_forever
from bot.clock import utcnow
from bot.files.sheets import read_csv_text
from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from bot.telegram.cards import APPROVE_TEXT, REJECT_TEXT
from bot.telegram.notices import NoticeRunner
from core.approval import decisions
from core.approval.decisions import Review
from core.approval.policies import Verdict
from core.jobs.states import State
from core.purchasing import new_terms
from tests.helpers.bot import (
    ADMIN,
    PO,
    TERMS,
    BotRun,
    answer,
    cards_out,
    deliveries_done,
    job_and_decisions,
    running_bot,
    said,
    submitted,
)
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0


async def card_now(botapi, chat: int, card):
    """The card once the bot has edited it (after the edit is seen)."""
    await botapi.wait_for(lambda: botapi.message(chat, card.message_id).edited)
    return botapi.message(chat, card.message_id)


@contextlib.asynccontextmanager
async def runners(run: BotRun, poll: float = 0.1) -> AsyncIterator[None]:
    """The outbox and notice runners on their timers, as `manzoori run` runs them."""
    stop = asyncio.Event()
    outbox = outbox_of(run)
    notices = NoticeRunner(run.store, run.app.bot, run.settings)
    tasks = [
        asyncio.create_task(run_forever(outbox.run_once, poll, stop)),
        asyncio.create_task(run_forever(notices.run_once, poll, stop)),
    ]
    try:
        yield
    finally:
        stop.set()
        await asyncio.gather(*tasks)


def outbox_of(run: BotRun, sender=None) -> OutboxRunner:
    """The outbox runner of `run`; by default with a sender that must not be called."""
    return OutboxRunner(run.store, sender or _Unused(), run.settings.rules(),
                        lease=timedelta(minutes=1))  # fmt: skip


class _Unused:
    """A sender for runs in which nothing is approved: any call is a test failure."""

    provider_idempotent = False

    @contextlib.asynccontextmanager
    async def session(self):
        raise AssertionError("nothing should be sent here, yet a session was opened")
        yield self  # an async generator, as Sender.session is a context manager

    async def send(self, order):
        raise AssertionError(f"nothing should be sent here, got {order.effect.key}")


async def test_dual_approval_counts_on_every_card_and_needs_two_people(
    botapi, db_url, store, smtp_sink
):
    async with running_bot(botapi, db_url, manzoori_dual_approval_above_pkr=1) as run:
        ali, ali_card, sana, sana_card = await cards_out(botapi, run)
        assert "👥 0 of 2 approvals" in ali_card.text
        query = ali.tap(ali_card, APPROVE_TEXT)
        assert await answer(botapi, query) == "Needs a second approver. Your approval is recorded."
        mine = await card_now(botapi, APPROVER_A, ali_card)
        assert mine.text.startswith("🕓 You approved at ") and mine.buttons == []
        assert "👥 1 of 2 approvals" in mine.text.splitlines()[0]
        theirs = await card_now(botapi, APPROVER_B, sana_card)
        assert "👥 1 of 2 approvals" in theirs.text
        assert APPROVE_TEXT in theirs.button_texts  # Sana may still approve
        again = ali.tap_data(ali_card, ali_card.button(APPROVE_TEXT).callback_data)
        assert (await answer(botapi, again)).startswith("Already approved by you at ")
        job, _, effects = await job_and_decisions(run)
        assert job.state is State.AWAITING_APPROVAL and effects == []

        query = sana.tap(theirs, APPROVE_TEXT)
        assert await answer(botapi, query) == "Approved — e-mailing the supplier."
        for chat, card in ((APPROVER_A, ali_card), (APPROVER_B, sana_card)):
            shown = await botapi.wait_for(
                lambda c=chat, m=card.message_id: botapi.message(c, m).text.startswith("✅")
            )
            assert shown and botapi.message(chat, card.message_id).text.startswith(
                "✅ Approved by Ali, Sana at "
            )
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.APPROVED and len(decisions) == 2 and len(effects) == 1


async def test_a_new_draft_supersedes_the_delivered_cards(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, sana, sana_card = await cards_out(botapi, run)
        dearer = TERMS.read_text().replace("6500.50", "6800.00")  # the charger costs more
        await new_terms.import_terms(run.store, read_csv_text(dearer.encode()), utcnow(), "t")
        await outbox_of(run).run_once()  # the runner re-drafts open POs on the new terms
        job, _, _ = await job_and_decisions(run)
        assert job.draft_version == 2
        assert await NoticeRunner(run.store, run.app.bot, run.settings).run_once() == 3
        for user, chat, old in ((ali, APPROVER_A, ali_card), (sana, APPROVER_B, sana_card)):
            superseded = await card_now(botapi, chat, old)
            assert superseded.text.splitlines()[0] == "🔁 Superseded by v2: a new card follows"
            assert superseded.buttons == []
            new = await user.next_message()
            assert "Draft v2 · " in new.text and "Rs 6,800.00" in new.text
        for text in (APPROVE_TEXT, REJECT_TEXT):
            query = ali.tap_data(ali_card, ali_card.button(text).callback_data)
            assert await answer(botapi, query) == "This card was superseded by v2."
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.AWAITING_APPROVAL and decisions == []


@pytest.mark.slow  # waits on real time
@pytest.mark.timed
async def test_the_sweep_expires_a_request_within_seconds_and_says_so_everywhere(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url, manzoori_approval_ttl_seconds=1) as run:
        requester = botapi.user(REQUESTER, "Bilal")
        _ali, ali_card, _sana, sana_card = await cards_out(botapi, run)
        requester.skip_messages()
        job, _, _ = await job_and_decisions(run)
        async with runners(run):
            told = await requester.next_message(timeout=10)
            late = utcnow() - job.decision_deadline
        assert told.text == f"{PO} expired without a decision. Send the sheet again to ask again."
        assert late < timedelta(seconds=3)
        for chat, card in ((APPROVER_A, ali_card), (APPROVER_B, sana_card)):
            text = (await card_now(botapi, chat, card)).text
            assert text.startswith("⌛ Expired at ") and "nothing was sent" in text
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.EXPIRED and decisions == []


@pytest.mark.slow  # waits on real time
@pytest.mark.timed
async def test_a_tap_after_the_deadline_is_refused_before_any_sweep(botapi, db_url, store):
    async with running_bot(botapi, db_url, manzoori_approval_ttl_seconds=1) as run:
        ali, ali_card, _sana, sana_card = await cards_out(botapi, run)
        job, _, _ = await job_and_decisions(run)
        approve = ali_card.button(APPROVE_TEXT).callback_data  # before any tap edits the card
        await asyncio.sleep(max(0.0, (job.decision_deadline - utcnow()).total_seconds()) + 0.05)
        query = ali.tap(ali_card, REJECT_TEXT)  # no runner runs: only the tap sees the time
        assert await answer(botapi, query) == "This request expired."  # and asks no reason
        query = ali.tap_data(ali_card, approve)
        assert await answer(botapi, query) == "This request expired."
        assert (await card_now(botapi, APPROVER_B, sana_card)).text.startswith("⌛ Expired at ")
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.EXPIRED and decisions == [] and effects == []


async def test_cards_are_edited_even_if_the_bot_died_right_after_the_decision(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        _ali, ali_card, _sana, sana_card = await cards_out(botapi, run)
        job, _, _ = await job_and_decisions(run)
        # The decision commits, then the process dies before any edit: as a tap would leave it.
        await decisions.decide(
            run.store,
            Review(PO, APPROVER_B, Verdict.REJECT, 1, job.draft_hash, reason="wrong month"),
            utcnow(),
            run.settings.rules(),
        )
        assert botapi.message(APPROVER_A, ali_card.message_id).edited is False
        notices = NoticeRunner(run.store, run.app.bot, run.settings)
        assert await notices.run_once() == 2  # the card edits and the requester's news
        for chat, card in ((APPROVER_A, ali_card), (APPROVER_B, sana_card)):
            text = botapi.message(chat, card.message_id).text
            assert text.startswith("❌ Rejected by Sana at ")
            assert REJECT_TEXT not in botapi.message(chat, card.message_id).button_texts
        assert await notices.run_once() == 0


@pytest.mark.timed  # the send's 0.3 s must run out in DATA, not before it on a busy machine
async def test_admins_are_alerted_when_a_po_needs_manual_review(botapi, db_url, store, smtp_sink):
    async with running_bot(botapi, db_url) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        requester = botapi.user(REQUESTER, "Bilal")
        requester.skip_messages()
        await answer(botapi, ali.tap(ali_card, APPROVE_TEXT))
        assert (await requester.next_message()).text.startswith(f"{PO} was approved")
        await deliveries_done(run)  # the card edits too, before the passes below
        smtp_sink.script("DATA", "250 2.0.0 Ok: queued", delay=1.0)  # answers after we gave up
        sender = SmtpSender(
            SmtpServer(host=smtp_sink.host, port=smtp_sink.port, tls="none", timeout=0.3),
            mail_from="orders@shop.example",
        )
        await outbox_of(run, sender).run_once()
        job, _, _ = await job_and_decisions(run)
        assert job.state is State.UNKNOWN_OUTCOME
        notices = NoticeRunner(run.store, run.app.bot, run.settings)
        while await notices.run_once():
            pass
        assert await said(admin) == (
            f"⚠️ {PO} needs you: the e-mail may or may not have reached the supplier. "
            "/queue shows it with what you can do."
        )
        assert "needs a person to check it" in (await requester.next_message()).text
        await asyncio.sleep(0.8)  # let the sink finish its late answer before it stops


async def test_a_card_still_on_its_way_when_the_po_is_decided_is_edited_after_it_lands(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        sana = botapi.user(APPROVER_B, "Sana", started=True)
        async with run.store.begin() as tx:
            await tx.met(APPROVER_A, "Ali", T0, started=True)
        await submitted(botapi, run)
        async with run.store.begin() as tx:  # Ali's card first, then Sana's, slowly
            job = await tx.job_by_po(PO)
            [later] = [n for n in await tx.notices_for(job.id) if n.user_id == APPROVER_B]
            await tx.update_notice(later, next_attempt_at=later.next_attempt_at
                                   + timedelta(milliseconds=1))  # fmt: skip
        botapi.stall_next("sendMessage", 1.0, chat_id=APPROVER_B)
        notices = NoticeRunner(run.store, run.app.bot, run.settings)
        delivering = asyncio.create_task(notices.run_once())
        ali_card = await ali.next_message()
        await botapi.wait_for(  # Sana's card is drawn and on its way, held up by the link
            lambda: [c for c in botapi.calls_to("sendMessage")
                     if c.params.get("chat_id") == str(APPROVER_B) and c.finished is None]
        )  # fmt: skip
        await answer(botapi, ali.tap(ali_card, APPROVE_TEXT))
        await deliveries_done(run)  # the tap's own pass, done before the pass below
        assert await delivering == 2
        sana_card = await sana.next_message()
        assert APPROVE_TEXT in sana_card.button_texts  # drawn before the decision
        assert await notices.run_once() == 1  # the edit it missed, owed when it landed
        edited = botapi.message(APPROVER_B, sana_card.message_id)
        assert edited.text.startswith("✅ Approved by Ali at ") and edited.buttons == []
