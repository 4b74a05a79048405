"""An admin calls off a PO that was sent, from their phone: /cancel PO REASON, a confirm card
with signed Confirm and Keep it, the cancellation e-mail at the SMTP sink, and the requester
and the approver told; end to end over HTTP against the Bot API emulator."""

from __future__ import annotations

from bot.telegram.calling_off import CONFIRM_TEXT, KEEP_TEXT, ONLY_ADMINS
from bot.telegram.decisions import NOT_VALID
from bot.telegram.notices import NoticeRunner
from bot.words.i18n import Language
from core.jobs.effects import EffectKind, EffectStatus, message_id
from core.jobs.states import State
from tests.helpers.bot import (
    ADMIN,
    PO,
    answer,
    approved_and_sent,
    cards_out,
    deliveries_done,
    job_and_decisions,
    running_bot,
    said,
)
from tests.helpers.factories import APPROVER_A, REQUESTER, T0
from tests.helpers.urdu import english_heard

APPROVE_TEXT = "✅ Approve"
REASON = "ordered twice by mistake"


def mail_of(smtp_sink):
    return dict(smtp_host=smtp_sink.host, smtp_port=smtp_sink.port, smtp_tls="none")


async def sent_po(botapi, run):
    """The sheet's PO approved by Ali and e-mailed: SENT, with the requester's news delivered."""
    ali, _sana = await approved_and_sent(botapi, run)
    await everything_told(run)
    job, _, _ = await job_and_decisions(run)
    assert job.state is State.SENT
    return ali


async def everything_told(run):
    notices = NoticeRunner(run.store, run.app.bot, run.settings)
    while await notices.run_once():
        pass


async def test_confirm_mails_the_supplier_a_cancellation_and_tells_the_people(
    botapi, db_url, store, smtp_sink
):
    async with running_bot(botapi, db_url, **mail_of(smtp_sink)) as run:
        ali = await sent_po(botapi, run)
        requester = botapi.user(REQUESTER, "Bilal")
        heard = {REQUESTER: len(requester.messages()), APPROVER_A: len(ali.messages())}
        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text(f"/cancel {PO.lower()} {REASON}")
        card = await admin.next_message()
        lines = card.text.splitlines()
        assert lines[0].startswith(f"Cancel {PO} (Hall Road Traders, Rs ")
        assert lines[0].endswith(")? The supplier will be e-mailed a cancellation.")
        assert lines[1:] == ["Reason:", REASON]
        assert card.button_texts == [CONFIRM_TEXT, KEEP_TEXT]
        job, _, [placed] = await job_and_decisions(run)
        assert job.state is State.SENT  # nothing changes until the admin confirms

        told = await answer(botapi, admin.tap(card, CONFIRM_TEXT))
        assert told == "Cancelled. The supplier is being e-mailed the cancellation."
        await botapi.wait_for(lambda: botapi.message(ADMIN, card.message_id).edited)
        edited = botapi.message(ADMIN, card.message_id)
        assert edited.text.startswith("🚫 Cancelled by Ayesha at ") and edited.buttons == []
        assert REASON in edited.text
        job, _, [_, cancel] = await job_and_decisions(run)
        assert job.state is State.CANCELLING and cancel.kind == EffectKind.CANCEL_PO

        # A second tap of Confirm (the same card, before its edit reached the phone).
        again = admin.tap_data(card, card.button(CONFIRM_TEXT).callback_data)
        assert await answer(botapi, again) == f"Already done: {PO} is CANCELLING; nothing changed."

        await deliveries_done(run)
        assert await run.outbox.run_once() == 1
        assert await run.outbox.run_once() == 0
        job, _, [_, cancel] = await job_and_decisions(run)
        assert job.state is State.CANCELLED and cancel.status is EffectStatus.SUCCEEDED
        first, mail = smtp_sink.messages
        domain = run.settings.mail_domain
        assert mail["Idempotency-Key"] == cancel.key
        assert mail["Message-ID"] == message_id(cancel.key, domain)
        assert mail["In-Reply-To"] == first["Message-ID"] == message_id(placed.key, domain)
        assert f"Reason: {REASON}" in mail.get_content()

        await everything_told(run)
        made = (
            f"🚫 {PO} was cancelled by Ayesha after it had been sent: {REASON}. The supplier is "
            "being e-mailed the cancellation."
        )
        done = f"🚫 {PO} is cancelled: the supplier has the cancellation."
        assert [m.text for m in requester.messages()[heard[REQUESTER] :]] == [made, done]
        assert [m.text for m in ali.messages()[heard[APPROVER_A] :]] == [made, done]  # approver
        requester.skip_messages()

        admin.send_text(f"/cancel {PO} {REASON}")  # the same request once more
        assert await said(admin) == f"Already done: {PO} is CANCELLED; nothing changed."
        requester.send_text("/status")
        assert f"{PO}" in (status := await said(requester)) and "cancelled" in status
        assert len(smtp_sink.messages) == 2


async def test_keep_it_changes_nothing(botapi, db_url, store, smtp_sink):
    async with running_bot(botapi, db_url, **mail_of(smtp_sink)) as run:
        await sent_po(botapi, run)
        requester = botapi.user(REQUESTER, "Bilal")
        heard = len(requester.messages())
        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text(f"/cancel {PO} {REASON}")
        card = await admin.next_message()
        before = await job_and_decisions(run)
        assert await answer(botapi, admin.tap(card, KEEP_TEXT)) == "Kept: nothing was changed."
        await botapi.wait_for(lambda: botapi.message(ADMIN, card.message_id).edited)
        edited = botapi.message(ADMIN, card.message_id)
        assert edited.text.startswith("↩️ Kept by Ayesha at ") and edited.buttons == []
        await deliveries_done(run)
        assert await job_and_decisions(run) == before
        assert await run.outbox.run_once() == 0
        await everything_told(run)
        assert len(requester.messages()) == heard and len(smtp_sink.messages) == 1


