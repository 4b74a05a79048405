"""Everything the Mini App's page and API say, as msgids of the bot's catalogues (bot.words.i18n):
the page's labels, and what a decision it sends is refused with. The page has no words of its
own: bot.web.views hands it these, translated."""

from __future__ import annotations

from bot.telegram.cards import APPROVE_TEXT, REJECT_TEXT
from bot.telegram.decisions import EXPIRED
from bot.words.i18n import N_
from core.errors import EditProblem

# What the page says when the draft it showed is not the current one any more.
CHANGED = N_("This PO changed — review it again")
REASON_FOR_BUDGET = N_("This approval goes over a monthly budget: write your reason, then approve.")
NOT_FOUND = N_("There is no purchase order {po} for you to see.")
# Why an edit cannot be made ({line}: the line it names).
EDIT_REFUSED = {
    EditProblem.UNKNOWN_LINE: N_("Line {line} is not in this PO."),
    EditProblem.DUPLICATE_LINE: N_("Line {line} is changed twice."),
    EditProblem.ABOVE_SHOWN: N_(
        "Line {line}: a quantity can only be lowered; a larger order is a new sheet from the "
        "requester."
    ),
    EditProblem.NEGATIVE: N_("Line {line}: a quantity cannot be below 0."),
    EditProblem.NOTHING_LEFT: N_("Every line is dropped: reject the PO instead."),
    EditProblem.NO_CHANGE: N_("Nothing is changed: approve it as it is."),
}
NOT_REGISTERED = N_("You are not registered. Send me /start to get the id your admin needs.")
# The page's own words: its buttons and the states of a decision it sends.
LABELS = {
    "search": N_("Search the lines"),
    "no_match": N_("No line matches."),
    "quantity": N_("Quantity"),
    "drop": N_("Drop"),
    "keep": N_("Keep"),
    "approve": APPROVE_TEXT,
    "approve_with_changes": N_("✏️ Approve with changes"),
    "reject": REJECT_TEXT,
    "reason": N_("The reason, for the requester"),
    "reason_needed": N_("Write the reason first."),
    "reason_for_budget": REASON_FOR_BUDGET,
    "queued": N_("Queued — not sent yet"),
    "sign_in_again": N_("Queued — open this PO from its card again to send it."),
    "offline": N_("Offline: this is the PO as it was last loaded."),
    "changed": CHANGED,
    "expired": EXPIRED,
    "flags": N_("Flags"),
    "budgets": N_("Budgets"),
    "evidence": N_("Evidence"),
    "chain": N_("Approvals"),
    "pdf": N_("📄 PDF to my chat"),
}
# The answers to the PDF button (bot.web.miniapp.MiniApp.pdf).
PDF_SENT = N_("The PDF is in your chat with the bot.")
NO_BOT = N_("The bot is not running here, so it cannot send the PDF; try again shortly.")

# The catalogue page (bot.web.catalogue, bot.web.requests): what a request from it is called
# in the chat's answer, as a sheet is called by its file's name.
CATALOGUE_REQUEST = N_("Your catalogue request")
NOT_A_REQUESTER = N_("Only requesters and admins can order from the catalogue.")
NO_TERMS = N_("No supplier terms are in force yet: ask an admin to import them.")
# The catalogue page's words: name -> (text, the placeholders the page fills in).
CATALOGUE_LABELS: dict[str, tuple[str, tuple[str, ...]]] = {
    "title": (N_("New request"), ()),
    "search": (N_("Search by SKU, description or category"), ()),
    "no_match": (N_("Nothing in the catalogue matches."), ()),
    "more": (N_("Showing {shown} of {count}: type more to narrow it down."), ("shown", "count")),
    "add": (N_("Add"), ()),
    "min_max": (N_("Min {min}, max {max}"), ("min", "max")),
    "min_only": (N_("Min {min}"), ("min",)),
    "lead": (N_("Lead time (days): {days}"), ("days",)),
    "cart": (N_("Cart"), ()),
    "cart_empty": (N_("The cart is empty: search above and add what you need."), ()),
    "quantity": (N_("Quantity"), ()),
    "note": (N_("Note for this line (optional)"), ()),
    "remove": (N_("Remove"), ()),
    "branch": (N_("Deliver to"), ()),
    "needed_by": (N_("Needed by"), ()),
    "total": (N_("Total: {amount}"), ("amount",)),
    "submit": (N_("Send for approval"), ()),
    "sending": (N_("Sending…"), ()),
    "queued": (N_("Queued — not sent yet"), ()),
    "sign_in_again": (N_("Queued — open the catalogue from the bot again to send it."), ()),
    "offline": (N_("Offline: this is the catalogue as it was last loaded."), ()),
    "budgets": (N_("Budget left this month"), ()),
    "budget_line": (N_("{category}: {left} left of {budget}"), ("category", "left", "budget")),
    "recent": (N_("Order again"), ()),
    "order_again": (N_("Order again"), ()),
    "loaded": (N_("{po} is in the cart at today's prices."), ("po",)),
    "skipped": (N_("No longer offered, left out: {skus}"), ("skus",)),
    "no_terms": (NO_TERMS, ()),
}
# A second cart while the first is still being checked (as a sheet's SHEET_IN_FLIGHT).
IN_FLIGHT = N_("Your previous request is still being checked; this one is sent again shortly.")
