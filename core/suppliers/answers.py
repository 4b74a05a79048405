"""What a supplier answers from the link in a PO's e-mail: accept it (perhaps with a later
delivery date), decline it with a reason, or propose changes; and what the supplier's page
shows.

One answer per draft version: an accept or a decline is final, the same answer again changes
nothing, a different one is refused. A proposal stands until approvers decide on it; rejected,
the version it answered is open to an answer again. Opening the page records nothing the
supplier said (mail scanners open links), but it is evidence the e-mail arrived: a send of
unknown outcome whose link is used is settled as sent (core.suppliers.pages.settle_by_link).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.jobs.answers import (
    Answer,
    LineProposal,
    Outcome,
    Reply,
    SupplierReply,
    SupplierStatus,
)
from core.purchasing.po_document import PoDocument
from core.suppliers.links import SupplierLink

__all__ = [
    "Answer",
    "LineProposal",
    "Outcome",
    "Reply",
    "SupplierPage",
    "SupplierReply",
    "SupplierStatus",
]


@dataclass(frozen=True)
class SupplierPage:
    """What the supplier's page shows for one link: the PO as its PDF says, where it stands,
    the answer recorded (if any) and whether another may be given now."""

    link: SupplierLink
    document: PoDocument
    status: SupplierStatus
    answer: Answer | None
    can_answer: bool
    current_version: int = 0  # the PO's draft version now (a later one supersedes the link's)
    settled_unknown: bool = False  # this visit settled an ambiguous send as delivered
