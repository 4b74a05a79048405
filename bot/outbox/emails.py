"""The purchase-order e-mail: headers from identifiers, a plain-text body, the PO as a PDF (made
once for the outbox row: bot.documents) and a CSV of the lines.

Only values the draft validated as plain identifiers (PO number, SKUs, the address) and our own
configuration reach the headers. Descriptions, notes and the supplier name come from spreadsheets,
so they go only in the body and the CSV, flattened to one line and neutralised
(core.drafting.tables) so that none becomes a formula when pasted or opened in a spreadsheet; every
CSV field is quoted.
"""

from __future__ import annotations

import csv
import email.policy
import email.utils
import io
from datetime import UTC, datetime
from email.message import EmailMessage

from bot.words.flags import day_text
from core.company.company import UNNAMED_BUYER, Buyer
from core.drafting.drafts import Draft, DraftLine
from core.drafting.money import format_pkr, to_rupees
from core.drafting.tables import neutralise
from core.errors import ConfigError
from core.jobs.effects import message_id, send_po_key
from core.jobs.jobs import SendOrder
from core.purchasing.po_document import taxes
from core.texts import flatten

# 7-bit parts (quoted-printable or base64 when the text is not ASCII) pass every relay, whether
# or not it offers 8BITMIME, so the sender never has to negotiate it.
POLICY = email.policy.SMTP.clone(cte_type="7bit")
CSV_COLUMNS = ("sku", "description", "quantity", "unit_price_pkr", "line_total_pkr", "note")


def sender_domain(mail_from: str) -> str:
    """The domain of the sender address, which names our Message-IDs."""
    address = email.utils.parseaddr(mail_from)[1]
    local, at, domain = address.rpartition("@")
    if not (local and at and domain):
        raise ConfigError("MAIL_FROM has no domain after '@'")
    return domain


def render_po_email(
    order: SendOrder,
    *,
    mail_from: str,
    now: datetime | None = None,
    link: str = "",
    link_expires: datetime | None = None,
) -> EmailMessage:
    """The e-mail that places `order`: a brief text body, the PO as a PDF (the bytes kept with
    the outbox row, never made again here) and its lines as CSV; its Message-ID is derived from
    the effect's key. `link` is the supplier's link ("" none), good until `link_expires`."""
    draft, buyer = order.draft, buyer_of(order)
    message = EmailMessage(policy=POLICY)
    message["From"] = mail_from
    message["To"] = draft.recipient_email
    version = order.effect.draft_version
    named = draft.po_number if version == 1 else f"{draft.po_number} version {version}"
    message["Subject"] = f"Purchase order {named} from {flatten(buyer.name)}"
    message["Date"] = email.utils.format_datetime(now or datetime.now(UTC))
    message["Message-ID"] = message_id(order.effect.key, sender_domain(mail_from))
    # Lets the supplier's side (or a person reading headers) spot a resend of the same order.
    message["Idempotency-Key"] = order.effect.key
    body = render_body(order, link=link, link_expires=link_expires)
    message.set_content(body, charset="utf-8")
    if order.document is not None:
        message.add_attachment(
            order.document.pdf,
            maintype="application",
            subtype="pdf",
            filename=f"{draft.po_number}.pdf",
        )
    message.add_attachment(
        render_csv(draft), subtype="csv", charset="utf-8", filename=f"{draft.po_number}.csv"
    )
    return message


def buyer_of(order: SendOrder) -> Buyer:
    """Who the order's e-mail is from: the buyer of the company version its draft cites."""
    return order.company.buyer if order.company is not None else UNNAMED_BUYER


def render_body(order: SendOrder, *, link: str = "", link_expires: datetime | None = None) -> str:
    """The plain-text body, what the PDF says in brief: who buys, how to answer (the
    supplier's link, if any), which order and version, where and when to deliver, on what
    terms, every line, and the totals."""
    draft, buyer = order.draft, buyer_of(order)
    branch_id = draft.branch_id or (order.company.default_branch if order.company else "")
    branch = order.company.branch(branch_id) if order.company and branch_id else None
    lines = [
        f"Purchase order {draft.po_number} from {neutralise(buyer.name)}",
        *([f"{neutralise(buyer.address)}"] if buyer.address else []),
        *([f"NTN {buyer.ntn}"] if buyer.ntn else []),
        *([f"STRN {buyer.strn}"] if buyer.strn else []),
        "",
        *answer_lines(link, link_expires),
        *(
            [
                f"This is version {order.effect.draft_version} of the order: it replaces any "
                "earlier version you may have had.",
                "",
            ]
            if order.effect.draft_version > 1
            else []
        ),
        f"Supplier: {neutralise(draft.supplier_name)}",
        f"PO number: {draft.po_number}",
        f"Draft version: {order.effect.draft_version}",
        f"Terms version: {neutralise(draft.terms_version)}",
        *(
            [f"Deliver to: {neutralise(branch.name)}, {neutralise(branch.address)}"]
            if branch
            else []
        ),
        *([f"Delivery by: {day_text(draft.delivery_date)}"] if draft.delivery_date else []),
        *([f"Payment terms: {neutralise(draft.payment_terms)}"] if draft.payment_terms else []),
        "",
        "Please supply:",
        "",
    ]
    for number, line in enumerate(draft.lines, start=1):
        lines.extend(_body_line(number, line))
    if draft.gst_paisa:
        lines += [
            f"Subtotal: {format_pkr(draft.subtotal_paisa)}",
            *(
                f"GST {tax.percent}% on {format_pkr(tax.base_paisa)}: {format_pkr(tax.tax_paisa)}"
                for tax in taxes(draft.lines)
            ),
            f"Total (incl. GST): {format_pkr(draft.total_paisa)}",
        ]
    else:
        lines.append(f"Total: {format_pkr(draft.total_paisa)}")
    attached = f"{draft.po_number}.pdf and " if order.document is not None else ""
    lines += [
        "",
        f"The purchase order is attached as {attached}{draft.po_number}.csv.",
        "Please quote the PO number on your delivery note and invoice.",
    ]
    return "\n".join(lines) + "\n"


