"""The supplier's page behind the link in a PO's e-mail: what it shows (open_page) and the
answer given on it (answer), each checked against the PO as it stands now.

Opening the page is evidence that the e-mail arrived, nothing more: it records nothing the
supplier said, but a send of unknown outcome whose link is used is settled as sent by it
(settle_by_link). An answer is recorded in one transaction with its audit event and the news
owed to the requester and the PO's approvers.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, tzinfo
from typing import Any

from core.approval.policies import Rules, Verdict
from core.drafting.drafts import Draft
from core.errors import AnswerProblem, AnswerRefused, DraftPurged, UnknownJob
from core.jobs import notices, proposals
from core.jobs.effects import EffectKind, EffectStatus
from core.jobs.jobs import AuditEvent, Effect, Job, Stamp
from core.jobs.sends import release
from core.jobs.states import CALLING_OFF, Action, State
from core.jobs.transitions import move, retry_on_stale
from core.ports import ReadTx, Store, Tx
from core.purchasing.po_document import document_of
from core.suppliers.answers import (
    Answer,
    LineProposal,
    Outcome,
    Reply,
    SupplierPage,
    SupplierReply,
    SupplierStatus,
)
from core.suppliers.links import SupplierLink
from core.suppliers.proposals import propose_in

REASON_LIMIT = 500  # characters of a decline's reason
NOTE_LIMIT = 1000  # characters of a proposal's note

# The audit action of an accept or a decline (a proposal's is the job's move).
AUDIT_ACTIONS = {Reply.ACCEPT: "supplier_accept", Reply.DECLINE: "supplier_decline"}
# What settled an ambiguous send: the link was opened, or an answer was given through it.
OPENED, ANSWERED = "opened", "answered"


def actor_of(job: Job) -> str:
    """Who a supplier's act is stamped as, in the audit trail."""
    return f"supplier:{job.supplier_id or '?'}"


async def open_page(store: Store, link: SupplierLink, now: datetime, zone: tzinfo) -> SupplierPage:
    """The page of `link` as things stand; UnknownJob if the PO, the e-mail or its draft are
    gone (never sent, or purged). Settles the e-mail's send if its outcome was unknown."""
    async with store.reading() as tx:
        job, effect = await _sent(tx, link)
    settled = False
    if _settles(job, effect, link):
        settled = await settle_by_link(store, link, now, OPENED)
    async with store.reading() as tx:
        job, effect = await _sent(tx, link)
        page = await _page(tx, job, effect, link, now, zone)
    return replace(page, settled_unknown=settled)


@retry_on_stale
async def settle_by_link(store: Store, link: SupplierLink, now: datetime, how: str) -> bool:
    """Settle the send of the e-mail that carried `link` as delivered, if its outcome is still
    unknown: the supplier has the e-mail, since they used its link. Whether this settled it."""
    async with store.begin() as tx:
        job, effect = await _sent(tx, link)
        if not _settles(job, effect, link):
            return False
        await _settle_in(tx, job, effect, Stamp(actor_of(job), now), how)
        return True


async def _settle_in(tx: Tx, job: Job, effect: Effect, stamp: Stamp, how: str) -> Job:
    """The send of `effect` settled as sent by its link (inside the caller's transaction)."""
    evidence = f"the supplier's link in this e-mail was {how}"
    result = {"settled_by": "supplier_link", "evidence": how, "at": stamp.at.isoformat()}
    detail = {"key": effect.key, "evidence": evidence, "by": "supplier_link"}
    # The job first: of two visits at once, the second loses its compare-and-set there
    # (StaleJob, and settle_by_link reads again), never half-way, on the outbox row.
    moved = await move(tx, job, Action.RECONCILE_SENT, stamp, detail)
    await release(tx, effect, stamp.at, status=EffectStatus.SUCCEEDED, result=result)
    await tx.insert_notice(notices.alert_for(moved, stamp.at, notices.SETTLED_BY_LINK))
    return moved


