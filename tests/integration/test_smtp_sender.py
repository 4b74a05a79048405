"""SmtpSender against a real aiosmtpd server: what arrives, and how each failure is classified."""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import email.utils
import hashlib
import inspect
import io
import json
import logging
import socket
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

import aiosmtplib
import pytest
from aiosmtplib import errors as smtp_errors
from aiosmtplib.errors import (
    SMTPAuthenticationError,
    SMTPConnectResponseError,
    SMTPConnectTimeoutError,
    SMTPDataError,
    SMTPHeloError,
    SMTPNotSupported,
    SMTPReadTimeoutError,
    SMTPRecipientRefused,
    SMTPRecipientsRefused,
    SMTPServerDisconnected,
)

from bot.dev.smtp import SmtpSink, running_sink
from bot.outbox.smtp import (
    SMTP_ERROR_RULES,
    Phase,
    SmtpSender,
    SmtpServer,
    TlsMode,
    classify_smtp_error,
)
from core.company.company import Branch, Buyer, Company
from core.drafting.drafts import Draft, DraftLine, draft_hash, is_email
from core.drafting.money import format_pkr
from core.errors import AmbiguousSendError, PermanentSendError, SendError, TransientSendError
from core.jobs.effects import EffectStatus, message_id, send_po_key
from core.jobs.jobs import WORKFLOW_VERSION, Document, Effect, Job, SendOrder
from core.jobs.states import State

MAIL_FROM = "orders@manzoori.example"
DOMAIN = "manzoori.example"
RECIPIENT = "sales@saddar-wholesale.example"
PO = "PO-2026-042"
T0 = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
LINES = (
    DraftLine("CBL-USB-C-1M", 'USB-C cable, 1 m "braided"', 4, 125_050),
    DraftLine("TEA-500G", "چائے کی پتی، 500 گرام", 12, 89_900),
    DraftLine("SVC/INSTALL", "Installation on site", 1, 1_500_000, "Saddar branch, before Friday"),
)
COMPANY = Company(
    Buyer("Manzoori Traders", "12 Main Boulevard, Gulberg III, Lahore", "1234567-8"),
    (Branch("saddar", "Saddar", "Shop 9, Saddar, Karachi"),),
    "saddar",
    "20260101T000000Z-abcdef12",
)
# The PDF the runner kept for the row: the sender attaches these bytes, whatever they are.
PDF = b"%PDF-1.7\n% a kept document\n"
DOCUMENT = Document(PDF, hashlib.sha256(PDF).hexdigest())
# A short timeout keeps the slow-server cases well under a second each.
FAST = 0.5


def make_order(lines: tuple[DraftLine, ...] = LINES, version: int = 3) -> SendOrder:
    """A SendOrder as the runner builds it, straight from core's dataclasses."""
    draft = Draft(PO, "SUP-KHI-07", "Saddar Wholesale", RECIPIENT, "terms-2026-01", lines)
    digest = draft_hash(draft)
    job = Job(
        id="job-1", po_number=PO, state=State.SENDING, version=7, requester_id=1001,
        input_ref="tg-file:abc", workflow_version=WORKFLOW_VERSION, source_versions={},
        tool_results={}, draft_version=version, draft_hash=digest, supplier_id="SUP-KHI-07",
        total_paisa=draft.total_paisa, retry_count=0, decision_deadline=None,
        created_at=T0, updated_at=T0,
    )  # fmt: skip
    effect = Effect(
        key=send_po_key(PO, version, digest), job_id=job.id, kind="send-po",
        draft_version=version, draft_hash=digest, status=EffectStatus.STARTED, version=2,
        attempts=1, next_attempt_at=None, first_attempt_at=T0, lease_owner="test",
        lease_until=T0 + timedelta(minutes=2), started_at=T0, result=None, last_error=None,
        created_at=T0, updated_at=T0,
    )  # fmt: skip
    return SendOrder(effect, job, draft, DOCUMENT, COMPANY)


