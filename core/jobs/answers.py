"""A supplier's answers to a PO, as values: what the supplier pressed on the page behind the
link in the PO's e-mail (core.suppliers), as recorded, and where a sent PO stands with its
supplier. The jobs layer keeps them so that notices and the store can name them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from core.jobs.effects import EffectKind, EffectStatus
from core.jobs.states import State

if TYPE_CHECKING:
    from core.jobs.jobs import Effect, Job
    from core.ports import ReadTx


class Reply(StrEnum):
    """What the supplier pressed: the form's `answer` field."""

    ACCEPT = "accept"
    DECLINE = "decline"
    PROPOSE = "propose"


class SupplierStatus(StrEnum):
    """Where a sent PO stands with its supplier (`jobs show --json`'s supplier.status)."""

    AWAITING = "awaiting"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    CHANGES_PROPOSED = "changes_proposed"
    SUPERSEDED = "superseded"  # a later version of the PO went out, or is being decided
    CANCELLED = "cancelled"  # the PO was called off


class Outcome(StrEnum):
    """What became of an answer: it stands, or (a proposal) approvers decided on it."""

    STANDS = "stands"
    APPROVED = "approved"  # a proposal made into a new version, sent to the supplier
    REJECTED = "rejected"  # a proposal turned down: the version it answered stands again


@dataclass(frozen=True)
class LineProposal:
    """One line the supplier would change: `line` numbers the PO's lines from 1; `quantity`
    is lower than ordered (0: cannot supply it), `unit_price_paisa` differs; None: as is."""

    line: int
    quantity: int | None = None
    unit_price_paisa: int | None = None


@dataclass(frozen=True)
class SupplierReply:
    """A POST from the supplier's page, naming the version and hash the page showed."""

    reply: Reply
    draft_version: int
    hash_prefix: str
    delivery_date: date | None = None  # accept or propose: a later date than the PO's
    reason: str = ""  # decline: why (required)
    note: str = ""  # propose: anything else the supplier says
    lines: tuple[LineProposal, ...] = ()


@dataclass(frozen=True)
class Answer:
    """An answer as recorded: what, when, from which e-mail's link, and its fate."""

    job_id: str
    draft_version: int
    round: int  # 1, then 2 after a proposal of round 1 was rejected, …
    reply: Reply
    key: str  # the idempotency key of the e-mail whose link was used
    answered_at: datetime
    delivery_date: date | None = None
    reason: str = ""
    note: str = ""
    lines: tuple[LineProposal, ...] = ()
    outcome: Outcome = Outcome.STANDS
    proposal_version: int | None = None  # a proposal's new draft version
    decided_at: datetime | None = None

    @property
    def status(self) -> SupplierStatus:
        """Where the answer leaves the PO with its supplier."""
        return _STATUS_OF[self.reply]


_STATUS_OF = {
    Reply.ACCEPT: SupplierStatus.ACCEPTED,
    Reply.DECLINE: SupplierStatus.DECLINED,
    Reply.PROPOSE: SupplierStatus.CHANGES_PROPOSED,
}


async def awaiting_answer(tx: ReadTx, job: Job) -> Effect | None:
    """The e-mail whose supplier has not answered it yet, if `job` waits for one: SENT, at the
    version that went, with no answer standing for it (a proposal turned down stands no
    more). None once they answered, or if the PO is not SENT (being replaced, called off, or
    never sent)."""
    if job.state is not State.SENT or job.draft_version is None:
        return None
    sends = [
        e
        for e in await tx.effects_for(job.id)
        if e.kind == EffectKind.SEND_PO
        and e.status is EffectStatus.SUCCEEDED
        and e.draft_version == job.draft_version
    ]
    if not sends:
        return None
    answers = [a for a in await tx.supplier_answers(job.id) if a.draft_version == job.draft_version]
    if answers and answers[-1].outcome is not Outcome.REJECTED:
        return None
    return sends[-1]