@retry_on_stale
async def answer(
    store: Store,
    link: SupplierLink,
    reply: SupplierReply,
    now: datetime,
    zone: tzinfo,
    rules: Rules,
) -> SupplierPage:
    """Record the supplier's answer to the version `link` names, or raise AnswerRefused; the
    same answer again changes nothing. A proposal goes to the approvers as a new draft version
    (core.suppliers.proposals). The page as it stands after it."""
    async with store.begin() as tx:
        job, effect = await _sent(tx, link)
        stamp = Stamp(actor_of(job), now)
        settled = _settles(job, effect, link)
        if settled:
            job = await _settle_in(tx, job, effect, stamp, ANSWERED)
            effect = await tx.effect(effect.key)
        draft = await tx.draft(job.id, link.draft_version)
        # One read of the answers both judges the reply and numbers its round: of two
        # answers at once, the later then takes the same round and loses its insert
        # (InsertConflict, and the next attempt is refused), never a round of its own.
        answers = await tx.supplier_answers(job.id)
        given = _refusal(job, effect, link, reply, draft, answers)
        if given is None:
            recorded = await _record(tx, job, link, reply, draft, stamp, answers)
            if recorded.reply is Reply.PROPOSE:
                job = await propose_in(tx, job, recorded, draft, stamp, rules)
        page = await _page(tx, job, effect, link, now, zone)
    return replace(page, settled_unknown=settled)


def _refusal(
    job: Job,
    effect: Effect,
    link: SupplierLink,
    reply: SupplierReply,
    draft: Draft,
    answers: list[Answer],
) -> Answer | None:
    """The answer already standing that `reply` repeats (nothing to record), None if `reply`
    is to be recorded; AnswerRefused if it cannot be."""
    if (reply.draft_version, reply.hash_prefix) != (link.draft_version, link.hash_prefix):
        raise AnswerRefused(AnswerProblem.STALE, "This form is of another version of the order.")
    status = _standing_status(job, effect, link, answers)
    if status is SupplierStatus.CANCELLED:
        raise AnswerRefused(AnswerProblem.CANCELLED, "This order was cancelled.")
    if status is SupplierStatus.SUPERSEDED:
        raise AnswerRefused(
            AnswerProblem.SUPERSEDED, f"This order was replaced by version {job.draft_version}."
        )
    standing = _standing(answers, link.draft_version)
    if standing is not None:
        if _same(standing, reply, draft):
            return standing
        if standing.reply is Reply.PROPOSE:
            raise AnswerRefused(
                AnswerProblem.UNDER_REVIEW, "Your proposed changes are with the buyer's approvers."
            )
        raise AnswerRefused(
            AnswerProblem.ANSWERED, f"This order was already {standing.status.value}."
        )
    check_reply(reply, draft)
    return None


def check_reply(reply: SupplierReply, draft: Draft) -> None:
    """AnswerRefused if `reply` cannot stand as an answer to `draft`: a decline with no
    reason, a date before the PO's, a proposal that changes nothing or orders more."""
    if len(reply.reason) > REASON_LIMIT or len(reply.note) > NOTE_LIMIT:
        raise AnswerRefused(AnswerProblem.TOO_LONG, "The reason or note is too long.")
    if reply.reply is Reply.DECLINE and not reply.reason.strip():
        raise AnswerRefused(AnswerProblem.REASON_REQUIRED, "Please say why you decline.")
    promised = draft.delivery_date
    if reply.delivery_date is not None and promised is not None and reply.delivery_date < promised:
        raise AnswerRefused(
            AnswerProblem.DATE_TOO_EARLY,
            f"The delivery date cannot be before the order's, {promised.isoformat()}.",
        )
    if reply.reply is Reply.PROPOSE:
        _check_proposal(reply, draft)


