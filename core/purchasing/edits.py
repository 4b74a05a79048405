"""Approve with changes: an approver trims quantities or drops lines of the draft they were
shown, and approves what is left, in one transaction.

An approver may only lower a line's quantity or drop the line: a larger order, or a line the
requester never asked for, is the requester's to send as a new sheet, priced and checked by
intake, never an approver's to add. The result is a new draft version with its own hash
(core.approval.opening.revise_in): the old version's cards are superseded, the route is worked out
again on the new total, the new version's cards are owed, and the editor's approval is
recorded on the new version if its route waits for them, so a one-approver policy sends the
trimmed PO at once while a longer one waits for the rest. The requester is told what changed
and who changed it. A client's id for the edit (core.approval.replays) makes a replay harmless.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from core.approval import replays
from core.approval.decisions import (
    DecisionResult,
    Review,
    allowed_or_expired,
    check_allowed,
    needs_a_reason,
    record_decision,
    replayed,
)
from core.approval.opening import Revision, revise_in
from core.approval.policies import Rules, Verdict
from core.approval.replays import ClientAction, ClientDecision
from core.drafting.drafts import Draft, Flag, LineDiff, line_diff
from core.drafting.flags import FlagCode, ordered
from core.drafting.intake import QUANTITY_JUMP_FACTOR
from core.drafting.terms import Terms
from core.errors import (
    ApprovalError,
    ApprovalExpired,
    DelegationEnded,
    EditProblem,
    EditRefused,
    NotYourTurn,
    ReasonRequired,
)
from core.jobs.jobs import Job, Stamp
from core.jobs.notices import NoticeKind, NoticeStatus, edited_for
from core.jobs.transitions import load, retry_on_stale
from core.ports import ReadTx, Store, Tx


@dataclass(frozen=True)
class LineChange:
    """One line's new quantity: `line` numbers the shown draft's lines from 1; 0 drops it."""

    line: int
    quantity: int


@dataclass(frozen=True)
class Edit:
    """An authenticated approver's changes to one exact draft version and hash, to approve."""

    po_number: str
    editor_id: int  # from what Telegram signed, never from text
    draft_version: int
    draft_hash: str
    changes: tuple[LineChange, ...]
    reason: str | None = None  # for an approval of the result that goes over a budget
    client_id: str | None = None  # the page's id for the edit (core.approval.replays)
    device_time: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "changes", tuple(self.changes))
        replays.check_client_id(self.client_id)

    @property
    def review(self) -> Review:
        """The approval of the shown draft this edit is checked as."""
        return Review(
            self.po_number, self.editor_id, Verdict.APPROVE, self.draft_version, self.draft_hash,
            self.reason, client_id=self.client_id, device_time=self.device_time,
        )  # fmt: skip

    @property
    def request_sha256(self) -> str:
        """What a replay of this edit under its client id must repeat (core.approval.replays)."""
        return replays.fingerprint(
            {"po": self.po_number, "editor": self.editor_id, "edit": True,
             "draft_version": self.draft_version, "draft_hash": self.draft_hash,
             "reason": self.reason, "changes": [[c.line, c.quantity] for c in self.changes]}
        )  # fmt: skip


@dataclass(frozen=True)
class Edited:
    """What an edit did: the job after it (a new draft version), the lines it changed, and the
    editor's approval of the new version (None: its route does not wait for them now).
    `replay`: a client's id named an edit made before, which this is; nothing was written."""

    job: Job
    diff: tuple[LineDiff, ...]
    approval: DecisionResult | None
    replay: bool = False


