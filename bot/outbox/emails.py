"""The purchase-order e-mail: headers from identifiers, a plain-text body and a CSV of the lines.

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

from core.drafting.drafts import Draft, DraftLine
from core.drafting.money import format_pkr, to_rupees
from core.drafting.tables import neutralise
from core.errors import ConfigError
from core.jobs.effects import message_id
from core.jobs.jobs import SendOrder
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
    buyer_name: str = "Manzoori",
    now: datetime | None = None,
) -> EmailMessage:
    """The e-mail that places `order`; its Message-ID is derived from the effect's key."""
    draft = order.draft
    message = EmailMessage(policy=POLICY)
    message["From"] = mail_from
    message["To"] = draft.recipient_email
    message["Subject"] = f"Purchase order {draft.po_number} from {flatten(buyer_name)}"
    message["Date"] = email.utils.format_datetime(now or datetime.now(UTC))
    message["Message-ID"] = message_id(order.effect.key, sender_domain(mail_from))
    # Lets the supplier's side (or a person reading headers) spot a resend of the same order.
    message["Idempotency-Key"] = order.effect.key
    message.set_content(render_body(order, buyer_name), charset="utf-8")
    message.add_attachment(
        render_csv(draft), subtype="csv", charset="utf-8", filename=f"{draft.po_number}.csv"
    )
    return message


def render_body(order: SendOrder, buyer_name: str) -> str:
    """The plain-text body: who, which order and version, every line, and the total."""
    draft = order.draft
    lines = [
        f"Purchase order {draft.po_number} from {neutralise(buyer_name)}",
        "",
        f"Supplier: {neutralise(draft.supplier_name)}",
        f"PO number: {draft.po_number}",
        f"Draft version: {order.effect.draft_version}",
        f"Terms version: {neutralise(draft.terms_version)}",
        "",
        "Please supply:",
        "",
    ]
    for number, line in enumerate(draft.lines, start=1):
        lines.extend(_body_line(number, line))
    lines += [
        f"Total: {format_pkr(draft.total_paisa)}",
        "",
        f"The same lines are attached as {draft.po_number}.csv.",
        "Please quote the PO number on your delivery note and invoice.",
    ]
    return "\n".join(lines) + "\n"


def _body_line(number: int, line: DraftLine) -> list[str]:
    return [
        f"{number}. SKU {line.sku}: {neutralise(line.description)}",
        f"   Quantity {line.quantity} at {format_pkr(line.unit_price_paisa)} each"
        f" = {format_pkr(line.total_paisa)}",
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