def _check_proposal(reply: SupplierReply, draft: Draft) -> None:
    """A proposal changes something: a line's quantity (lower) or price, or a later date."""
    changed = reply.delivery_date is not None and reply.delivery_date != draft.delivery_date
    seen: set[int] = set()
    for proposal in reply.lines:
        if not 1 <= proposal.line <= len(draft.lines) or proposal.line in seen:
            raise AnswerRefused(AnswerProblem.BAD_LINE, "No such line.", line=proposal.line)
        seen.add(proposal.line)
        ordered = draft.lines[proposal.line - 1]
        if proposal.quantity is not None:
            if proposal.quantity < 0:
                raise AnswerRefused(
                    AnswerProblem.BAD_LINE, "A quantity cannot be negative.", line=proposal.line
                )
            if proposal.quantity > ordered.quantity:
                raise AnswerRefused(
                    AnswerProblem.QUANTITY_TOO_HIGH,
                    f"Line {proposal.line}: more than the {ordered.quantity} ordered is a new "
                    "order, not a change.",
                    line=proposal.line,
                )
            changed |= proposal.quantity != ordered.quantity
        if proposal.unit_price_paisa is not None:
            if proposal.unit_price_paisa <= 0:
                raise AnswerRefused(
                    AnswerProblem.BAD_LINE, "A price must be above zero.", line=proposal.line
                )
            changed |= proposal.unit_price_paisa != ordered.unit_price_paisa
    if not changed:
        raise AnswerRefused(
            AnswerProblem.NOTHING_PROPOSED, "Change a quantity, a price or the date to propose."
        )


def _same(standing: Answer, reply: SupplierReply, draft: Draft) -> bool:
    """Whether `reply` says what the standing answer said (a second POST of it)."""
    return (
        standing.reply is reply.reply
        and standing.delivery_date == reply.delivery_date
        and standing.reason == reply.reason.strip()
        and standing.note == reply.note.strip()
        and standing.lines == _changed_lines(reply, draft)
    )


def _changed_lines(reply: SupplierReply, draft: Draft) -> tuple[LineProposal, ...]:
    """What a proposal changes, line by line in line order: a quantity or price typed again
    as it was changes nothing and is left out. Only a proposal changes lines."""
    if reply.reply is not Reply.PROPOSE:
        return ()
    changed = []
    for p in sorted(reply.lines, key=lambda p: p.line):
        line = draft.lines[p.line - 1]
        quantity = None if p.quantity == line.quantity else p.quantity
        price = None if p.unit_price_paisa == line.unit_price_paisa else p.unit_price_paisa
        if quantity is not None or price is not None:
            changed.append(LineProposal(p.line, quantity, price))
    return tuple(changed)


async def _record(
    tx: Tx,
    job: Job,
    link: SupplierLink,
    reply: SupplierReply,
    draft: Draft,
    stamp: Stamp,
    answers: list[Answer],
) -> Answer:
    """Keep the answer, its audit event, and the news owed to the requester and approvers;
    its round follows the latest of `answers`, as read before it was judged."""
    rounds = [a.round for a in answers if a.draft_version == link.draft_version]
    recorded = Answer(
        job_id=job.id,
        draft_version=link.draft_version,
        round=max(rounds, default=0) + 1,
        reply=reply.reply,
        key=link.key(job.po_number),
        answered_at=stamp.at,
        delivery_date=reply.delivery_date,
        reason=reply.reason.strip(),
        note=reply.note.strip(),
        lines=_changed_lines(reply, draft),
    )
    await tx.insert_supplier_answer(recorded)
    detail: dict[str, Any] = {"key": recorded.key, "draft_version": recorded.draft_version}
    if recorded.delivery_date is not None:
        detail["delivery_date"] = recorded.delivery_date.isoformat()
    if recorded.reason:
        detail["reason"] = recorded.reason
    if recorded.note:
        detail["note"] = recorded.note
    if reply.reply is not Reply.PROPOSE:  # a proposal's is its move (propose_in)
        action = AUDIT_ACTIONS[reply.reply]
        # an answer moves nothing: the PO went
        await tx.append_audit(AuditEvent.unmoved(job, stamp, action, detail))
    event = f"{notices.SUPPLIER}:{recorded.status.value}"
    told = await told_of_answers(tx, job)
    await tx.insert_notice(
        *(notices.supplier_news_for(job, person, recorded, stamp.at, event) for person in told)
    )
    return recorded


async def told_of_answers(tx: ReadTx, job: Job) -> list[int]:
    """Who hears of the supplier's answers: the requester, and everyone who approved the PO."""
    approvers = [
        d.reviewer_id
        for d in await tx.decisions(job.id)
        if d.verdict is Verdict.APPROVE and d.reviewer_id != job.requester_id
    ]
    return list(dict.fromkeys([job.requester_id, *approvers]))