def answer_lines(link: str, expires: datetime | None) -> list[str]:
    """How the supplier answers: its link on a line of its own (mail programs make it
    clickable) and until when it works, then a blank line; nothing without a link."""
    if not link:
        return []
    lines = ["To accept, decline or propose changes, open:", link]
    if expires is not None:
        until = expires.astimezone(UTC)
        lines.append(
            f"(This link is yours alone and works until {day_text(until.date())}, "
            f"{until:%H:%M} UTC.)"
        )
    return [*lines, ""]


def _body_line(number: int, line: DraftLine) -> list[str]:
    return [
        f"{number}. SKU {line.sku}: {neutralise(line.description)}",
        f"   Quantity {line.quantity} at {format_pkr(line.unit_price_paisa)} each"
        f" = {format_pkr(line.total_paisa)}",
        *([f"   Needed by: {day_text(line.needed_by)}"] if line.needed_by else []),
        *([f"   Note: {neutralise(line.note)}"] if line.note else []),
        "",
    ]


def render_csv(draft: Draft) -> str:
    """The lines as CSV, the supplier's and the Details one; amounts are plain decimals
    (1234.50) so any program can sum them. Every field is quoted, so a "," in a cell never
    splits it, and every text cell is neutralised, so none is run as a formula."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow(CSV_COLUMNS)
    for line in draft.lines:
        writer.writerow(
            (
                neutralise(line.sku),
                neutralise(line.description),
                line.quantity,
                f"{to_rupees(line.unit_price_paisa):.2f}",
                f"{to_rupees(line.total_paisa):.2f}",
                neutralise(line.note),
            )
        )
    return out.getvalue()


def render_cancellation_email(
    order: SendOrder, *, mail_from: str, now: datetime | None = None
) -> EmailMessage:
    """The e-mail that calls off a PO the supplier was sent (a cancel-po row): plain text, from
    the same buyer to the same address, its Message-ID derived from the cancel key, and in
    reply to the PO's own e-mail (its Message-ID, from the send-po key of the same version), so
    that the supplier's mail program shows it in the PO's thread."""
    draft, domain = order.draft, sender_domain(mail_from)
    effect = order.effect
    placed_key = send_po_key(draft.po_number, effect.draft_version, effect.draft_hash)
    placed = message_id(placed_key, domain)
    message = EmailMessage(policy=POLICY)
    message["From"] = mail_from
    message["To"] = draft.recipient_email
    buyer = flatten(buyer_of(order).name)
    message["Subject"] = f"Cancellation of purchase order {draft.po_number} from {buyer}"
    message["Date"] = email.utils.format_datetime(now or datetime.now(UTC))
    message["Message-ID"] = message_id(effect.key, domain)
    message["Idempotency-Key"] = effect.key
    message["In-Reply-To"] = placed
    message["References"] = placed
    message.set_content(render_cancellation_body(order), charset="utf-8")
    return message


def render_cancellation_body(order: SendOrder) -> str:
    """The cancellation's text: which order and version, when it was sent (if known), the
    admin's reason (neutralised: a person typed it), and not to supply or invoice it."""
    draft, called, buyer = order.draft, order.cancellation, buyer_of(order)
    reason = neutralise(called.reason) if called is not None else ""
    sent_at = called.sent_at.astimezone(UTC) if called and called.sent_at else None
    lines = [
        f"Cancellation of purchase order {draft.po_number} from {neutralise(buyer.name)}",
        "",
        f"Supplier: {neutralise(draft.supplier_name)}",
        f"PO number: {draft.po_number}",
        f"Draft version: {order.effect.draft_version}",
        *([f"Sent: {day_text(sent_at.date())}, {sent_at:%H:%M} UTC"] if sent_at else []),
        *([f"Reason: {reason}"] if reason else []),
        "",
        f"We cancel purchase order {draft.po_number}. Please do not supply or invoice it.",
    ]
    return "\n".join(lines) + "\n"
