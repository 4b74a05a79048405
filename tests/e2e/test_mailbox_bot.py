"""The buyer's mailbox through the real bot, the SMTP sink and a real Dovecot: a late-250 send
whose copy is in Sent is settled as sent with one copy at the relay, its /queue message edited;
a dropped send with no copy waits out the grace, is told to the admins once and is resent once
by Send again; replies threaded by In-Reply-To, by subject and from a stranger reach the PO's
people, nothing is marked seen, and mail of no PO is left alone; an inbox of 500 messages is
read once across a restart; IMAP down changes nothing but /healthz."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from email.message import EmailMessage

import httpx
import pytest

from bot import logs
from bot.words import reports
from core.jobs.effects import EffectStatus, message_id
from core.jobs.states import State
from core.outbox import reconcile
from tests.helpers import review as review_queue
from tests.helpers.bot import ADMIN, PO, approved_and_sent, delivered, job_and_decisions, mail_bot
from tests.helpers.dovecot import PASSWORD, USER, Dovecot
from tests.helpers.factories import APPROVER_A, REQUESTER
from tests.helpers.net import free_port

pytestmark = pytest.mark.slow  # each test starts a Dovecot and the bot's web front door
SUPPLIER = "orders@hallroad.pk"  # the address of SUP-LHR-01 in tests/data/terms/good.csv


def mailbox_bot(botapi, db_url, sink, server: Dovecot, **more):
    """The bot with its front door, mail to the sink, and the Dovecot as the buyer's mailbox."""
    imap = {
        "imap_host": server.host,
        "imap_port": server.port,
        "imap_tls": "none",
        "imap_username": USER,
        "imap_password": PASSWORD,
    }
    return mail_bot(botapi, db_url, sink, free_port(), **imap, **more)


def reply(
    uid: int, *, sender: str = SUPPLIER, subject: str = "Re: your order", answers: str = "",
    text: str = "Rate changed: 10 pieces only. Dispatch Monday.",
) -> bytes:  # fmt: skip
    mail = EmailMessage()
    mail["From"], mail["To"] = f"Hall Road <{sender}>", "orders@shop.example"
    mail["Subject"], mail["Message-ID"] = subject, f"<reply-{uid}@hallroad.pk>"
    mail["Date"] = "Sat, 05 Dec 2026 10:05:00 +0500"
    if answers:
        mail["In-Reply-To"] = answers
    mail.set_content(f"{text}\n\nOn Fri, 4 Dec 2026 at 10:15, Manzoori wrote:\n> the PO\n")
    return mail.as_bytes()


async def queue_item(botapi):
    """The admin's /queue: its one PO's message."""
    admin = botapi.user(ADMIN, "Ayesha", started=True)
    before = len(admin.messages())
    admin.send_text("/queue")
    await botapi.wait_for(lambda: len(admin.messages()) >= before + 2)
    header, item = admin.messages()[before : before + 2]
    assert header.text.startswith("Manual-review queue: 1 purchase order")
    return admin, item


async def test_a_late_250_with_its_copy_in_sent_is_settled_with_one_copy_at_the_relay(
    botapi, db_url, store, smtp_sink, dovecot, caplog
):
    caplog.set_level(logging.INFO, logger="bot.mailbox.runner")
    lines = io.StringIO()  # the runner's lines as MANZOORI_LOG_FORMAT=json writes them
    written = logging.StreamHandler(lines)
    written.setFormatter(logs.json_formatter())
    written.addFilter(logs.Fields())
    logging.getLogger("bot.mailbox.runner").addHandler(written)
    botapi.user(ADMIN, "Ayesha", started=True)
    smtp_sink.script("DATA", "250 2.0.0 queued", delay=3)  # taken, but answered too late
    async with mailbox_bot(botapi, db_url, smtp_sink, dovecot, smtp_timeout_seconds=1) as run:
        await approved_and_sent(botapi, run)
        assert (await job_and_decisions(run))[0].state is State.UNKNOWN_OUTCOME
        admin, item = await queue_item(botapi)
        [copy] = smtp_sink.messages
        dovecot.append("Sent", copy.as_bytes())  # the relay files what it took
        await run.mailbox.run_once()
        job, _, [effect] = await job_and_decisions(run)
        assert job.state is State.SENT and effect.status is EffectStatus.SUCCEEDED
        assert effect.result["reconciled_by"] == reconcile.ACTOR
        await delivered(run)
        edited = botapi.message(ADMIN, item.message_id)
        assert edited.text.splitlines()[0].endswith("the mail relay's copy is in Sent")
        assert edited.buttons == []
        assert any("Sent folder holds a copy" in m.text for m in admin.messages())
        for _ in range(3):
            await run.outbox.run_once()
            await run.mailbox.run_once()
        assert len(smtp_sink.messages) == 1 and dovecot.count("Sent") == 1  # never again
    logging.getLogger("bot.mailbox.runner").removeHandler(written)
    [settled] = [json.loads(line) for line in lines.getvalue().splitlines() if "settled" in line]
    assert (settled["po_number"], settled["job_id"]) == (PO, job.id)


