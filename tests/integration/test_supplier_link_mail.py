"""The supplier's link through the outbox runner and a real SMTP server: the e-mail and its PDF
carry one URL, a link to the row's own signed token; a refused attempt and its retry carry the
same URL and byte for byte the same PDF; the PDF's QR code, rasterised by poppler's pdftoppm
and read by zbar's zbarimg (`make fonts` installs both), is that URL; without links (no
MANZOORI_PUBLIC_URL) the e-mail and the PDF carry none."""

from __future__ import annotations

import io
import subprocess
from datetime import timedelta
from email.message import EmailMessage
from pathlib import Path

import pytest
from pypdf import PdfReader

from bot.clock import Runtime
from bot.dev.smtp import SmtpSink
from bot.documents.pdf import ANSWER_PROMPT
from bot.outbox.links import SupplierLinks
from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import ApprovalPolicy, Rules, Verdict
from core.drafting.drafts import HASH_PREFIX
from core.jobs.effects import EffectKind, EffectStatus
from core.jobs.jobs import Effect, Job
from core.jobs.states import State
from core.suppliers.links import verify_link
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, FAST_RETRY, T0, Clock, make_draft, new_job

RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24)), retry=FAST_RETRY)
SECRET = bytes(range(32))
LINKS = SupplierLinks(SECRET, "https://manzoori.example.com", 30)
LINK_INTRO = "To accept, decline or propose changes, open:"


def _runner(
    store: SqlStore, sink: SmtpSink, clock: Clock, links: SupplierLinks | None
) -> OutboxRunner:
    """A runner and its sender, both given `links`, as bootstrap wires them."""
    server = SmtpServer(host=sink.host, port=sink.port, tls="none", timeout=2.0)  # type: ignore[arg-type]
    sender = SmtpSender(server, mail_from="orders@shop.example", links=links)
    runtime = Runtime(owner="runner-a", now=clock, rand=lambda: 0.5)
    return OutboxRunner(
        store, sender, RULES, lease=timedelta(seconds=60), runtime=runtime, links=links
    )


async def _approved(store: SqlStore) -> Job:
    """A PO approved at T0: its send-po row is staged then."""
    job = await opening.open_job(store, new_job(), make_draft("PO-2026-001"), T0, RULES)
    assert job.draft_hash is not None
    review = Review("PO-2026-001", APPROVER_A, Verdict.APPROVE, 1, job.draft_hash)
    result = await decisions.decide(store, review, T0, RULES)
    assert result.job.state is State.APPROVED
    return result.job


async def _sent(store: SqlStore, job: Job) -> tuple[Job, Effect]:
    async with store.reading() as tx:
        job = await tx.job(job.id)
        (effect,) = await tx.effects_for(job.id)
    assert job.state is State.SENT and effect.status is EffectStatus.SUCCEEDED
    return job, effect


def _body(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content()).replace("\r\n", "\n")  # as it came over the wire: CRLF


def _link_in(message: EmailMessage) -> str:
    """The URL on the line after the link's introduction in the e-mail's body."""
    lines = _body(message).splitlines()
    return lines[lines.index(LINK_INTRO) + 1]


def _pdf_of(message: EmailMessage) -> bytes:
    (pdf,) = (p for p in message.iter_attachments() if p.get_content_type() == "application/pdf")
    content = pdf.get_content()
    assert isinstance(content, bytes)
    return content


def _link_targets(pdf: bytes) -> list[str]:
    """Where the link annotations of the PDF's pages go."""
    return [
        str(annotation.get_object()["/A"]["/URI"])
        for page in PdfReader(io.BytesIO(pdf)).pages
        for annotation in page.get("/Annots", [])
    ]


def _first_page_text(pdf: bytes) -> str:
    return " ".join(PdfReader(io.BytesIO(pdf)).pages[0].extract_text().split())


async def test_a_refused_attempt_and_its_retry_carry_one_link_and_one_pdf(
    store: SqlStore, smtp_sink: SmtpSink
) -> None:
    clock = Clock()
    job = await _approved(store)
    smtp_sink.script("DATA", "451 4.3.0 Try again later")
    runner = _runner(store, smtp_sink, clock, LINKS)
    await runner.run_once()
    clock.advance(seconds=12)  # FAST_RETRY's first delay, jitter included
    await runner.run_once()
    job, effect = await _sent(store, job)
    [refused], [delivered] = smtp_sink.refused, smtp_sink.messages
    url = _link_in(delivered)
    assert _link_in(refused) == url == LINKS.url(effect)
    pdf = _pdf_of(delivered)
    assert _pdf_of(refused) == pdf  # the PDF kept for the row, with the link in it
    # The e-mail's URL is the PDF's: printed on page 1, and the target of its two links (the
    # printed URL and the QR code).
    text = _first_page_text(pdf)
    assert ANSWER_PROMPT in text
    assert url in "".join(text.split())  # a long public URL may break across lines
    assert _link_targets(pdf) == [url, url]
    # The token is the row's: its job, version and hash, the e-mail that placed the PO.
    link = verify_link(SECRET, url.rpartition("/s/")[2], clock.now)
    assert (link.job_id, link.draft_version) == (job.id, effect.draft_version)
    assert link.hash_prefix == effect.draft_hash[:HASH_PREFIX]
    assert link.kind is EffectKind.SEND_PO
    assert link.key(job.po_number) == effect.key
    assert link.expires_at == T0 + timedelta(days=30)  # 30 days from when it was staged


async def test_without_links_neither_the_email_nor_the_pdf_carries_one(
    store: SqlStore, smtp_sink: SmtpSink
) -> None:
    job = await _approved(store)
    await _runner(store, smtp_sink, Clock(), None).run_once()
    await _sent(store, job)
    [delivered] = smtp_sink.messages
    body = _body(delivered)
    assert LINK_INTRO not in body and "/s/" not in body
    assert body.startswith("Purchase order PO-2026-001 from Manzoori\n\nSupplier: ")
    pdf = _pdf_of(delivered)
    assert ANSWER_PROMPT not in _first_page_text(pdf)
    assert _link_targets(pdf) == []


@pytest.mark.slow  # starts pdftoppm and zbarimg
@pytest.mark.parametrize(
    "public_url",
    [
        LINKS.public_url,  # a short one: its link fits one line
        # a long one: the link breaks across lines, the code is denser (version 8, not 6)
        "https://purchasing.lahore-electronics-and-appliances.example.com.pk/suppliers",
    ],
)
async def test_the_qr_code_reads_back_as_the_emails_link(
    store: SqlStore, smtp_sink: SmtpSink, tmp_path: Path, public_url: str
) -> None:
    await _approved(store)
    links = SupplierLinks(SECRET, public_url, 30)
    await _runner(store, smtp_sink, Clock(), links).run_once()
    [delivered] = smtp_sink.messages
    pdf = tmp_path / "po.pdf"
    pdf.write_bytes(_pdf_of(delivered))
    # 150 dpi: about 3.4 pixels a module, a coarse scan or a photo of the printed page.
    page = tmp_path / "page"
    subprocess.run(
        ["pdftoppm", "-r", "150", "-png", "-f", "1", "-l", "1", "-singlefile", pdf, page],
        check=True,
        capture_output=True,
        timeout=60,
    )
    read = subprocess.run(
        ["zbarimg", "--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", f"{page}.png"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert read.stdout.splitlines() == [_link_in(delivered)]