def edited_draft(
    draft: Draft, changes: Iterable[LineChange], *, minimums: Mapping[str, int] | None = None
) -> Draft:
    """The draft with `changes` made: quantities lowered, lines at 0 dropped; its total is
    the new lines' (Draft.total_paisa) and its flags follow the new quantities (_flags).
    `minimums`: the terms' minimum order of each SKU, to flag a line trimmed below it. Raise
    EditRefused for an unknown or repeated line, a quantity negative or above the shown one,
    every line dropped, or nothing changed."""
    wanted: dict[int, int] = {}
    for change in changes:
        number, quantity = change.line, change.quantity
        if not 1 <= number <= len(draft.lines):
            raise EditRefused(EditProblem.UNKNOWN_LINE, f"no line {number}", line=number)
        if number in wanted:
            raise EditRefused(EditProblem.DUPLICATE_LINE, f"line {number} twice", line=number)
        if type(quantity) is not int or quantity < 0:  # not a bool, nor a float
            raise EditRefused(EditProblem.NEGATIVE, f"line {number}: below 0", line=number)
        if quantity > draft.lines[number - 1].quantity:
            raise EditRefused(
                EditProblem.ABOVE_SHOWN,
                f"line {number}: more than shown; a larger order is a new sheet",
                line=number,
            )
        wanted[number] = quantity
    if all(draft.lines[n - 1].quantity == q for n, q in wanted.items()):
        raise EditRefused(EditProblem.NO_CHANGE, "no quantity changed: approve it as it is")
    lines = tuple(
        replace(line, quantity=wanted.get(n, line.quantity))
        for n, line in enumerate(draft.lines, start=1)
        if wanted.get(n, line.quantity) > 0
    )
    if not lines:
        raise EditRefused(EditProblem.NOTHING_LEFT, "every line dropped: reject it instead")
    kept = {line.sku: line.quantity for line in lines}
    trimmed = {draft.lines[n - 1].sku for n, q in wanted.items() if q > 0}
    total = sum(line.gross_paisa for line in lines)  # as Draft.total_paisa: tax included
    flags = _flags(draft, kept, total) + _below_minimum(kept, trimmed, minimums or {}, draft)
    return replace(draft, lines=lines, flags=ordered(flags))


def _flags(draft: Draft, kept: Mapping[str, int], total: int) -> list[Flag]:
    """The shown draft's flags as the edit leaves them: those of a dropped line go, and those
    whose figures are quantities or the total are worked out again from their own amounts
    (a limit, the last PO's quantity, the threshold), as intake set them."""
    dropped = {line.sku for line in draft.lines} - set(kept)
    flags: list[Flag] = []
    for flag in draft.flags:
        if flag.sku and flag.sku in dropped:
            continue
        quantity, a = kept.get(flag.sku, 0), flag.amounts
        match flag.code:
            case FlagCode.DUAL_APPROVAL if total > a[1]:
                flags.append(replace(flag, amounts=(total, a[1])))
            case FlagCode.QUANTITY_ABOVE_MAX if quantity > a[1]:
                flags.append(replace(flag, amounts=(quantity, a[1])))
            case FlagCode.QUANTITY_BELOW_MIN:  # a trim only lowers it further
                flags.append(replace(flag, amounts=(quantity, a[1])))
            case FlagCode.QUANTITY_JUMP if quantity >= QUANTITY_JUMP_FACTOR * a[1]:
                flags.append(replace(flag, amounts=(quantity, a[1])))
            case FlagCode.DUAL_APPROVAL | FlagCode.QUANTITY_ABOVE_MAX | FlagCode.QUANTITY_JUMP:
                continue  # the new quantity or total no longer calls for it
            case _:
                flags.append(flag)
    return flags


def _below_minimum(
    kept: Mapping[str, int], trimmed: set[str], minimums: Mapping[str, int], draft: Draft
) -> list[Flag]:
    """A QUANTITY_BELOW_MIN flag for each line the edit trimmed below its terms' minimum
    that did not carry one already."""
    flagged = {f.sku for f in draft.flags if f.code == FlagCode.QUANTITY_BELOW_MIN}
    return [
        Flag(FlagCode.QUANTITY_BELOW_MIN, sku, (kept[sku], minimums[sku]))
        for sku in sorted(trimmed - flagged)
        if sku in minimums and kept[sku] < minimums[sku]
    ]


@retry_on_stale
async def approve_with_changes(store: Store, edit: Edit, now: datetime, rules: Rules) -> Edited:
    """Make an approver's changes to the draft they were shown, checked exactly as their
    approval of it would be (allowed), as a new draft version, and approve that
    version for them if its route waits for them; one transaction. A replay of a client's
    edit id is answered with what the first did."""
    async with store.begin() as tx:
        job = await load(tx, edit.po_number)
        if (replay := await _replay_of(tx, job, edit, now, rules)) is not None:
            return replay
        try:
            allowed = await allowed_or_expired(tx, job, edit.review, now, rules)
        except ApprovalError:
            # A replay committed since the first look (decisions.decide does the same): answer it.
            if (replay := await _replay_of(tx, job, edit, now, rules)) is not None:
                return replay
            raise
        if allowed is not None:
            return await _edit_in(tx, job, edit, now, rules)
    raise ApprovalExpired(f"{edit.po_number} expired before this edit")


