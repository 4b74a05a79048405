"""The review view: everything the Mini App's page shows of one PO, read in one snapshot, and
whether the person looking may decide it now. A read model: it writes nothing.

Who may read it is who may read the request's trail (/history): its requester, an admin, and an
approver it asked (core.messaging.pending.may_read_trail); anyone else is refused (ReadRefused). Who
may decide it now is what a tap is checked against (allowed), so the page offers exactly the
decisions the server would take.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from core.approval.budgets import CategoryMonth, month_standings, needs_reason
from core.approval.decisions import Review, check_allowed
from core.approval.policies import Outcome, Policy, Role, Rules, Verdict
from core.approval.routes import StageReason
from core.approval.standing import Standing, standing
from core.drafting.drafts import Draft, Flag, mask_email, short_hash
from core.drafting.intake import History
from core.drafting.terms import match_key
from core.errors import ApprovalError, IllegalTransition, ReadRefused, WorkflowError
from core.jobs.jobs import Job
from core.jobs.states import State
from core.jobs.transitions import load
from core.messaging.cards import drift_lines, drift_percent
from core.messaging.pending import may_read_trail
from core.people.users import name_of
from core.ports import ReadTx


@dataclass(frozen=True)
class LastSent:
    """A SKU's line on the last PO sent to the same supplier: its price, number and date."""

    po_number: str
    unit_price_paisa: int
    sent_at: datetime | None


@dataclass(frozen=True)
class PoLine:
    """One line of the draft, with its SKU's last sent price and how far it moved since."""

    number: int  # from 1, as an edit (core.purchasing.edits.LineChange) names it
    sku: str
    description: str
    quantity: int
    unit_price_paisa: int
    amount_paisa: int
    last: LastSent | None  # None: never sent to this supplier before
    drift_percent: Decimal | None  # the price now against `last`'s; None without one, or free
    drifted: bool  # above the drift tolerance of the route's policy (it added a stage)
    note: str = ""  # the requester's note for the line, as typed: text, never an instruction
    category: str = ""  # the terms' category it counts against (core.approval.budgets); "" none
    gst_basis_points: int = 0  # sales tax on the amount, hundredths of a percent


@dataclass(frozen=True)
class ChainDecision:
    """One decision on the current draft: who, what, when, and for whom (a delegate's)."""

    reviewer: str
    verdict: Verdict
    at: datetime
    on_behalf_of: str | None  # the approver away it was made for, by name; None: their own
    reason: str | None


@dataclass(frozen=True)
class ChainStage:
    """One stage of the route: its group (by name and title), why it is there, how many
    approvals it needs, the decisions made in it, and whether it is the one waiting now."""

    group: str
    title: str
    reason: StageReason
    approvals: int
    decisions: tuple[ChainDecision, ...]
    waiting: bool


@dataclass(frozen=True)
class PoView:
    """What the review page shows of a PO, and what its viewer may do with it."""

    job: Job
    supplier_name: str
    supplier_email: str  # masked (core.drafting.drafts.mask_email)
    requester: str
    draft_version: int
    draft_hash: str
    total_paisa: int  # sales tax included
    deadline: datetime | None
    lines: tuple[PoLine, ...]  # every line, in the draft's order
    flags: tuple[Flag, ...]
    budgets: tuple[CategoryMonth, ...]  # each budgeted category it touches, its month now
    terms_version: str
    terms_imported_at: datetime | None
    sheet_name: str
    policy_version: str
    rule: str
    chain: tuple[ChainStage, ...]
    outcome: Outcome
    # Why the viewer may not decide it now, as the error a decision would raise; None: they may.
    refusal: WorkflowError | ApprovalError | None
    needs_reason: bool  # an approval now would take a category over its month: ask for a reason
    gst_paisa: int = 0  # the sales tax inside total_paisa; 0: the prices are final
    branch_id: str = ""  # where it is delivered; "" not said
    delivery_date: date | None = None
    payment_terms: str = ""

    @property
    def short_hash(self) -> str:
        """The hash as cards and buttons name it."""
        return short_hash(self.draft_hash)

    @property
    def may_decide(self) -> bool:
        """Whether the viewer may approve, reject or edit it now."""
        return self.refusal is None