async def _sent(tx: ReadTx, link: SupplierLink) -> tuple[Job, Effect]:
    """The job and the e-mail `link` names; UnknownJob if either is gone, or the e-mail's draft
    was purged by the retention rules."""
    job = await tx.job(link.job_id)
    key = link.key(job.po_number)
    effect = next((e for e in await tx.effects_for(job.id) if e.key == key), None)
    if effect is None or not effect.draft_hash.startswith(link.hash_prefix):
        raise UnknownJob("no such e-mail")
    return job, effect


def _settles(job: Job, effect: Effect, link: SupplierLink) -> bool:
    """Whether using `link` settles its e-mail's send: the PO's own e-mail, of the version the
    job stands at, whose outcome is unknown."""
    return (
        link.kind is EffectKind.SEND_PO
        and effect.status is EffectStatus.UNKNOWN
        and job.state is State.UNKNOWN_OUTCOME
        and link.names(job.draft_version, job.draft_hash)
    )


def _standing_status(
    job: Job, effect: Effect, link: SupplierLink, answers: list[Answer]
) -> SupplierStatus:
    """Where the version `link` names stands, before any answer: cancelled (called off, or it
    never went), its proposal with the approvers, superseded by a later version, or awaiting
    the supplier."""
    if job.state is State.CANCELLED or job.state in CALLING_OFF:
        return SupplierStatus.CANCELLED
    if not link.names(job.draft_version, job.draft_hash):
        proposal = proposals.under_review(job, answers)
        if proposal is not None and proposal.draft_version == link.draft_version:
            return SupplierStatus.CHANGES_PROPOSED
        return SupplierStatus.SUPERSEDED
    if effect.status is not EffectStatus.SUCCEEDED and link.kind is EffectKind.SEND_PO:
        return SupplierStatus.CANCELLED  # it did not go: nothing stands for the supplier to answer
    return SupplierStatus.AWAITING


def _standing(answers: list[Answer], version: int) -> Answer | None:
    """The answer standing for `version`: its latest, unless approvers rejected it."""
    of_version = (a for a in answers if a.draft_version == version)
    latest = max(of_version, key=lambda a: a.round, default=None)
    if latest is None or latest.outcome is Outcome.REJECTED:
        return None
    return latest


async def _page(
    tx: ReadTx, job: Job, effect: Effect, link: SupplierLink, now: datetime, zone: tzinfo
) -> SupplierPage:
    """The page of `link` as things stand in `tx`."""
    try:
        document = await document_of(tx, job, link.draft_version, approved=True, zone=zone, now=now)
    except DraftPurged as error:
        raise UnknownJob("the order's details were removed") from error
    answers = await tx.supplier_answers(job.id)
    status = _standing_status(job, effect, link, answers)
    standing = None
    if status in (SupplierStatus.AWAITING, SupplierStatus.CHANGES_PROPOSED):
        standing = _standing(answers, link.draft_version)
        if standing is not None:
            status = standing.status
    return SupplierPage(
        link=link,
        document=document,
        status=status,
        answer=standing,
        can_answer=status is SupplierStatus.AWAITING,
        current_version=job.draft_version or 0,
    )


async def supplier_status(tx: ReadTx, job: Job) -> tuple[SupplierStatus, datetime] | None:
    """Where `job` stands with its supplier, and since when; None if its PO never went out
    (nothing for the supplier to answer)."""
    sends = [
        e
        for e in await tx.effects_for(job.id)
        if e.kind == EffectKind.SEND_PO and e.status is EffectStatus.SUCCEEDED
    ]
    if not sends:
        return None
    if job.state is State.CANCELLED or job.state in CALLING_OFF:
        return SupplierStatus.CANCELLED, job.updated_at
    answers = await tx.supplier_answers(job.id)
    proposal = proposals.under_review(job, answers)
    if proposal is not None:
        return SupplierStatus.CHANGES_PROPOSED, proposal.answered_at
    latest = sends[-1]
    if not (job.draft_version == latest.draft_version and job.draft_hash == latest.draft_hash):
        return SupplierStatus.SUPERSEDED, job.updated_at  # a later version is on its way
    standing = _standing(answers, latest.draft_version)
    if standing is not None:
        return standing.status, standing.answered_at
    return SupplierStatus.AWAITING, latest.updated_at
