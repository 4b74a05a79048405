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
