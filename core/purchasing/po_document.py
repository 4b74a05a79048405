"""What a purchase-order document says: the PDF a supplier gets with the e-mail, and the DRAFT
one an approver opens before deciding. Plain values, made from a draft, the company version it
cites and the approvals that authorised it; the shell renders them (bot.documents)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, tzinfo

from core.approval.policies import Verdict
from core.approval.routes import Route
from core.company.company import UNNAMED_BUYER, Branch, Buyer, Company
from core.drafting.drafts import Draft, DraftLine, draft_hash, sales_tax
from core.jobs.effects import send_po_key
from core.jobs.jobs import Job
from core.people.users import name_of
from core.ports import ReadTx


@dataclass(frozen=True)
class Signature:
    """One approval that authorised the PO: who, when (aware, in the buyer's time zone), and
    the stage of the policy it satisfied ("" under the default policy)."""

    name: str
    at: datetime
    stage: str = ""


@dataclass(frozen=True)
class TaxLine:
    """The sales tax of the lines taxed at one rate (hundredths of a percent)."""

    basis_points: int
    base_paisa: int
    tax_paisa: int

    @property
    def percent(self) -> str:
        """The rate as people write it: 1800 -> "18", 1750 -> "17.5"."""
        whole, rest = divmod(self.basis_points, 100)
        return f"{whole}" if not rest else f"{whole}.{rest:02d}".rstrip("0")


@dataclass(frozen=True)
class PoDocument:
    """Everything the PO document prints, in the order a supplier reads it."""

    po_number: str
    draft_version: int
    issued: date  # the day it is dated, in the buyer's time zone
    buyer: Buyer  # without a company file: UNNAMED_BUYER
    supplier_id: str
    supplier_name: str
    supplier_email: str
    ship_to: Branch | None  # None: no company file, or a draft made before branches
    delivery_date: date | None
    payment_terms: str
    terms_version: str
    lines: tuple[DraftLine, ...]
    subtotal_paisa: int
    taxes: tuple[TaxLine, ...]  # by rate; empty: the prices are final
    total_paisa: int
    approvals: tuple[Signature, ...]
    key: str  # the business action it is sent under: send-po:<PO>:v<n>:<hash>
    draft: bool  # not approved yet: every page is marked DRAFT
    # The supplier's link (core.suppliers.links), printed with its QR code; "" prints none:
    # a DRAFT, or no page for suppliers (MANZOORI_PUBLIC_URL unset).
    link: str = ""

    @property
    def gst_paisa(self) -> int:
        """The sales tax of every rate together."""
        return sum(tax.tax_paisa for tax in self.taxes)


def po_document(
    draft: Draft,
    draft_version: int,
    *,
    company: Company | None,
    issued: date,
    approvals: tuple[Signature, ...],
    key: str,
    approved: bool,
    link: str = "",
) -> PoDocument:
    """The document of one draft version. `company` is the version the draft cites (None if it
    cites none): its buyer and the delivery branch; without one, UNNAMED_BUYER. `link` is the
    supplier's link of the e-mail it goes with ("" none)."""
    buyer = company.buyer if company is not None else UNNAMED_BUYER
    branch_id = draft.branch_id or (company.default_branch if company is not None else "")
    ship_to = company.branch(branch_id) if company is not None and branch_id else None
    return PoDocument(
        po_number=draft.po_number,
        draft_version=draft_version,
        issued=issued,
        buyer=buyer,
        supplier_id=draft.supplier_id,
        supplier_name=draft.supplier_name,
        supplier_email=draft.recipient_email,
        ship_to=ship_to,
        delivery_date=draft.delivery_date,
        payment_terms=draft.payment_terms,
        terms_version=draft.terms_version,
        lines=draft.lines,
        subtotal_paisa=draft.subtotal_paisa,
        taxes=taxes(draft.lines),
        total_paisa=draft.total_paisa,
        approvals=approvals,
        key=key,
        draft=not approved,
        link=link,
    )


def taxes(lines: tuple[DraftLine, ...]) -> tuple[TaxLine, ...]:
    """The lines' sales tax by rate, lowest rate first; untaxed lines are left out. Each line's
    tax is rounded on its own (DraftLine.gst_paisa), so the rates add up to Draft.gst_paisa."""
    bases: dict[int, list[DraftLine]] = {}
    for line in lines:
        if line.gst_basis_points:
            bases.setdefault(line.gst_basis_points, []).append(line)
    return tuple(
        TaxLine(
            rate,
            sum(line.total_paisa for line in taxed),
            sum(sales_tax(line.total_paisa, rate) for line in taxed),
        )
        for rate, taxed in sorted(bases.items())
    )


async def document_of(
    tx: ReadTx,
    job: Job,
    version: int,
    *,
    approved: bool,
    zone: tzinfo,
    now: datetime,
    link: str = "",
) -> PoDocument:
    """The document of a job's draft `version`: `approved` (the one e-mailed, dated the day of
    its approval), else a DRAFT dated today for an approver to read before deciding; signed by
    the approvals of this version so far, each named and timed in `zone`. `link` is the
    supplier's link of the e-mail it goes with ("" none)."""
    draft = await tx.draft(job.id, version)
    # A draft made before the company file existed names no version: the buyer's name alone.
    company = await tx.company(draft.company_version) if draft.company_version else None
    stages = Route.from_plain(job.route).stages if job.route else ()
    signatures = []
    for decision in await tx.decisions(job.id):
        if decision.draft_version != version or decision.verdict is not Verdict.APPROVE:
            continue
        stage = stages[decision.stage].group if decision.stage < len(stages) else ""
        name = await name_of(tx, decision.reviewer_id)
        signatures.append(Signature(name, decision.at.astimezone(zone), stage))
    dated = job.approved_at if approved and job.approved_at is not None else now
    return po_document(
        draft,
        version,
        company=company,
        issued=dated.astimezone(zone).date(),
        approvals=tuple(signatures),
        key=send_po_key(draft.po_number, version, draft_hash(draft)),
        approved=approved,
        link=link,
    )
