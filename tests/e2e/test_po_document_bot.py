"""The PO a supplier can act on, through the real bot: a sheet with ship_to and needed_by on
terms with GST, payment terms and lead times becomes one PO per branch, and each approved PO
reaches the supplier as an e-mail whose PDF (read back with pypdf) says who buys, where and by
when to deliver, on what terms, every line and the totals with GST, who approved it, and the
key it was sent under."""

from __future__ import annotations

import io
import re
from datetime import date, timedelta
from email.message import EmailMessage
from pathlib import Path
from zoneinfo import ZoneInfo

from pypdf import PdfReader

from bot.clock import utcnow
from bot.dev.smtp import SmtpSink
from bot.files.sheets import read_csv_text
from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.notices import NoticeRunner
from core.company.imports import import_company
from core.drafting.money import format_pkr
from core.jobs.effects import send_po_key
from core.jobs.states import State
from core.purchasing import new_terms
from tests.helpers.bot import YEAR, answer, deliveries_done, running_bot, said
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0

COMPANY = (Path(__file__).parents[2] / "samples" / "company.toml").read_text()
PKT = ZoneInfo("Asia/Karachi")
TERMS = (
    "supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,max_qty,"
    "payment_terms,lead_days,gst_percent\n"
    "SUP-LHR-01,Hall Road Traders,orders@hallroad.pk,CBL-USBC-1M,USB-C cable 1 m,450,1,,"
    "30 days credit,3,18\n"
    "SUP-LHR-01,Hall Road Traders,orders@hallroad.pk,CHG-65W,65 W GaN charger,6500,1,,,5,18\n"
)


def sheet(needed: date) -> bytes:
    """Two rows for the requester's own branch (Hall Road), one for Liberty Market."""
    return (
        "sku,quantity,ship_to,needed_by\n"
        f"CBL-USBC-1M,20,,{needed:%d/%m/%Y}\n"
        "CHG-65W,3,,\n"
        "CHG-65W,2,liberty,\n"
    ).encode()


def pdf_text(message: EmailMessage) -> str:
    (pdf,) = (p for p in message.iter_attachments() if p.get_content_type() == "application/pdf")
    data = pdf.get_content()
    assert isinstance(data, bytes) and data.startswith(b"%PDF")
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


def flat(text: str) -> str:
    """Text extraction breaks lines where the PDF wraps: compare words, not layout."""
    return re.sub(r"\s+", " ", text)


async def test_a_sheet_with_branches_dates_and_gst_reaches_the_supplier_as_a_full_po(
    botapi, db_url, store, smtp_sink: SmtpSink
):
    today = utcnow().astimezone(PKT).date()
    needed = today + timedelta(days=10)
    async with running_bot(botapi, db_url) as run:
        company = await import_company(run.store, COMPANY, T0, "test")
        assert company.created
        terms = await new_terms.import_terms(run.store, read_csv_text(TERMS.encode()), T0, "test")
        assert terms.created
        async with run.store.begin() as tx:
            await tx.set_branch(REQUESTER, "hallroad", "test", T0)
            await tx.met(APPROVER_A, "Ali", T0, started=True)
            await tx.met(APPROVER_B, "Sana", T0, started=True)
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        botapi.user(APPROVER_B, "Sana", started=True)
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_document(sheet(needed), "restock.csv", "text/csv")
        assert (await said(bilal)).startswith("restock.csv accepted; 2 purchase orders")
        assert await NoticeRunner(run.store, run.app.bot, run.settings).run_once() == 4
        cards = [await ali.next_message() for _ in range(2)]
        assert any("Deliver to" in card.text and "hallroad" in card.text for card in cards)
        for card in cards:
            assert (await answer(botapi, ali.tap(card, APPROVE_TEXT))).startswith("Approved")
        await deliveries_done(run)
        async with run.store.reading() as tx:
            jobs = [await tx.job_by_po(f"PO-{YEAR}-000{n}") for n in (1, 2)]
        sender = SmtpSender(
            SmtpServer(host=smtp_sink.host, port=smtp_sink.port, tls="none", timeout=5.0),
            mail_from="orders@lahore-electronics.example",
        )
        runner = OutboxRunner(run.store, sender, run.settings.rules(), lease=timedelta(seconds=60))
        await runner.run_until_idle(poll=0.05, max_seconds=60)
        async with run.store.reading() as tx:
            sent = {}
            for job in jobs:
                assert job is not None
                now = await tx.job_by_po(job.po_number)
                assert now is not None and now.state is State.SENT
                sent[now.po_number] = (now, await tx.draft(now.id, now.draft_version or 0))

    assert len(smtp_sink.messages) == 2
    by_po = {m["Subject"].split()[2]: m for m in smtp_sink.messages}
    for po, (job, draft) in sent.items():
        message = by_po[po]
        assert message["Subject"] == f"Purchase order {po} from Lahore Electronics (Pvt) Ltd"
        key = send_po_key(po, job.draft_version or 0, job.draft_hash or "")
        assert message["Idempotency-Key"] == key
        text = flat(pdf_text(message))
        for said_in_pdf in (
            "Lahore Electronics (Pvt) Ltd",
            "12 Main Boulevard, Gulberg III, Lahore",
            "1234567-8",
            "32-77-8761-234-56",
            "Hall Road Traders",
            "SUP-LHR-01",
            po,
            "30 days credit",
            format_pkr(draft.subtotal_paisa),
            format_pkr(draft.gst_paisa),
            format_pkr(draft.total_paisa),
            "GST 18%",
            "Ali",
            "PKT",
            key,
        ):
            assert said_in_pdf in text, (po, said_in_pdf)
        for line in draft.lines:
            for value in (line.sku, f"{line.quantity:,}", format_pkr(line.unit_price_paisa)):
                assert value in text, (po, value)
            assert format_pkr(line.total_paisa) in text
        body = message.get_body(preferencelist=("plain",))
        assert body is not None and "Payment terms: 30 days credit" in body.get_content()

    (hall, hall_draft), (liberty, liberty_draft) = sorted(
        sent.values(), key=lambda pair: pair[1].branch_id != "hallroad"
    )
    assert (hall_draft.branch_id, liberty_draft.branch_id) == ("hallroad", "liberty")
    assert [line.sku for line in hall_draft.lines] == ["CBL-USBC-1M", "CHG-65W"]
    assert hall_draft.delivery_date == needed  # the latest needed_by of its lines
    assert liberty_draft.delivery_date == today + timedelta(days=5)  # the longest lead time
    hall_pdf = flat(pdf_text(by_po[hall.po_number]))
    assert "Hall Road" in hall_pdf and "Shop 12, Hall Road, Lahore" in hall_pdf
    assert f"{needed.day} {needed:%b %Y}" in hall_pdf
    liberty_pdf = flat(pdf_text(by_po[liberty.po_number]))
    assert "Liberty Market" in liberty_pdf
    assert "Shop 4, Liberty Market, Gulberg, Lahore" in liberty_pdf
    # the drafts cite the company version they were made under
    assert hall_draft.company_version == liberty_draft.company_version == company.version
