"""The e-mails that tell a supplier something about a PO it was sent, without placing or calling
it off (core.outbox.notes): a reminder that the PO waits for its answer, and that the approvers
turned down the changes it proposed, so the version it has stands. Plain text, from the same
buyer to the same address, each in reply to the PO's own e-mail so that the supplier's mail
program keeps them in its thread; the reminder carries the PO's PDF again."""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime
from email.message import EmailMessage

from bot.outbox.emails import POLICY, answer_lines, buyer_of, sender_domain
from bot.outbox.links import SupplierLinks
from bot.words.flags import day_text
from core.drafting.tables import neutralise
from core.jobs.effects import EffectKind, message_id, send_po_key
from core.jobs.jobs import SendOrder
from core.suppliers.links import link_for
from core.texts import flatten


def render_note_email(
    order: SendOrder,
    *,
    mail_from: str,
    links: SupplierLinks | None,
    now: datetime | None = None,
) -> EmailMessage:
    """The e-mail of a note row (`order.effect.kind`: REMIND_PO or REJECT_PROPOSAL)."""
    effect, draft, domain = order.effect, order.draft, sender_domain(mail_from)
    reminding = effect.kind == EffectKind.REMIND_PO
    note = order.note
    standing = draft if reminding or note is None or note.standing is None else note.standing
    version = effect.draft_version
    if not reminding and note is not None and note.standing_email is not None:
        version = note.standing_email.draft_version
    placed = message_id(
        send_po_key(standing.po_number, version, _hash_of(order, reminding)), domain
    )
    buyer = flatten(buyer_of(order).name)
    message = EmailMessage(policy=POLICY)
    message["From"] = mail_from
    message["To"] = draft.recipient_email
    message["Subject"] = (
        f"Reminder: purchase order {draft.po_number} from {buyer} awaits your answer"
        if reminding
        else f"Purchase order {draft.po_number} from {buyer}: your proposed changes"
    )
    message["Date"] = email.utils.format_datetime(now or datetime.now(UTC))
    message["Message-ID"] = message_id(effect.key, domain)
    message["Idempotency-Key"] = effect.key
    message["In-Reply-To"] = placed
    message["References"] = placed
    linked = effect if reminding else (note.standing_email if note is not None else None)
    link, expires = "", None
    if links is not None and linked is not None:
        link, expires = links.url(linked), link_for(linked, links.days).expires_at
    body = (
        _reminder(order, version, link, expires)
        if reminding
        else _turned_down(order, version, link, expires)
    )
    message.set_content(body, charset="utf-8")
    if reminding and order.document is not None:
        message.add_attachment(
            order.document.pdf,
            maintype="application",
            subtype="pdf",
            filename=f"{draft.po_number}.pdf",
        )
    return message


def _hash_of(order: SendOrder, reminding: bool) -> str:
    """The draft hash of the PO e-mail the note answers to: its own version's, for a reminder;
    the standing version's, for a proposal turned down."""
    note = order.note
    if reminding or note is None or note.standing_email is None:
        return order.effect.draft_hash
    return note.standing_email.draft_hash


def _reminder(order: SendOrder, version: int, link: str, expires: datetime | None) -> str:
    draft, buyer = order.draft, buyer_of(order)
    return (
        "\n".join(
            [
                f"Reminder: purchase order {draft.po_number} from {neutralise(buyer.name)}",
                "",
                f"We e-mailed you purchase order {draft.po_number} (version {version}) and have "
                "no answer yet. Please accept it, decline it or propose changes.",
                "",
                *answer_lines(link, expires),
                *(
                    [f"The order is attached again as {draft.po_number}.pdf.", ""]
                    if order.document is not None
                    else []
                ),
                f"{neutralise(buyer.name)}",
            ]
        )
        + "\n"
    )


def _turned_down(order: SendOrder, version: int, link: str, expires: datetime | None) -> str:
    draft, buyer, note = order.draft, buyer_of(order), order.note
    reason = neutralise(note.reason) if note is not None and note.reason else ""
    sent = note.standing_email if note is not None else None
    when = f", as we sent it on {day_text(sent.updated_at.date())}," if sent else ""
    return (
        "\n".join(
            [
                f"Purchase order {draft.po_number} from {neutralise(buyer.name)}",
                "",
                f"Thank you for your proposed changes to purchase order {draft.po_number}. We "
                "cannot accept them.",
                *([f"Reason: {reason}"] if reason else []),
                "",
                f"Version {version} of the order{when} stands. Please accept or decline it.",
                "",
                *answer_lines(link, expires),
                f"{neutralise(buyer.name)}",
            ]
        )
        + "\n"
    )
