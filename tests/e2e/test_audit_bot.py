"""An admin's /export through the real bot: a PO approved under an imported policy and
e-mailed, then its whole audit trail arrives as a CSV file; everyone else is refused."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from bot.telegram.cards import APPROVE_TEXT
from core.approval.approval_policy import import_policy
from core.jobs.states import State
from core.records.audit import COLUMNS
from tests.helpers.bot import (
    ADMIN,
    PO,
    all_handled,
    answer,
    cards_out,
    deliveries_done,
    job_and_decisions,
    running_bot,
    said,
)
from tests.helpers.factories import APPROVER_A, APPROVER_B, T0

POLICY = (
    '[groups]\napprovers = "Approvers"\n'
    '[[rules]]\nname = "anyone"\nstages = [{ group = "approvers" }]\n'
)


async def test_an_admin_exports_a_sent_pos_trail_as_csv(botapi, db_url, store, smtp_sink):
    async with running_bot(botapi, db_url) as run:
        async with run.store.begin() as tx:  # reachable first: the import owes no alert
            for user_id, name in ((APPROVER_A, "Ali"), (APPROVER_B, "Sana")):
                await tx.met(user_id, name, T0, started=True)
        version = (await import_policy(run.store, POLICY, T0, "cli:test")).version
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        assert await answer(botapi, ali.tap(ali_card, APPROVE_TEXT)) == (
            "Approved — e-mailing the supplier."
        )
        await deliveries_done(run)
        sender = SmtpSender(
            SmtpServer(host=smtp_sink.host, port=smtp_sink.port, tls="none", timeout=5.0),
            mail_from="orders@shop.example",
        )
        outbox = OutboxRunner(run.store, sender, run.settings.rules(), lease=timedelta(seconds=60))
        assert await outbox.run_once() == 1
        job, _decisions, _effects = await job_and_decisions(run)
        assert job.state is State.SENT

        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text(f"/export {PO.lower()}")
        [sent] = await botapi.wait_for(lambda: botapi.documents(ADMIN) or None)
        document = sent.document
        assert document.file_name == f"{PO}-audit.csv"
        text = document.data.decode()
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        assert list(rows[0]) == list(COLUMNS) and "\r\n" in text
        assert sent.caption == f"{PO}: {len(rows)} audit events"
        assert [r["event"] for r in rows] == [
            "receive", "validate", "research", "draft", "request_approval", "approve",
            "start_send", "mark_sent",
        ]  # fmt: skip
        assert {r["po_number"] for r in rows} == {PO}
        approve, start, done = rows[5], rows[6], rows[7]
        assert (approve["actor"], approve["stage"], approve["policy_version"]) == (
            f"user:{APPROVER_A}", "1", version,
        )  # fmt: skip
        assert (approve["rule"], approve["verdict"], approve["for"]) == ("anyone", "approve", "")
        assert (approve["from_state"], approve["to_state"]) == ("AWAITING_APPROVAL", "APPROVED")
        assert (start["result"], done["result"]) == ("attempt 1", "sent")
        for row in (approve, start, done):  # the send names the version and hash approved
            assert (row["draft_version"], row["draft_hash"]) == ("1", job.draft_hash)
        assert done["actor"].startswith("runner:") and done["to_state"] == "SENT"
        assert "hallroad" not in text and "restock.csv" not in text  # no address, no file name


async def test_export_is_for_admins_and_says_what_is_wrong(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        ali, _ali_card, _sana, _sana_card = await cards_out(botapi, run)
        ali.send_text(f"/export {PO}")
        assert await said(ali) == "Only admins can read the audit trail."
        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text("/export")
        assert await said(admin) == "Usage: /export PO-2026-0001"
        admin.send_text("/export PO-1999-0001")
        assert await said(admin) == "No purchase order PO-1999-0001."
        admin.send_text("/help")
        assert "/export PO-…: a PO's audit trail as a CSV file." in await said(admin)
        await all_handled(botapi, run)
        assert botapi.documents(ADMIN) == [] and botapi.documents(APPROVER_A) == []
