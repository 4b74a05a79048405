"""Why a purchase order could not be cancelled, in the reader's language: core's CancelRefused
carries the PO, its state and the reason (core.errors.CancelRefusal), and this says them; the
CLI prints the same sentences in English."""

from __future__ import annotations

from bot.words.i18n import ENGLISH, N_, Translator
from core.errors import CancelRefusal, CancelRefused

# One sentence per reason; {po} is the PO number, {state} the state it is in.
CANCEL_REFUSALS: dict[CancelRefusal, str] = {
    CancelRefusal.REASON_REQUIRED: N_(
        "{po} was sent to the supplier: cancelling it needs a reason, which goes in the "
        "cancellation e-mail."
    ),
    CancelRefusal.ALREADY_CANCELLED: N_("{po} is already cancelled."),
    CancelRefusal.CALLED_OFF_ALREADY: N_(
        "{po} is already being cancelled ({state}), for another reason."
    ),
    CancelRefusal.IN_FLIGHT: N_(
        "{po} cannot be cancelled now: its e-mail is going out, or may have gone ({state}). "
        "Cancel it once it is sent, or settle it in the review queue first."
    ),
    CancelRefusal.CLOSED: N_("{po} was rejected: there is nothing to cancel."),
    CancelRefusal.CHANGED: N_("{po} changed since this was shown: ask to cancel it again."),
}


def cancel_refusal(refused: CancelRefused, *, tr: Translator = ENGLISH) -> str:
    """Why `refused`'s PO was not cancelled, as a sentence."""
    return tr(CANCEL_REFUSALS[refused.why], po=refused.po_number, state=refused.state)