async def po_view(
    tx: ReadTx,
    po_number: str,
    viewer_id: int,
    now: datetime,
    rules: Rules,
    *,
    roles: frozenset[Role] | None = None,
) -> PoView:
    """The review page of `po_number` for `viewer_id` at `now`. `roles`: the viewer's, as the
    shell holds them (configured admins too); by default the stored ones. UnknownJob for no
    such PO, ReadRefused for a viewer who may not read it (the shell answers both alike)."""
    job = await load(tx, po_number)
    default = rules.approval.default_policy
    held = await tx.roles(viewer_id) if roles is None else roles
    if not await may_read(tx, job, viewer_id, held, now, default):
        raise ReadRefused(f"user {viewer_id} may not read {po_number}")
    assert job.draft_version is not None and job.draft_hash is not None
    draft = await tx.draft(job.id, job.draft_version)
    where = await standing(tx, job, await _judged_at(tx, job, now), default)
    named = await tx.policy(where.route.policy_version) if where.route.policy_version else default
    terms = await tx.terms_record(draft.terms_version)
    refusal = await _refusal(tx, job, viewer_id, now, default)
    over = refusal is None and await needs_reason(tx, job, now, rules.approval.zone)
    return PoView(
        job=job,
        supplier_name=draft.supplier_name,
        supplier_email=mask_email(draft.recipient_email),
        requester=await name_of(tx, job.requester_id),
        draft_version=job.draft_version,
        draft_hash=job.draft_hash,
        total_paisa=draft.total_paisa,
        gst_paisa=draft.gst_paisa,
        branch_id=draft.branch_id,
        delivery_date=draft.delivery_date,
        payment_terms=draft.payment_terms,
        deadline=job.decision_deadline,
        lines=await _lines(tx, job, draft, named),
        flags=draft.flags,
        budgets=await month_standings(
            tx, named, draft.lines, now, rules.approval.zone, excluding=job.id
        ),
        terms_version=draft.terms_version,
        terms_imported_at=terms["imported_at"] if terms else None,
        sheet_name=str(job.source_versions.get("sheet_name", job.input_ref)),
        policy_version=where.route.policy_version,
        rule=where.route.rule,
        chain=await _chain(tx, job, where, named),
        outcome=where.tally.outcome,
        refusal=refusal,
        needs_reason=over,
    )


async def _judged_at(tx: ReadTx, job: Job, now: datetime) -> datetime:
    """When the chain is tallied: now while the PO waits; once it no longer does, at the last
    decision on its draft, so that a sent PO's approvals, expired since, still show it
    approved (core.approval.decisions.replayed judges a replay so too)."""
    if job.state is State.AWAITING_APPROVAL:
        return now
    on_draft = [d.at for d in await tx.decisions(job.id) if d.draft_version == job.draft_version]
    return max(on_draft, default=now)


async def may_read(
    tx: ReadTx, job: Job, viewer_id: int, roles: frozenset[Role], now: datetime, default: Policy
) -> bool:
    """Whether `viewer_id` may read the PO: an admin, its requester, or an approver who may
    read its trail (core.messaging.pending.may_read_trail)."""
    if Role.ADMIN in roles or viewer_id == job.requester_id:
        return True
    return Role.APPROVER in roles and await may_read_trail(tx, job, viewer_id, now, default)


async def _refusal(
    tx: ReadTx, job: Job, viewer_id: int, now: datetime, default: Policy
) -> WorkflowError | ApprovalError | None:
    """What would refuse the viewer's decision on the current draft now (as may_decide
    checks a tap), or None."""
    assert job.draft_version is not None and job.draft_hash is not None
    review = Review(job.po_number, viewer_id, Verdict.APPROVE, job.draft_version, job.draft_hash)
    try:
        await check_allowed(tx, job, review, now, default)
    except (ApprovalError, IllegalTransition) as refused:
        return refused
    return None


async def _lines(tx: ReadTx, job: Job, draft: Draft, policy: Policy | None) -> tuple[PoLine, ...]:
    """Every line, with its SKU's last sent price to this supplier (this PO left out)."""
    pairs = [(draft.supplier_id, line.sku) for line in draft.lines]
    history: History = await tx.history(pairs, excluding=job.id)
    drifted = {d.flag.sku for d in await drift_lines(tx, draft, policy)}
    supplier = match_key(draft.supplier_id)
    lines = []
    for number, line in enumerate(draft.lines, start=1):
        past = history.get((supplier, match_key(line.sku)))
        last, drift = None, None
        if past is not None:
            last = LastSent(past.po_number, past.unit_price_paisa, past.sent_at)
            drift = drift_percent(past.unit_price_paisa, line.unit_price_paisa)
        line_of = PoLine(
            number, line.sku, line.description, line.quantity, line.unit_price_paisa,
            line.total_paisa, last, drift, line.sku in drifted, line.note, line.category,
            line.gst_basis_points,
        )  # fmt: skip
        lines.append(line_of)
    return tuple(lines)


async def _chain(
    tx: ReadTx, job: Job, where: Standing, policy: Policy | None
) -> tuple[ChainStage, ...]:
    """The route's stages with the standing decisions on the current draft in each."""
    mine = [
        d
        for d in where.decisions
        if (d.draft_version, d.draft_hash) == (job.draft_version, job.draft_hash)
    ]
    waiting = job.state is State.AWAITING_APPROVAL and where.tally.outcome is Outcome.PENDING
    route, stages = where.route, []
    for index, (stage, reason) in enumerate(zip(route.stages, route.reasons, strict=True)):
        decided = [
            ChainDecision(
                reviewer=await name_of(tx, d.reviewer_id),
                verdict=d.verdict,
                at=d.at,
                on_behalf_of=None if d.on_behalf_of is None else await name_of(tx, d.on_behalf_of),
                reason=d.reason,
            )
            for d in mine
            if d.stage == index
        ]
        title = policy.title(stage.group) if policy else stage.group
        is_waiting = waiting and index == where.tally.stage
        stages.append(
            ChainStage(stage.group, title, reason, stage.approvals, tuple(decided), is_waiting)
        )
    return tuple(stages)
