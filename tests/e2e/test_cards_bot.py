"""Approval cards go out through the notice outbox, once each, over a flaky Bot API."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from bot.clock import Runtime, utcnow
from bot.telegram.cards import APPROVE_TEXT, DETAILS_TEXT, REJECT_TEXT
from bot.telegram.notices import NoticeRunner
from core.approval.policies import Role
from core.approval.signing import ButtonAction, verify_button
from core.jobs.notices import NoticeKind, NoticeStatus
from tests.helpers.bot import ADMIN, YEAR, running_bot, said, submitted
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0, Clock


async def notices(run):
    async with run.store.begin() as tx:
        job = await tx.job_by_po(f"PO-{YEAR}-0001")
        return {n.user_id: n for n in await tx.notices_for(job.id)}, job


async def test_every_approver_but_the_requester_gets_one_card(
    botapi, db_url, store
):  # store: the usual cast registered
    async with running_bot(botapi, db_url) as run:
        async with run.store.begin() as tx:
            await tx.grant(REQUESTER, Role.APPROVER, "test", T0)  # also an approver
            await tx.met(APPROVER_A, "Ali", T0, started=True)
            await tx.met(APPROVER_B, "Sana", T0, started=True)
        ali, sana = (
            botapi.user(APPROVER_A, "Ali", started=True),
            botapi.user(APPROVER_B, "Sana", started=True),
        )
        await submitted(botapi, run)
        runner = NoticeRunner(run.store, run.app.bot, run.settings)
        assert await runner.run_once() == 2
        assert await runner.run_once() == 0  # nothing owed twice

        card = await ali.next_message()
        assert card.parse_mode == "HTML"
        assert card.text.startswith(f"🧾 PO-{YEAR}-0001 — approval needed")
        assert "for <b>Eid</b> & more" in card.text  # escaped, shown as typed
        assert "Requested by Bilal" in card.text and "sheet restock.csv" in card.text
        assert card.button_texts == [APPROVE_TEXT, REJECT_TEXT, DETAILS_TEXT]
        owed, _ = await notices(run)
        actions = {
            verify_button(run.settings.secret, b.callback_data).action
            for row in card.buttons
            for b in row
        }
        assert actions == set(ButtonAction) & {
            ButtonAction.APPROVE,
            ButtonAction.REJECT,
            ButtonAction.DETAILS,
        }
        assert (await sana.next_message()).text == card.text
        assert set(owed) == {APPROVER_A, APPROVER_B}  # not the requester
        assert owed[APPROVER_A].status is NoticeStatus.SENT
        assert owed[APPROVER_A].message_id == card.message_id
        assert [m for m in botapi.messages(REQUESTER) if "approval needed" in (m.text or "")] == []


async def test_an_approver_who_never_started_the_bot_is_not_retried_forever(
    botapi, db_url, store
):  # store: the usual cast registered
    async with running_bot(botapi, db_url) as run:
        botapi.user(APPROVER_A, "Ali")  # exists, never pressed Start
        botapi.user(APPROVER_B, "Sana", started=True)
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        async with run.store.begin() as tx:
            await tx.met(APPROVER_A, "Ali", T0, started=False)
        await submitted(botapi, run)
        runner = NoticeRunner(run.store, run.app.bot, run.settings)
        assert await runner.run_once() == 2
        owed, _ = await notices(run)
        assert owed[APPROVER_A].status is NoticeStatus.FAILED
        assert "initiate conversation" in owed[APPROVER_A].last_error
        assert owed[APPROVER_B].status is NoticeStatus.SENT
        assert await runner.run_once() == 1  # the alert, fanned out to each admin
        assert await runner.run_once() == 1  # the one admin's copy
        assert await runner.run_once() == 0  # and the card is not tried again
        assert await said(admin) == (
            f"⚠️ Ali (Telegram id {APPROVER_A}) could not be sent the approval card for "
            f"PO-{YEAR}-0001: they have not started the bot or have blocked it. Ask them to "
            "open the bot and press Start; the other approvers have their cards."
        )


async def test_429_and_5xx_while_cards_go_out_deliver_each_card_once(
    botapi, db_url, store
):  # store: the usual cast registered
    async with running_bot(botapi, db_url) as run:
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        sana = botapi.user(APPROVER_B, "Sana", started=True)
        await submitted(botapi, run)
        botapi.fail_next("sendMessage", status=429, retry_after=1, chat_id=APPROVER_A)
        botapi.fail_next("sendMessage", status=502, chat_id=APPROVER_B)
        clock = Clock(utcnow())  # the notices were owed at the real time
        runner = NoticeRunner(
            run.store, run.app.bot, run.settings, runtime=Runtime(now=clock, rand=lambda: 0.0)
        )
        await runner.run_once()  # the rate limiter waits out the 429; the 502 is retried later
        owed, _ = await notices(run)
        assert owed[APPROVER_A].status is NoticeStatus.SENT
        assert owed[APPROVER_B].status is NoticeStatus.PENDING and owed[APPROVER_B].attempts == 1
        clock.advance(minutes=1)
        await runner.run_once()
        owed, _ = await notices(run)
        assert owed[APPROVER_B].status is NoticeStatus.SENT
        for user in (ali, sana):
            cards = [m for m in user.messages() if "approval needed" in (m.text or "")]
            assert len(cards) == 1


async def test_a_card_whose_retries_run_out_is_reported_to_the_admins(
    botapi, db_url, store
):  # store: the usual cast registered
    async with running_bot(botapi, db_url, manzoori_retry_max_attempts=2) as run:
        botapi.user(APPROVER_A, "Ali", started=True)
        botapi.user(APPROVER_B, "Sana", started=True)
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        async with run.store.begin() as tx:
            await tx.met(APPROVER_B, "Sana", T0, started=True)
        await submitted(botapi, run)
        botapi.fail_next("sendMessage", times=10, status=502, chat_id=APPROVER_B)
        clock = Clock(utcnow())
        runner = NoticeRunner(
            run.store, run.app.bot, run.settings, runtime=Runtime(now=clock, rand=lambda: 0.0)
        )
        await runner.run_once()
        clock.advance(minutes=5)
        await runner.run_once()  # the second and last attempt
        owed, _ = await notices(run)
        assert owed[APPROVER_B].status is NoticeStatus.FAILED
        assert owed[APPROVER_B].attempts == 2
        while await runner.run_once():  # the alert, then each admin's copy
            pass
        assert await said(admin) == (
            f"⚠️ Sana (Telegram id {APPROVER_B}) could not be sent the approval card for "
            f"PO-{YEAR}-0001: Telegram kept failing and the retries ran out. The other approvers "
            "have their cards; check the bot's connection to Telegram."
        )


async def test_a_notice_that_breaks_is_backed_off_and_the_batch_goes_on(
    botapi, db_url, store
):  # store: the usual cast registered
    async with running_bot(botapi, db_url) as run:
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        botapi.user(APPROVER_B, "Sana", started=True)
        await submitted(botapi, run)
        owed, job = await notices(run)
        card = owed[APPROVER_A]
        earlier = card.next_attempt_at - timedelta(minutes=1)
        broken = replace(  # news of a state that does not exist: its delivery breaks
            card, key="broken:1", kind=NoticeKind.STATUS, event="MYSTERY", next_attempt_at=earlier
        )
        async with run.store.begin() as tx:
            await tx.insert_notice(broken)  # first in the batch: due the earliest
        clock = Clock(utcnow())
        runner = NoticeRunner(
            run.store, run.app.bot, run.settings, runtime=Runtime(now=clock, rand=lambda: 0.0)
        )
        assert await runner.run_once() == 3
        assert "approval needed" in (await ali.next_message()).text
        async with run.store.begin() as tx:
            [after] = [n for n in await tx.notices_for(job.id) if n.key == "broken:1"]
        assert after.status is NoticeStatus.PENDING and after.attempts == 1
        assert "'MYSTERY' is not a valid State" in after.last_error
        assert after.next_attempt_at > clock()