async def test_a_dropped_send_with_no_copy_waits_for_a_person_and_is_resent_once(
    botapi, db_url, store, smtp_sink, dovecot
):
    smtp_sink.script("DATA", "554 5.0.0 lost", delay=2)  # the data swallowed, too late
    quick = {"smtp_timeout_seconds": 1, "manzoori_reconcile_grace_seconds": 0}
    admin = botapi.user(ADMIN, "Ayesha", started=True)
    async with mailbox_bot(botapi, db_url, smtp_sink, dovecot, **quick) as run:
        await approved_and_sent(botapi, run)
        assert smtp_sink.messages == []
        for _ in range(2):  # looked up twice: recorded, and told, once
            await run.mailbox.run_once()
        await delivered(run)
        missing = [m for m in admin.messages() if "still not in the mail relay" in m.text]
        assert len(missing) == 1
        _, item = await queue_item(botapi)
        assert "📭 No copy in the mail relay's Sent folder" in item.text
        assert (await job_and_decisions(run))[0].state is State.UNKNOWN_OUTCOME
        assert await run.outbox.run_once() == 0  # nothing is sent without a person

        tap = admin.tap(item, "🔁 Send again")
        await botapi.wait_for(lambda: botapi.callback_answer(tap))
        assert await run.outbox.run_once() == 1
        job, _, [effect] = await job_and_decisions(run)
        assert job.state is State.SENT and len(smtp_sink.messages) == 1
        assert smtp_sink.messages[0]["Idempotency-Key"] == effect.key  # the same key


async def test_replies_reach_the_pos_people_and_mail_of_no_po_is_left_alone(
    botapi, db_url, store, smtp_sink, dovecot
):
    async with mailbox_bot(botapi, db_url, smtp_sink, dovecot) as run:
        bilal = botapi.user(REQUESTER, "Bilal", started=True)
        ali, _ = await approved_and_sent(botapi, run)
        ours = smtp_sink.messages[0]["Message-ID"]
        dovecot.append("INBOX", reply(1, answers=ours))
        dovecot.append(
            "INBOX", reply(2, subject=f"RE: Purchase order {PO}", text="Dispatch Monday.")
        )
        dovecot.append("INBOX", reply(3, sender="cousin@gmail.com", answers=ours, text="Call me"))
        dovecot.append("INBOX", reply(4, subject="Eid Mubarak", text="Greetings"))
        dovecot.append("INBOX", reply(5, sender="cousin@gmail.com", subject=f"Re: {PO}"))
        seen_before = len(bilal.messages())
        await run.mailbox.run_once()
        await delivered(run)
        news = [m.text for m in bilal.messages()[seen_before:] if m.text.startswith("📧")]
        assert len(news) == 3, news
        first, second, stranger = news
        assert first.splitlines()[0].startswith(f"📧 {PO}: an e-mail reply from Hall Road")
        assert "▏ Rate changed: 10 pieces only. Dispatch Monday." in first.splitlines()
        assert "the PO" not in first  # the quoted original cut
        assert "▏ Dispatch Monday." in second.splitlines()
        assert "From an address not on file" in stranger and "Call me" in stranger
        assert sum(m.text.startswith("📧") for m in ali.messages()) == 3  # the approver too
        assert dovecot.seen("INBOX") == 0  # the team's mail client sees them unread
        async with run.store.reading() as tx:
            job = await tx.job_by_po(PO)
            shown = await reports.job_detail(tx, job, run.settings.mail_domain)
        replies = shown["supplier"]["replies"]
        assert [(r["from"], r["matched_by"], r["on_file"]) for r in replies] == [
            (SUPPLIER, "thread", True),
            (SUPPLIER, "subject", True),
            ("cousin@gmail.com", "thread", False),
        ]
        assert replies[0]["at"] == "2026-12-05T05:05:00+00:00"
        await run.mailbox.run_once()
        await delivered(run)
        assert sum(m.text.startswith("📧") for m in bilal.messages()) == 3  # once