def make_sender(sink: SmtpSink, timeout: float = 5.0, tls: TlsMode = "none") -> SmtpSender:
    """A sender pointed at the sink, without TLS unless asked."""
    return SmtpSender(
        SmtpServer(host=sink.host, port=sink.port, tls=tls, timeout=timeout),
        mail_from=MAIL_FROM,
    )


def body_of(message: email.message.EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content())


def csv_rows(message: email.message.EmailMessage) -> tuple[str, list[dict[str, str]]]:
    (attachment,) = (
        part for part in message.iter_attachments() if part.get_content_type() == "text/csv"
    )
    rows = list(csv.DictReader(io.StringIO(attachment.get_content())))
    return str(attachment.get_filename()), rows


# -- what arrives ------------------------------------------------------------------------------


async def test_the_kept_pdf_is_attached_as_it_is_and_the_body_says_it_in_brief(
    smtp_sink: SmtpSink,
) -> None:
    taxed = tuple(dataclasses.replace(line, gst_basis_points=1800) for line in LINES)
    order = make_order(taxed)
    order = dataclasses.replace(
        order,
        draft=dataclasses.replace(
            order.draft,
            branch_id="saddar",
            payment_terms="30 days credit",
            delivery_date=date(2026, 1, 12),
        ),
    )
    await make_sender(smtp_sink).send(order)

    (message,) = smtp_sink.messages
    pdf, csv_part = message.iter_attachments()
    assert pdf.get_content_type() == "application/pdf"
    assert pdf.get_filename() == f"{PO}.pdf" and pdf.get_content() == PDF
    assert csv_part.get_filename() == f"{PO}.csv"
    body = body_of(message)
    for said in (
        "Purchase order PO-2026-042 from Manzoori Traders",
        "NTN 1234567-8",
        "Deliver to: Saddar, Shop 9, Saddar, Karachi",
        "Delivery by: 12 Jan 2026",
        "Payment terms: 30 days credit",
        f"Subtotal: {format_pkr(order.draft.subtotal_paisa)}",
        f"GST 18% on {format_pkr(order.draft.subtotal_paisa)}: {format_pkr(order.draft.gst_paisa)}",
        f"Total (incl. GST): {format_pkr(order.draft.total_paisa)}",
        f"attached as {PO}.pdf and {PO}.csv",
    ):
        assert said in body, said


async def test_delivers_one_message_with_headers_from_the_key(smtp_sink: SmtpSink) -> None:
    order = make_order()
    result = await make_sender(smtp_sink).send(order)

    (message,) = smtp_sink.messages
    (envelope,) = smtp_sink.envelopes
    assert (envelope.mail_from, envelope.rcpt_tos) == (MAIL_FROM, [RECIPIENT])
    assert message["From"] == MAIL_FROM and message["To"] == RECIPIENT
    assert message["Subject"] == f"Purchase order {PO} version 3 from Manzoori Traders"
    assert message["Message-ID"] == message_id(order.effect.key, DOMAIN)
    assert message["Idempotency-Key"] == order.effect.key
    sent_at = email.utils.parsedate_to_datetime(message["Date"])
    assert abs(sent_at - datetime.now(UTC)) < timedelta(minutes=1)
    assert result == {
        "message_id": message_id(order.effect.key, DOMAIN),
        "smtp_code": 250,
        "smtp_message": "2.0.0 Ok: queued",
    }
    assert "QUIT" in smtp_sink.commands


async def test_body_lists_every_line_and_the_total(smtp_sink: SmtpSink) -> None:
    await make_sender(smtp_sink).send(make_order())

    body = body_of(smtp_sink.messages[0])
    for line in LINES:
        assert f"SKU {line.sku}: {line.description}" in body
        assert f"Quantity {line.quantity} at {format_pkr(line.unit_price_paisa)} each" in body
    # 4 x 1,250.50 + 12 x 899.00 + 1 x 15,000.00
    assert "Total: Rs 30,790.00" in body
    for fact in ("Supplier: Saddar Wholesale", f"PO number: {PO}", "Draft version: 3"):
        assert fact in body
    assert "Terms version: terms-2026-01" in body


