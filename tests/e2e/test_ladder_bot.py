"""The reminder ladder end to end, on second-scale settings: a reminder repeats the card with
buttons that decide, and nothing follows a decision; the digest lists what waits, and its
button brings the card back, which decides too."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import update

from bot.bootstrap import LadderSweep
from bot.clock import utcnow
from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.notices import NoticeRunner
from bot.telegram.pending import CARD_AGAIN
from bot.words.i18n import FSI, isolated
from core.jobs.notices import NoticeKind
from core.jobs.states import State
from store import schema
from tests.helpers.bot import (
    ADMIN,
    PO,
    answer,
    cards_out,
    deliveries_done,
    job_and_decisions,
    running_bot,
)
from tests.helpers.factories import APPROVER_A, APPROVER_B, T0
from tests.helpers.urdu import english_heard

# waits on real time: seconds of sweeps, pacing and timeouts; answers are timed
pytestmark = [pytest.mark.slow, pytest.mark.timed]

SECONDS = {
    "manzoori_working_hours": "Mon-Sun 00:00-24:00",
    "manzoori_remind_after": "1s",
    "manzoori_escalate_after": "3s",
    "manzoori_before_expiry": "off",
    "manzoori_digest_at": "off",
    "manzoori_ladder_check_seconds": 0.01,
}


async def nudges_owed(run) -> list[str]:
    async with run.store.reading() as tx:
        found = await tx.conn.execute(
            schema.notices.select().where(schema.notices.c.kind == NoticeKind.NUDGE.value)
        )
        return sorted(row.key for row in found)


async def test_a_reminder_repeats_the_card_and_decides_and_nothing_follows(botapi, db_url, store):
    async with running_bot(botapi, db_url, **SECONDS) as run:
        ali, _card, sana, _other = await cards_out(botapi, run)
        sweep, notices = (
            LadderSweep(run.settings, run.store),
            NoticeRunner(run.store, run.app.bot, run.settings),
        )
        await asyncio.sleep(1.1)
        await sweep.run_once()
        assert await notices.run_once() == 2
        reminder = await ali.next_message()
        assert reminder.text.startswith("⏰ Reminder: this request is still waiting")
        assert PO in reminder.text
        assert (await sana.next_message()).text.startswith("⏰ Reminder")
        query = ali.tap(reminder, APPROVE_TEXT)
        assert await answer(botapi, query) == "Approved — e-mailing the supplier."
        await deliveries_done(run)
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.APPROVED and [d.reviewer_id for d in decisions] == [APPROVER_A]
        await asyncio.sleep(3.1)  # the escalation would be due now, had nobody decided
        await sweep.run_once()
        assert [k.partition(":")[0] for k in await nudges_owed(run)] == ["remind", "remind"]


async def test_the_digest_lists_what_waits_and_brings_the_card_back(botapi, db_url, store):
    daily = {**SECONDS, "manzoori_remind_after": "3d", "manzoori_escalate_after": "off"}
    daily["manzoori_digest_at"] = "00:00"
    async with running_bot(botapi, db_url, **daily) as run:
        ali, _card, sana, _other = await cards_out(botapi, run)
        async with run.store.begin() as tx:  # the cards went out yesterday, before the digest
            t = schema.notices
            await tx.conn.execute(
                update(t)
                .where(t.c.kind == NoticeKind.CARD.value)
                .values(updated_at=utcnow() - timedelta(days=1))
            )
        await LadderSweep(run.settings, run.store).run_once()
        notices = NoticeRunner(run.store, run.app.bot, run.settings)
        assert await notices.run_once() == 2
        digest = await ali.next_message()
        assert digest.text.startswith("📋 Waiting for your decision today (1), oldest first:")
        assert PO in digest.text and "Rs" in digest.text and "expires" in digest.text
        await sana.next_message()
        query = ali.tap(digest, f"🔁 {PO}")
        assert await answer(botapi, query) == CARD_AGAIN
        await deliveries_done(run)
        await notices.run_once()
        card = await ali.next_message()
        assert card.text.startswith(f"🧾 {PO} — approval needed")
        query = ali.tap(card, APPROVE_TEXT)
        assert await answer(botapi, query) == "Approved — e-mailing the supplier."
        await deliveries_done(run)
        job, _decisions, _ = await job_and_decisions(run)
        assert job.state is State.APPROVED


async def test_an_approver_who_blocked_the_bot_is_escalated_to_the_admin_at_once(
    botapi, db_url, store
):
    slow = {**SECONDS, "manzoori_escalate_after": "1h"}
    async with running_bot(botapi, db_url, **slow) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        async with run.store.begin() as tx:
            await tx.met(ADMIN, "Ayesha", T0, started=True)
        ali, _card, sana, _other = await cards_out(botapi, run)
        sana.block()  # after her card: her reminder cannot go out
        sweep = LadderSweep(run.settings, run.store)
        notices = NoticeRunner(run.store, run.app.bot, run.settings)
        await asyncio.sleep(1.1)
        await sweep.run_once()
        assert await notices.run_once() == 2
        assert (await ali.next_message()).text.startswith("⏰ Reminder")
        async with run.store.reading() as tx:
            sana_known = await tx.telegram_user(APPROVER_B)
        assert sana_known is not None and not sana_known.reachable  # marked by the failure
        await asyncio.sleep(0.05)
        await sweep.run_once()  # she cannot be reached: the escalation does not wait an hour
        assert await notices.run_once() == 1  # fanned out to the admin
        assert await notices.run_once() == 1
        escalation = await admin.next_message()
        assert escalation.text.startswith("🚨 Waiting too long: these approvers have not decided")
        assert f"Sana (Telegram id {APPROVER_B}) cannot be reached" in escalation.text


async def test_a_reminder_and_an_escalation_come_in_their_readers_language(botapi, db_url, store):
    async with running_bot(botapi, db_url, **SECONDS) as run:
        admin = botapi.user(ADMIN, "Ayesha", started=True)
        async with run.store.begin() as tx:
            await tx.met(ADMIN, "Ayesha", T0, started=True)
            await tx.met(APPROVER_A, "Ali", T0, started=True)
            for person in (ADMIN, APPROVER_A):  # Sana keeps English
                await tx.set_language(person, "ur", T0)
        ali, _card, sana, _other = await cards_out(botapi, run)
        sweep = LadderSweep(run.settings, run.store)
        notices = NoticeRunner(run.store, run.app.bot, run.settings)
        await asyncio.sleep(1.1)
        await sweep.run_once()
        assert await notices.run_once() == 2
        reminder = await ali.next_message()
        assert reminder.text.startswith("⏰ یاد دہانی: یہ درخواست ابھی تک آپ کے فیصلے کی منتظر ہے۔")
        assert reminder.button_texts == ["✅ منظور", "❌ مسترد", "📄 تفصیل"]
        assert (await sana.next_message()).text.startswith("⏰ Reminder")
        await asyncio.sleep(2.1)  # neither decides: the escalation is due
        await sweep.run_once()
        assert await notices.run_once() == 2  # Ali's and Sana's, fanned out to the admin
        assert await notices.run_once() == 2  # the admin's copies: one message, in Urdu
        lines = (await admin.next_message()).text.splitlines()
        assert lines[0].startswith("🚨 بہت دیر سے منتظر: ان منظوری دہندگان نے فیصلہ نہیں کیا")
        assert len(lines) == 3 and all(line.endswith(" نے فیصلہ نہیں کیا") for line in lines[1:])
        assert all(line.startswith(f"• {FSI}{isolated(PO)} · ") for line in lines[1:])
        for person in (ADMIN, APPROVER_A):  # Urdu from the start: all they were told
            assert english_heard(botapi, person) == []