async def _replay_of(
    tx: ReadTx, job: Job, edit: Edit, now: datetime, rules: Rules
) -> Edited | None:
    """The answer to `edit` if its client id names an edit kept already (a replay)."""
    found = await replays.kept_request(
        tx, edit.client_id, job, edit.editor_id, ClientAction.EDIT, edit.request_sha256
    )
    return None if found is None else await _replayed(tx, job, found, now, rules)


async def _edit_in(tx: Tx, job: Job, edit: Edit, now: datetime, rules: Rules) -> Edited:
    """The edit of `job`'s current draft, allowed already, made in `tx`."""
    assert job.draft_version is not None
    shown = await tx.draft(job.id, job.draft_version)
    draft = edited_draft(
        shown, edit.changes, minimums=_minimums(await tx.terms(shown.terms_version), shown)
    )
    diff = tuple(line_diff(shown, draft))
    if edit.client_id is not None:  # first: a concurrent replay waits on its key
        made = job.draft_version + 1  # revise_in's
        kept = ClientDecision(
            edit.client_id, job.id, edit.editor_id, ClientAction.EDIT, edit.request_sha256,
            made, now,
        )  # fmt: skip
        await tx.insert_client_decision(kept)
    evidence = {
        "editor": edit.editor_id,
        "diff": [d.plain() for d in diff],
        **replays.device_detail(edit.client_id, edit.device_time),
    }
    stamp = Stamp(f"user:{edit.editor_id}", now)
    job = await revise_in(tx, job, Revision(draft, evidence), stamp, rules)
    await tx.insert_notice(edited_for(job, edit.editor_id, now))
    approval = await _approve_new(tx, job, edit, now, rules)
    return Edited(approval.job if approval else job, diff, approval)


def _minimums(terms: Terms | None, draft: Draft) -> dict[str, int]:
    """Each of the draft's SKUs' minimum order from its supplier under the draft's terms."""
    if terms is None:
        return {}
    offers = (terms.offer(draft.supplier_id, line.sku) for line in draft.lines)
    return {offer.sku: offer.min_qty for offer in offers if offer is not None}


async def _approve_new(
    tx: Tx, job: Job, edit: Edit, now: datetime, rules: Rules
) -> DecisionResult | None:
    """The editor's approval of the version their edit made, in the stage of its route that
    waits now, if that stage is theirs (or of one they act for); else None."""
    assert job.draft_version is not None and job.draft_hash is not None
    review = replace(edit.review, draft_version=job.draft_version, draft_hash=job.draft_hash)
    try:
        allowed = await check_allowed(tx, job, review, now, rules.approval.default_policy)
    except (NotYourTurn, DelegationEnded):
        return None  # the new route waits for others first: they decide it
    if await needs_a_reason(tx, job, review, now, rules):
        raise ReasonRequired(f"{job.po_number} goes over a monthly budget")
    await _not_asked_again(tx, job, edit.editor_id, now)
    return await record_decision(tx, job, allowed, review, now, rules)


async def _not_asked_again(tx: Tx, job: Job, editor: int, now: datetime) -> None:
    """The card of the new version revise_in owed the editor is not sent: they approve that
    version now, so it would only ask them again. Owed in this transaction, so nobody has
    claimed it yet."""
    for notice in await tx.notices_for(job.id):
        if (notice.kind, notice.user_id, notice.draft_version) == (
            NoticeKind.CARD, editor, job.draft_version
        ) and notice.status is NoticeStatus.PENDING:  # fmt: skip
            await tx.update_notice(notice, status=NoticeStatus.CANCELLED, updated_at=now)


async def _replayed(
    tx: ReadTx, job: Job, found: ClientDecision, now: datetime, rules: Rules
) -> Edited:
    """The answer to a replay of an edit kept under a client's id: what it changed, and the
    editor's approval of the version it made, if one was recorded."""
    made = found.draft_version
    diff = line_diff(await tx.draft(job.id, made - 1), await tx.draft(job.id, made))
    decided = any(
        (d.reviewer_id, d.draft_version) == (found.reviewer_id, made)
        for d in await tx.decisions(job.id)
    )
    approval = await replayed(tx, job, found, now, rules) if decided else None
    return Edited(job, tuple(diff), approval, replay=True)