async def test_who_may_cancel_and_what_is_refused(botapi, db_url, store, smtp_sink):
    async with running_bot(botapi, db_url, **mail_of(smtp_sink)) as run:
        ali = await sent_po(botapi, run)
        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text(f"/cancel {PO} {REASON}")
        card = await admin.next_message()
        before = await job_and_decisions(run)
        ali.send_text(f"/cancel {PO} {REASON}")  # an approver is no admin
        assert await said(ali) == ONLY_ADMINS
        # The admin's real Confirm button, in an approver's hands: refused where it would act.
        data = card.button(CONFIRM_TEXT).callback_data
        own = botapi.messages(APPROVER_A)[-1]
        assert await answer(botapi, ali.tap_data(own, data)) == ONLY_ADMINS
        body, tag = data.rsplit(".", 1)
        altered = f"{body}.{tag[:-1]}{'A' if tag[-1] != 'A' else 'B'}"
        assert await answer(botapi, admin.tap_data(card, altered)) == NOT_VALID
        admin.send_text(f"/cancel {PO}")  # no reason for a PO the supplier has
        assert await said(admin) == (
            f"{PO} was sent to the supplier: cancelling it needs a reason, which goes in the "
            "cancellation e-mail."
        )
        admin.send_text("/cancel")
        assert await said(admin) == "Usage: /cancel PO-2026-0001 REASON"
        admin.send_text("/cancel PO-1999-0001 because")
        assert await said(admin) == "No purchase order PO-1999-0001."
        ali.send_text("/help")
        assert "/cancel" not in await said(ali)
        admin.send_text("/help")
        assert "/cancel PO-… REASON" in await said(admin)
        await deliveries_done(run)
        assert await job_and_decisions(run) == before
        assert len(smtp_sink.messages) == 1


async def test_a_po_not_sent_is_withdrawn_with_nothing_sent(botapi, db_url, store, smtp_sink):
    async with running_bot(botapi, db_url, **mail_of(smtp_sink)) as run:
        await cards_out(botapi, run)
        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text(f"/cancel {PO}")  # waiting for approval: no reason needed
        card = await admin.next_message()
        assert card.text.endswith("? It was not sent: nothing goes to the supplier.")
        told = await answer(botapi, admin.tap(card, CONFIRM_TEXT))
        assert told == "Cancelled. Nothing was sent to the supplier."
        await deliveries_done(run)
        job, _, effects = await job_and_decisions(run)
        assert job.state is State.CANCELLED and effects == []
        assert await run.outbox.run_once() == 0 and smtp_sink.messages == []


async def test_an_urdu_admin_reads_the_card_and_its_answers_in_urdu(
    botapi, db_url, store, smtp_sink
):
    async with running_bot(botapi, db_url, **mail_of(smtp_sink)) as run:
        await sent_po(botapi, run)
        async with run.store.begin() as tx:
            await tx.met(ADMIN, "Ayesha", T0, started=True)
            await tx.set_language(ADMIN, Language.UR.value, T0)
        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text(f"/cancel {PO} {REASON}")
        card = await admin.next_message()
        assert PO in card.text and REASON in card.text
        query = admin.tap(card, "تصدیق کریں")
        await answer(botapi, query)
        await botapi.wait_for(lambda: botapi.message(ADMIN, card.message_id).edited)
        # The reason is the admin's own words, quoted: the rest is Urdu.
        heard = [
            (text, runs)
            for text, runs in english_heard(botapi, ADMIN, [query])
            if any(run not in REASON for run in runs)
        ]
        assert heard == []


async def test_a_cancellation_refused_for_good_is_settled_from_the_queue(
    botapi, db_url, store, smtp_sink
):
    async with running_bot(botapi, db_url, **mail_of(smtp_sink)) as run:
        await sent_po(botapi, run)
        requester = botapi.user(REQUESTER, "Bilal")
        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text(f"/cancel {PO} {REASON}")
        card = await admin.next_message()
        await answer(botapi, admin.tap(card, CONFIRM_TEXT))
        await deliveries_done(run)
        smtp_sink.script("RCPT", "550 5.1.1 No such user")
        assert await run.outbox.run_once() == 1
        job, _, [_, cancel] = await job_and_decisions(run)
        assert job.state is State.CANCEL_FAILED
        await everything_told(run)
        alerts = [m.text for m in admin.messages() if "needs you" in m.text]
        assert alerts == [
            f"⚠️ {PO} needs you: its cancellation e-mail could not be sent: tell the supplier "
            "another way, by phone, then mark it settled. /queue shows it with what you can do."
        ]
        admin.skip_messages()
        admin.send_text("/queue")
        assert (await admin.next_message()).text.startswith("Manual-review queue: 1 ")
        item = await admin.next_message()
        assert item.text.startswith(f"⚠️ {PO} · CANCEL_FAILED")
        assert f"Key: {cancel.key}" in item.text and "phone the supplier" in item.text
        assert item.button_texts == ["☎️ Settled"]
        heard = len(requester.messages())
        assert await answer(botapi, admin.tap(item, "☎️ Settled")) == (
            "Settled: the PO is cancelled."
        )
        await deliveries_done(run)
        job, _, _ = await job_and_decisions(run)
        assert job.state is State.CANCELLED
        await everything_told(run)
        assert [m.text for m in requester.messages()[heard:]] == [
            f"🚫 {PO} is cancelled: the supplier has the cancellation."
        ]
        assert len(smtp_sink.messages) == 1  # the PO's own; the cancellation never went