async def test_csv_attachment_parses_back_to_the_lines(smtp_sink: SmtpSink) -> None:
    await make_sender(smtp_sink).send(make_order())

    filename, rows = csv_rows(smtp_sink.messages[0])
    assert filename == f"{PO}.csv"
    assert rows == [
        {"sku": "CBL-USB-C-1M", "description": 'USB-C cable, 1 m "braided"', "quantity": "4",
         "unit_price_pkr": "1250.50", "line_total_pkr": "5002.00", "note": ""},
        {"sku": "TEA-500G", "description": "چائے کی پتی، 500 گرام", "quantity": "12",
         "unit_price_pkr": "899.00", "line_total_pkr": "10788.00", "note": ""},
        {"sku": "SVC/INSTALL", "description": "Installation on site", "quantity": "1",
         "unit_price_pkr": "15000.00", "line_total_pkr": "15000.00",
         "note": "Saddar branch, before Friday"},
    ]  # fmt: skip


async def test_spreadsheet_text_cannot_add_headers_or_formulas(smtp_sink: SmtpSink) -> None:
    hostile = "Cable\r\nBcc: thief@evil.example\r\n\r\nfake body"
    formula = '=HYPERLINK("http://evil.example","click")'
    lines = (
        DraftLine("CBL-1", hostile, 1, 100, note="@SUM(1+1)*cmd|' /C calc'!A0"),
        DraftLine("CBL-2", formula, 1, 100, note="-2+3"),
    )
    await make_sender(smtp_sink).send(make_order(lines))

    (message,) = smtp_sink.messages
    assert message["Bcc"] is None
    assert smtp_sink.envelopes[0].rcpt_tos == [RECIPIENT]
    assert "SKU CBL-1: Cable Bcc: thief@evil.example fake body" in body_of(message)
    _, rows = csv_rows(message)
    assert [row["description"] for row in rows] == [
        "Cable Bcc: thief@evil.example fake body",
        "'" + formula,  # shown as text by spreadsheets, not run
    ]
    assert [row["note"] for row in rows] == ["'@SUM(1+1)*cmd|' /C calc'!A0", "'-2+3"]
    body = body_of(message)
    assert "SKU CBL-2: '" + formula in body and "   Note: '-2+3" in body


async def test_a_retry_after_451_delivers_the_same_message_id(smtp_sink: SmtpSink) -> None:
    order, sender = make_order(), make_sender(smtp_sink)
    smtp_sink.script("DATA", "451 4.3.0 try later")
    with pytest.raises(TransientSendError):
        await sender.send(order)
    await sender.send(order)

    (message,) = smtp_sink.messages
    assert message["Message-ID"] == message_id(order.effect.key, DOMAIN)


async def test_logs_and_results_hold_the_key_not_addresses(
    smtp_sink: SmtpSink, caplog: pytest.LogCaptureFixture
) -> None:
    order, sender = make_order(), make_sender(smtp_sink)
    smtp_sink.script("RCPT", f"550 5.1.1 <{RECIPIENT}>: no such user")
    with caplog.at_level(logging.DEBUG, logger="bot.outbox.smtp"):
        with pytest.raises(PermanentSendError) as refused:
            await sender.send(order)
        result = await sender.send(order)

    assert order.effect.key in caplog.text
    for text in (caplog.text, json.dumps(result), str(refused.value)):
        assert RECIPIENT not in text and MAIL_FROM not in text
    assert "550 5.1.1 <[address]>: no such user" in str(refused.value)


