"""What a requester is told about a request typed in a message: the summary of what the bot
read (each line priced as the intake priced it, the totals per supplier), the buttons, and
the answers to taps on them."""

from __future__ import annotations

from collections.abc import Sequence

from bot.words.i18n import ENGLISH, N_, Translator
from bot.words.texts import Refusing, refusal
from core.drafting.drafts import Draft, DraftLine
from core.drafting.money import format_pkr
from core.drafting.terms import match_key
from core.problems import Problem
from core.purchasing.summaries import TypedRequest
from core.texts import flatten

# What a typed request is called where a sheet's file name would be.
TYPED_NAME = N_("Typed request")
SUBMIT_TEXT = N_("Submit")
CANCEL_TEXT = N_("Cancel")
# Lines a summary lists; the rest are counted. Keeps the summary in one Telegram message.
SHOWN_LINES = 30
# Characters of a summary: one Telegram message (4,096), with room for the headline an edit
# puts above it once it is submitted or cancelled.
SUMMARY_LIMIT = 4_000
# A description is cut to this many characters in the summary: the SKU says the rest.
DESCRIPTION_LIMIT = 40
FIX_AND_SEND = N_("Send the corrected lines in a new message.")
# The answers to a tap on Submit or Cancel, by what it found (core.purchasing.summaries).
SUBMITTED = N_("Submitted: the purchase orders are going to the approvers.")
ALREADY_SUBMITTED = N_("Already submitted; nothing more was made.")
NOT_SUBMITTED = N_("Not submitted: see why in the chat.")
NOT_YOURS = N_("Only the person who sent these lines can submit or cancel them.")
WAS_CANCELLED = N_("This request was cancelled; to order, send the lines again.")
EXPIRED = N_("This summary has expired; send the lines again to see today's prices.")
GONE = N_("This request is no longer kept; send the lines again.")
CANCELLED = N_("Cancelled: nothing was submitted.")
ALREADY_CANCELLED = N_("Already cancelled.")
CANCEL_TOO_LATE = N_("This request was already submitted; an admin can cancel its purchase orders.")
NOT_A_REQUESTER = N_("Only requesters can submit requests.")
# The headline a summary is edited to carry once it can no longer be tapped.
SUBMITTED_HEADLINE = N_("✅ Submitted at {at}")
CANCELLED_HEADLINE = N_("❌ Cancelled at {at}: nothing was submitted")


def summary(
    request: TypedRequest, drafts: Sequence[Draft], hours: int, *, tr: Translator = ENGLISH
) -> str:
    """The draft summary: each line as read and priced, each supplier's total, what to tap."""
    priced = {
        match_key(line.sku): (line, draft)
        for draft in drafts
        for line in draft.lines  # one SKU to two branches: the same offer, the same price
    }
    n = len(request.lines)
    head = tr.plural(
        "Your request, as I read it ({count} line):",
        "Your request, as I read it ({count} lines):",
        n,
    )
    said = [
        _line(number, priced[match_key(asked.sku)][0], asked.note, tr)
        for number, asked in zip(request.numbers, request.lines, strict=True)
    ]
    tail = [*_totals(drafts, tr), _what_next(hours, tr)]
    shown = min(n, SHOWN_LINES)
    while True:  # as many lines as one message holds, the rest counted
        more = n - shown
        counted = [tr.plural("… and {count} more line", "… and {count} more lines", more)]
        text = "\n".join([head, *said[:shown], *(counted if more else []), *tail])
        if len(text) <= SUMMARY_LIMIT or shown == 0:
            return text[:SUMMARY_LIMIT]
        shown -= 1


def _line(number: int, line: DraftLine, note: str, tr: Translator) -> str:
    description = flatten(line.description)
    if len(description) > DESCRIPTION_LIMIT:
        description = description[: DESCRIPTION_LIMIT - 1] + "…"
    quantity = format(line.quantity, ",")
    said = tr(
        "Line {number}: {sku} {description}, {quantity} × {price} = {amount}",
        number=number,
        sku=flatten(line.sku),
        description=description,
        quantity=quantity,
        price=format_pkr(line.unit_price_paisa),
        amount=format_pkr(line.total_paisa),
    )
    note = flatten(note)
    return f"{said} ({tr.ltr(note)})" if note else said


def _totals(drafts: Sequence[Draft], tr: Translator) -> list[str]:
    """Each supplier's total (sales tax included), in the order the intake drafted them."""
    totals: dict[str, list[int]] = {}
    for draft in drafts:
        lines_total = totals.setdefault(flatten(draft.supplier_name), [0, 0])
        lines_total[0] += len(draft.lines)
        lines_total[1] += draft.total_paisa
    said = [
        tr.plural(
            "{supplier}: {count} line, {total} with sales tax",
            "{supplier}: {count} lines, {total} with sales tax",
            count,
            supplier=supplier,
            total=format_pkr(total),
        )
        for supplier, (count, total) in totals.items()
    ]
    if len(totals) > 1:
        grand = sum(total for _, total in totals.values())
        said.append(tr("Total: {total}", total=format_pkr(grand)))
    return said


def _what_next(hours: int, tr: Translator) -> str:
    return tr.plural(
        "Tap Submit to send it for approval, or Cancel. Submit works for {count} hour.",
        "Tap Submit to send it for approval, or Cancel. Submit works for {count} hours.",
        hours,
    )


def refused(problems: Sequence[Problem], *, tr: Translator = ENGLISH) -> str:
    """A typed request refused: every problem by its line in the message; nothing was kept."""
    return "\n".join([refusal(Refusing.SHEET, tr(TYPED_NAME), problems, tr=tr), tr(FIX_AND_SEND)])
