"""An approver's card as it is delivered and edited: what it shows now (the draft, its flags
and drift, the budget, the chain so far), whether it is still to be sent, and the edits every
delivered card of a job is owed when the job moves. Read when delivered, so a card for a
draft that no longer waits is not sent and an edit shows the decisions made so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

from core.approval.budgets import CategoryMonth, month_standings
from core.approval.policies import ApprovalPolicy, Decision, Policy
from core.approval.routes import drifts
from core.approval.standing import standing
from core.drafting.drafts import Draft, Flag
from core.jobs import proposals
from core.jobs.answers import Answer
from core.jobs.jobs import Job
from core.jobs.notices import (
    Notice,
    NoticeKind,
    NoticeStatus,
    card_edits_for,
    settle,
)
from core.jobs.states import State
from core.messaging.delivery import job_id_of
from core.people.users import called, name_of
from core.ports import ReadTx, Store, Tx


@dataclass(frozen=True)
class DriftLine:
    """A line priced above the drift tolerance of the draft's policy: its PRICE_CHANGED flag
    (the last sent PO's price, the price now; ref that PO), and when that PO was sent."""

    flag: Flag
    sent_at: datetime | None  # None: no sent PO of that number is found any more

    @property
    def percent(self) -> Decimal | None:
        """How far the price now is above the last PO's, in percent to one decimal; None if
        that PO had it for nothing."""
        return drift_percent(self.flag.amounts[0], self.flag.amounts[1])


_TENTH = Decimal("0.1")  # a drift is shown to one decimal place of a percent


def drift_percent(before: int, after: int) -> Decimal | None:
    """How far a price `after` is above one `before`, in percent to one decimal (below: less
    than 0); None if it was free before."""
    if before == 0:
        return None
    return (Decimal(after - before) * 100 / before).quantize(_TENTH, ROUND_HALF_UP)


@dataclass(frozen=True)
class CardFacts:
    """Everything a card of a waiting draft shows."""

    job: Job
    draft: Draft
    requester: str  # the requester's name as Telegram gave it, or their id
    sheet_name: str
    terms_imported_at: datetime | None
    approvals: int  # standing approvals in the waiting stage so far
    required: int  # approvals the waiting stage needs
    stage: int = 0  # the waiting stage of the route, from 0
    stages: int = 1  # stages on the route
    group: str = ""  # what the policy calls the waiting stage's group
    may_approve: frozenset[int] = frozenset()  # who may decide it now (Standing.may_approve)
    # The delegates who hold it for an approver away, and that approver's name (Standing.cards_to).
    holding_for: dict[int, str] = field(default_factory=dict)
    drifts: tuple[DriftLine, ...] = ()  # lines above the route's policy's drift tolerance
    # Each budgeted category the draft touches, its month as it stands now (core.approval.budgets).
    budgets: tuple[CategoryMonth, ...] = ()
    # A sent PO's supplier's proposal this draft is (core.jobs.proposals), and the version the
    # supplier has, that it changes: the card says "the supplier proposes" and shows what.
    proposal: Answer | None = None
    answered: Draft | None = None


@dataclass(frozen=True)
class CardOutcome:
    """What happened to a card that can no longer be tapped, for its headline."""

    job: Job
    draft: Draft  # the card's own draft version
    version: int
    decisions: tuple[Decision, ...]  # every decision on the job, oldest first
    names: dict[int, str]  # reviewers' names as Telegram gave them
    mine: tuple[Decision, ...]  # the card holder's decisions on this version
    tally: tuple[int, int]  # approvals so far and needed in the waiting stage, while it waits
    waiting: CardFacts | None = None  # while the draft waits: its stage, for a card of a chain
    holder: int = 0  # whose card it is


@dataclass(frozen=True)
class CardEdit:
    """One delivered card and what it should show now: the full card with its buttons while
    its approver may still tap it (`waiting`), else what happened (`outcome`)."""

    card: Notice
    waiting: CardFacts | None
    outcome: CardOutcome | None


async def card_to_send(
    store: Store, notice: Notice, now: datetime, policy: ApprovalPolicy
) -> CardFacts | None:
    """The card a CARD notice delivers; None, and the notice cancelled, if its draft was
    decided, expired or re-drafted before the card went out."""
    async with store.begin() as tx:
        job = await tx.job(job_id_of(notice))
        facts = await card_facts(tx, job, notice.draft_version, policy, now)
        if facts is None:
            await settle(tx, notice, NoticeStatus.CANCELLED, now)
        return facts


async def card_sent(
    store: Store, notice: Notice, message_id: int, shown: Job, now: datetime
) -> None:
    """A card went out showing `shown`; if the job was decided meanwhile, that decision's
    edits may have missed this card, so it is owed one more."""
    async with store.begin() as tx:
        attempts = notice.attempts + 1
        await settle(tx, notice, NoticeStatus.SENT, now, message_id=message_id, attempts=attempts)
        job = await tx.job(job_id_of(notice))
        if job.version != shown.version:
            await tx.insert_notice(card_edits_for(job, now, late_card=notice.user_id))


async def card_facts(
    tx: Tx, job: Job, version: int, policy: ApprovalPolicy, now: datetime
) -> CardFacts | None:
    """What a card of draft `version` shows at `now`, or None if that draft no longer waits."""
    if job.state is not State.AWAITING_APPROVAL or job.draft_version != version:
        return None
    assert job.draft_version is not None and job.total_paisa is not None
    draft = await tx.draft(job.id, job.draft_version)
    requester = await tx.telegram_user(job.requester_id)
    terms = await tx.terms_record(draft.terms_version)
    default = policy.default_policy
    where = await standing(tx, job, now, default)
    route, stage = where.route, min(where.tally.stage, len(where.route.stages) - 1)
    named = await tx.policy(route.policy_version) if route.policy_version else default
    group = route.stages[stage].group
    holding_for = {
        holder: await name_of(tx, delegator)
        for holder, delegator in where.cards_to.items()
        if delegator is not None
    }
    proposal = await proposals.proposal_of(tx, job)
    answered = None if proposal is None else await tx.draft(job.id, proposal.draft_version)
    return CardFacts(
        job=job,
        draft=draft,
        proposal=proposal,
        answered=answered,
        requester=called(requester, job.requester_id),
        sheet_name=str(job.source_versions.get("sheet_name", job.input_ref)),
        terms_imported_at=terms["imported_at"] if terms else None,
        approvals=len(where.tally.counted[stage]) if stage < len(where.tally.counted) else 0,
        required=route.stages[stage].approvals,
        stage=stage,
        stages=len(route.stages),
        group=named.title(group) if named else group,
        may_approve=where.may_approve,
        holding_for=holding_for,
        drifts=await drift_lines(tx, draft, named),
        budgets=await month_standings(tx, named, draft.lines, now, policy.zone),
    )


async def drift_lines(tx: ReadTx, draft: Draft, policy: Policy | None) -> tuple[DriftLine, ...]:
    """The draft's lines above its policy's drift tolerance, each with its last PO's sent date.
    The date is read here, from that PO's job (SENT is final, so the job's last change is its
    sending), not carried in the flag: flags are part of the draft's hash, and a date the
    approver is shown to place the price needs no new hash. One read per PO compared with,
    and only for a card with drifted lines."""
    flags = drifts(draft.flags, policy.drift if policy else None)
    sent: dict[str, datetime | None] = {}
    for ref in sorted({flag.ref for flag in flags}):
        job = await tx.job_by_po(ref)
        sent[ref] = job.updated_at if job is not None and job.state is State.SENT else None
    return tuple(DriftLine(flag, sent[flag.ref]) for flag in flags)


async def card_edits(
    store: Store, job_id: str, policy: ApprovalPolicy, now: datetime
) -> list[CardEdit]:
    """Each delivered card of the job with what it should show now: the full card while its
    approver may still tap it, else what happened."""
    async with store.begin() as tx:
        job = await tx.job(job_id)
        cards = [
            n
            for n in await tx.notices_for(job_id)
            if n.kind is NoticeKind.CARD and n.status is NoticeStatus.SENT and n.message_id
        ]
        decisions = tuple(await tx.decisions(job_id))
        names = {}
        for reviewer in {d.reviewer_id for d in decisions} | {d.capacity for d in decisions}:
            names[reviewer] = await name_of(tx, reviewer)
        waiting: dict[int, CardFacts | None] = {}
        drafts: dict[int, Draft] = {}
        for version in {card.draft_version for card in cards}:  # a card shows its version's
            facts = waiting[version] = await card_facts(tx, job, version, policy, now)
            drafts[version] = facts.draft if facts else await tx.draft(job.id, version)
    edits = []
    for card in cards:
        version, facts = card.draft_version, waiting[card.draft_version]
        mine = tuple(  # theirs, or their delegate's for them
            d
            for d in decisions
            if d.draft_version == version and card.user_id in (d.reviewer_id, d.on_behalf_of)
        )
        if facts is not None and not mine and card.user_id in facts.may_approve:
            edits.append(CardEdit(card, facts, None))  # they may still tap: keep the buttons
            continue
        # Decided, expired, superseded, or (in a chain) no longer this approver's stage.
        tally = (facts.approvals, facts.required) if facts else (0, 1)
        outcome = CardOutcome(
            job, drafts[version], version, decisions, names, mine, tally, facts, card.user_id
        )
        edits.append(CardEdit(card, None, outcome))
    return edits