# -- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "status", "expected", "code"),
    [
        ("MAIL", "451 4.3.0 try later", TransientSendError, 451),  # greylisting the sender
        ("MAIL", "550 5.7.1 sender rejected", PermanentSendError, 550),  # our domain is refused
        ("RCPT", "450 4.2.1 mailbox busy", TransientSendError, 450),  # supplier's box is busy
        ("RCPT", "550 5.1.1 no such user", PermanentSendError, 550),  # wrong supplier address
        ("DATA", "451 4.3.0 try later", TransientSendError, 451),  # server did not take it
        ("DATA", "550 5.7.1 content rejected", PermanentSendError, 550),  # spam filter said no
    ],
)
async def test_a_refusal_is_classified_by_its_reply_code(
    smtp_sink: SmtpSink, command: str, status: str, expected: type[SendError], code: int
) -> None:
    smtp_sink.script(command, status)
    with pytest.raises(SendError) as raised:
        await make_sender(smtp_sink).send(make_order())

    assert type(raised.value) is expected and raised.value.code == code
    assert smtp_sink.messages == []
    assert smtp_sink.commands[-1] == "QUIT"  # the connection was closed politely


@pytest.mark.slow  # waits out a real SMTP timeout or late answer
@pytest.mark.timed
async def test_silence_after_data_is_ambiguous(smtp_sink: SmtpSink) -> None:
    smtp_sink.script("DATA", "250 2.0.0 Ok: queued", delay=FAST * 4)
    with pytest.raises(AmbiguousSendError):
        await make_sender(smtp_sink, timeout=FAST).send(make_order())

    # This is why it must not be retried blindly: the server did take the message.
    assert len(smtp_sink.messages) == 1


@pytest.mark.slow  # waits out a real SMTP timeout or late answer
@pytest.mark.timed
async def test_timeout_bounds_the_whole_send_not_each_command(smtp_sink: SmtpSink) -> None:
    # Each answer comes within the timeout, together they do not: the send must stop in time,
    # before DATA, so nothing was delivered and a retry is safe.
    smtp_sink.script("MAIL", "250 2.1.0 Ok", delay=FAST * 0.7)
    smtp_sink.script("RCPT", "250 2.1.5 Ok", delay=FAST * 0.7)
    started = time.monotonic()
    with pytest.raises(TransientSendError):
        await make_sender(smtp_sink, timeout=FAST).send(make_order())
    assert time.monotonic() - started < FAST * 1.3
    assert smtp_sink.messages == []


@pytest.mark.slow  # waits out a real SMTP timeout or late answer
@pytest.mark.timed
async def test_a_slow_quit_after_250_is_still_a_success(smtp_sink: SmtpSink) -> None:
    smtp_sink.script("QUIT", "221 Bye", delay=FAST * 4)
    result = await make_sender(smtp_sink, timeout=FAST).send(make_order())

    assert result["smtp_code"] == 250
    assert len(smtp_sink.messages) == 1


@pytest.mark.slow  # waits out a real SMTP timeout or late answer
@pytest.mark.timed
async def test_a_paced_sink_answers_every_data_late_but_a_script_first(
    smtp_sink: SmtpSink,
) -> None:
    # The benchmark's relay pace: every unscripted DATA waits; a scripted answer keeps its own.
    smtp_sink.data_delay = FAST
    smtp_sink.script("DATA", "451 4.3.0 try later")
    sender = make_sender(smtp_sink, timeout=FAST * 4)
    with pytest.raises(TransientSendError):
        await sender.send(make_order())
    started = time.monotonic()
    result = await sender.send(make_order())
    assert time.monotonic() - started >= FAST
    assert result["smtp_code"] == 250
    assert len(smtp_sink.messages) == 1


async def test_connection_refused_is_transient() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sender = SmtpSender(
        SmtpServer(host="127.0.0.1", port=port, tls="none", timeout=FAST), mail_from=MAIL_FROM
    )
    with pytest.raises(TransientSendError) as raised:
        await sender.send(make_order())

    assert raised.value.code is None


async def test_starttls_missing_on_the_server_is_transient(smtp_sink: SmtpSink) -> None:
    with pytest.raises(TransientSendError) as raised:
        await make_sender(smtp_sink, tls="starttls").send(make_order())

    assert "session" in str(raised.value) and smtp_sink.messages == []


# -- one connection, several messages -----------------------------------------------------------


def orders(count: int) -> list[SendOrder]:
    """Orders with keys of their own (one draft version each), as one pass would send them."""
    return [make_order(version=v) for v in range(1, count + 1)]