async def test_an_inbox_of_500_is_read_once_across_a_restart(
    botapi, db_url, store, smtp_sink, dovecot
):
    async with mailbox_bot(botapi, db_url, smtp_sink, dovecot) as run:
        bilal = botapi.user(REQUESTER, "Bilal", started=True)
        await approved_and_sent(botapi, run)
        ours = smtp_sink.messages[0]["Message-ID"]
        with dovecot.client() as imap:
            for n in range(1, 501):
                raw = reply(n, answers=ours) if n % 50 == 0 else reply(n, subject=f"news {n}")
                assert imap.append("INBOX", None, None, raw)[0] == "OK"
        await run.mailbox.run_once()  # one pass reads 200 of them
        async with run.store.reading() as tx:
            cursor = await tx.mailbox_cursor("INBOX")
        assert cursor is not None and cursor.last_uid == 200
    async with mailbox_bot(botapi, db_url, smtp_sink, dovecot) as run:  # a restart
        for _ in range(3):
            await run.mailbox.run_once()
        await delivered(run)
        async with run.store.reading() as tx:
            job = await tx.job_by_po(PO)
            filed = await tx.supplier_mails(job.id)
            assert (await tx.mailbox_cursor("INBOX")).last_uid == 500
        assert sorted(f.mail.uid for f in filed) == list(range(50, 501, 50))
        assert sum(m.text.startswith("📧") for m in bilal.messages()) == 10
        assert sum(m.text.startswith("📧") for m in botapi.user(APPROVER_A, "Ali").messages()) == 10


async def test_imap_down_changes_nothing_but_healthz(botapi, db_url, store, smtp_sink, dovecot):
    async with mailbox_bot(botapi, db_url, smtp_sink, dovecot) as run:
        url = f"http://127.0.0.1:{run.settings.web_port}/healthz"
        async with httpx.AsyncClient(timeout=10) as client:
            await run.mailbox.run_once()
            assert (await client.get(url)).json()["status"] == "ok"
            dovecot.stop()
            await run.mailbox.run_once()
            down = await client.get(url)
            assert down.status_code == 200 and down.json()["status"] == "degraded"
            assert down.json()["mailbox"].startswith("the mailbox does not answer")
            await approved_and_sent(botapi, run)  # the bot and the outbox go on
            assert len(smtp_sink.messages) == 1
            metrics = (await client.get(f"http://127.0.0.1:{run.settings.web_port}/metrics")).text
            assert 'manzoori_mailbox_passes_total{outcome="failed"} 1.0' in metrics
            dovecot.start()
            await run.mailbox.run_once()
            back = (await client.get(url)).json()
            assert back["status"] == "ok" and "mailbox" not in back


async def test_manzoori_run_looks_at_the_mailbox_on_its_own(
    botapi, db_url, store, smtp_sink, dovecot
):
    """The runners' loops as under `manzoori run`: the mailbox's pass every interval."""
    [send] = (await review_queue.in_queue(store, State.UNKNOWN_OUTCOME))[1]
    quick = {"manzoori_mailbox_check_seconds": 0.2}
    async with mailbox_bot(botapi, db_url, smtp_sink, dovecot, loops=True, **quick) as run:
        copy = EmailMessage()
        copy["Message-ID"] = message_id(send.key, run.settings.mail_domain)
        copy["Subject"] = "Purchase order"
        copy.set_content("the PO")
        dovecot.append("Sent", copy.as_bytes())
        deadline = asyncio.get_running_loop().time() + 15
        while (job := await review_queue.snapshot(run.store))[0].state is not State.SENT:
            assert asyncio.get_running_loop().time() < deadline, job[0].state
            await asyncio.sleep(0.05)
    assert smtp_sink.messages == []  # settled, never sent again