async def test_a_session_sends_several_messages_over_one_connection(smtp_sink: SmtpSink) -> None:
    batch = orders(3)
    async with make_sender(smtp_sink).session() as session:
        receipts = [await session.send(order) for order in batch]

    assert smtp_sink.commands == ["EHLO"] + ["MAIL", "RCPT", "DATA"] * 3 + ["QUIT"]
    assert [m["Message-ID"] for m in smtp_sink.messages] == [
        message_id(order.effect.key, DOMAIN) for order in batch
    ]
    assert [r["message_id"] for r in receipts] == [m["Message-ID"] for m in smtp_sink.messages]


@pytest.mark.parametrize(
    ("command", "status", "expected"),
    [
        ("RCPT", "550 5.1.1 no such user", PermanentSendError),  # refused mid-envelope
        ("RCPT", "450 4.2.1 mailbox busy", TransientSendError),  # greylisted mid-envelope
        ("DATA", "451 4.3.0 try later", TransientSendError),  # the message itself refused
        ("DATA", "554 5.7.1 content rejected", PermanentSendError),  # the spam filter said no
    ],
)
async def test_a_refusal_keeps_the_connection_for_the_next_message(
    smtp_sink: SmtpSink, command: str, status: str, expected: type[SendError]
) -> None:
    first, refused, last = orders(3)
    async with make_sender(smtp_sink).session() as session:
        await session.send(first)
        smtp_sink.script(command, status)
        with pytest.raises(expected):
            await session.send(refused)
        await session.send(last)

    # RSET clears whatever the refused transaction left open before the next one starts.
    assert smtp_sink.commands.count("EHLO") == 1
    assert smtp_sink.commands[-5:] == ["RSET", "MAIL", "RCPT", "DATA", "QUIT"]
    assert [m["Idempotency-Key"] for m in smtp_sink.messages] == [first.effect.key, last.effect.key]


@pytest.mark.slow  # waits out a real SMTP timeout or late answer
@pytest.mark.timed
async def test_silence_after_data_drops_the_connection_and_the_next_goes_on_a_new_one(
    smtp_sink: SmtpSink,
) -> None:
    ambiguous, after = orders(2)
    smtp_sink.script("DATA", "250 2.0.0 Ok: queued", delay=FAST * 4)
    async with make_sender(smtp_sink, timeout=FAST).session() as session:
        with pytest.raises(AmbiguousSendError):
            await session.send(ambiguous)
        assert not session.connected  # never reused: its late 250 could pass for the next one
        receipt = await session.send(after)

    assert smtp_sink.commands.count("EHLO") == 2
    assert receipt["message_id"] == message_id(after.effect.key, DOMAIN)
    assert [m["Idempotency-Key"] for m in smtp_sink.messages] == [
        ambiguous.effect.key,  # the server did take it: the reason it is never resent blindly
        after.effect.key,
    ]


async def test_an_odd_reply_to_data_drops_the_connection(smtp_sink: SmtpSink) -> None:
    ambiguous, after = orders(2)
    smtp_sink.script("DATA", "354 go ahead, again")  # neither taken nor refused
    async with make_sender(smtp_sink).session() as session:
        with pytest.raises(AmbiguousSendError):
            await session.send(ambiguous)
        assert not session.connected
        await session.send(after)

    assert smtp_sink.commands.count("EHLO") == 2 and "RSET" not in smtp_sink.commands


@pytest.mark.slow  # waits out a real SMTP timeout or late answer
@pytest.mark.timed
async def test_a_connection_the_server_closed_while_idle_is_replaced_once() -> None:
    first, second = orders(2)
    # aiosmtpd closes a connection that says nothing for `timeout` seconds, as relays do.
    with running_sink(timeout=FAST) as sink:
        async with make_sender(sink).session() as session:
            await session.send(first)
            await until(lambda: not session.connected)
            receipt = await session.send(second)

    assert receipt["smtp_code"] == 250  # not a failed attempt: nothing of it had been sent
    assert sink.commands.count("EHLO") == 2
    assert [m["Idempotency-Key"] for m in sink.messages] == [first.effect.key, second.effect.key]


async def test_a_421_to_the_first_command_of_a_reused_connection_reconnects(
    smtp_sink: SmtpSink,
) -> None:
    # RFC 5321 3.8: a server closing the channel on its own says 421 to the next command.
    first, second = orders(2)
    async with make_sender(smtp_sink).session() as session:
        await session.send(first)
        smtp_sink.script("MAIL", "421 4.4.2 idle too long, closing")
        await session.send(second)

    assert smtp_sink.commands == [
        "EHLO", "MAIL", "RCPT", "DATA", "MAIL", "EHLO", "MAIL", "RCPT", "DATA", "QUIT"
    ]  # fmt: skip
    assert len(smtp_sink.messages) == 2


async def test_a_reused_connection_reconnects_only_once(smtp_sink: SmtpSink) -> None:
    first, second = orders(2)
    async with make_sender(smtp_sink).session() as session:
        await session.send(first)
        smtp_sink.script("MAIL", "421 4.4.2 closing")
        smtp_sink.script("MAIL", "421 4.4.2 still closing")
        with pytest.raises(TransientSendError) as raised:
            await session.send(second)

    assert raised.value.code == 421
    assert smtp_sink.commands.count("EHLO") == 2
    assert [m["Idempotency-Key"] for m in smtp_sink.messages] == [first.effect.key]


async def test_a_failed_rset_after_a_refusal_starts_the_next_message_afresh(
    smtp_sink: SmtpSink,
) -> None:
    first, refused, last = orders(3)
    async with make_sender(smtp_sink).session() as session:
        await session.send(first)
        smtp_sink.script("RCPT", "550 5.1.1 no such user")
        with pytest.raises(PermanentSendError):
            await session.send(refused)
        smtp_sink.script("RSET", "502 5.5.1 not here")
        receipt = await session.send(last)

    assert receipt["smtp_code"] == 250  # RSET's trouble is the last message's, not this one's
    assert smtp_sink.commands.count("EHLO") == 2
    assert [m["Idempotency-Key"] for m in smtp_sink.messages] == [
        first.effect.key,
        last.effect.key,
    ]


async def test_a_refusal_on_a_fresh_connection_is_not_taken_for_a_closed_one(
    smtp_sink: SmtpSink,
) -> None:
    smtp_sink.script("MAIL", "421 4.3.2 shutting down")
    with pytest.raises(TransientSendError):
        await make_sender(smtp_sink).send(make_order())

    assert smtp_sink.commands.count("EHLO") == 1  # a new connection is not retried


async def until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    """Wait for `condition`, polling; fail the test if it does not hold within `seconds`."""
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.01)


# -- the exception map -------------------------------------------------------------------------


def test_every_aiosmtplib_exception_is_mapped() -> None:
    exported = {getattr(aiosmtplib, name) for name in aiosmtplib.__all__}
    exported |= {obj for _, obj in inspect.getmembers(smtp_errors, inspect.isclass)}
    exceptions = {cls for cls in exported if isinstance(cls, type) and issubclass(cls, Exception)}

    assert smtp_errors.SMTPException in exceptions  # the scan itself found something
    assert {cls.__name__ for cls in exceptions - SMTP_ERROR_RULES.keys()} == set()


def refused(code: int) -> SMTPRecipientRefused:
    return SMTPRecipientRefused(code, "no", RECIPIENT)


SESSION, ENVELOPE, DATA = Phase.SESSION, Phase.ENVELOPE, Phase.DATA
TRANSIENT, PERMANENT, AMBIGUOUS = TransientSendError, PermanentSendError, AmbiguousSendError


@pytest.mark.parametrize(
    ("error", "phase", "expected", "code"),
    [
        (SMTPConnectResponseError(554, "go away"), SESSION, PERMANENT, 554),  # 554 greeting
        (SMTPConnectTimeoutError("slow"), SESSION, TRANSIENT, None),  # no greeting in time
        (SMTPAuthenticationError(535, "bad login"), SESSION, PERMANENT, 535),  # wrong password
        (SMTPHeloError(421, "closing"), SESSION, TRANSIENT, 421),  # server shutting down
        (SMTPNotSupported("no SMTPUTF8"), ENVELOPE, TRANSIENT, None),  # refused by the client
        (SMTPServerDisconnected("gone"), ENVELOPE, TRANSIENT, None),  # dropped before DATA
        # one recipient refused for good outweighs one greylisted
        (SMTPRecipientsRefused([refused(450), refused(550)]), ENVELOPE, PERMANENT, 550),
        (SMTPRecipientsRefused([refused(450)]), ENVELOPE, TRANSIENT, 450),  # all greylisted
        (SMTPReadTimeoutError("slow"), DATA, AMBIGUOUS, None),  # no final reply in time
        (SMTPServerDisconnected("gone"), DATA, AMBIGUOUS, None),  # dropped during DATA
        (ConnectionResetError(), DATA, AMBIGUOUS, None),  # a socket error aiosmtplib let through
        (SMTPDataError(354, "weird"), DATA, AMBIGUOUS, 354),  # neither 4xx nor 5xx: may have it
        (SMTPDataError(452, "full"), DATA, TRANSIENT, 452),  # storage full: not accepted
    ],
)
def test_classify_smtp_error(
    error: Exception, phase: Phase, expected: type[SendError], code: int | None
) -> None:
    classified = classify_smtp_error(error, phase)
    assert type(classified) is expected and classified.code == code
    assert RECIPIENT not in str(classified)


# -- money -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("paisa", "shown"),
    [
        (0, "Rs 0.00"),
        (5, "Rs 0.05"),  # paisa below one rupee keep their leading zero
        (123_450, "Rs 1,234.50"),
        (100_000_000, "Rs 1,000,000.00"),  # Western grouping, not lakh/crore
        (-5_000, "-Rs 50.00"),  # refunds and credit notes
    ],
)
def test_format_pkr(paisa: int, shown: str) -> None:
    assert format_pkr(paisa) == shown


@pytest.mark.parametrize(
    "recipient",
    [
        "orders@supplier.pk",
        "o.rders+po@sub.supplier.com.pk",
        "O'Brien_2&co@x-y.example",  # atext a header parser could misread
        "a#b$c*d/e=f?g^h`i{j|k}l~m-n@x.pk",  # every other atext character
    ],
)
async def test_rcpt_to_is_the_address_the_to_header_shows(
    smtp_sink: SmtpSink, recipient: str
) -> None:
    """Every address the terms import accepts reaches RCPT TO exactly as the To header
    shows it to the supplier, so the mail goes where the approver saw it would."""
    assert is_email(recipient)
    order = make_order()
    order = dataclasses.replace(
        order, draft=dataclasses.replace(order.draft, recipient_email=recipient)
    )
    await make_sender(smtp_sink).send(order)

    (message,) = smtp_sink.messages
    (envelope,) = smtp_sink.envelopes
    assert envelope.rcpt_tos == [recipient]
    assert message["To"] == recipient
    assert email.utils.getaddresses([message["To"]]) == [("", recipient)]


async def test_a_journal_address_gets_every_e_mail_in_the_envelope_only(
    smtp_sink: SmtpSink,
) -> None:
    journal = "journal@shop.example"
    server = SmtpServer(host=smtp_sink.host, port=smtp_sink.port, tls="none", timeout=5.0)
    sender = SmtpSender(server, mail_from=MAIL_FROM, journal=journal)
    await sender.send(make_order())
    (envelope,) = smtp_sink.envelopes
    (message,) = smtp_sink.messages
    assert envelope.rcpt_tos == [RECIPIENT, journal]
    assert journal not in message.as_string()  # no Bcc, To or Cc names it

    smtp_sink.script("RCPT", "250 2.1.5 ok")  # the supplier's
    smtp_sink.script("RCPT", "550 5.1.1 no such journal")
    await sender.send(make_order())  # a journal refused is logged, the PO still goes
    assert smtp_sink.envelopes[-1].rcpt_tos == [RECIPIENT]
