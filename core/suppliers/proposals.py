"""A supplier's proposed changes made into a new draft version of its PO, put to the approvers
as an approver's edit is (core.approval.opening.revise_in): the policy applied to the new
version, a higher price flagged against what was approved (so the drift stage may apply), the
supplier its author and a line-by-line diff in the audit trail. What happens when the
approvers decide is core.jobs.proposals."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from core.approval.opening import Revision, revise_in
from core.approval.policies import Rules
from core.drafting.drafts import Draft, Flag
from core.drafting.flags import FlagCode, ordered
from core.errors import AnswerProblem, AnswerRefused, EditProblem, EditRefused
from core.jobs.answers import Answer, Outcome
from core.jobs.jobs import Job, Stamp
from core.jobs.states import Action
from core.ports import Tx
from core.purchasing.edits import LineChange, edited_draft


def proposed_draft(draft: Draft, answer: Answer) -> Draft:
    """`draft` as the supplier's `answer` would change it: lower quantities (0 drops the line),
    other unit prices, a later delivery date. A price above the approved one is flagged
    PRICE_CHANGED against the last PO's price if the line had one, else against this draft's,
    so the policy's drift tolerance applies to it. AnswerRefused if every line is dropped."""
    quantities = [
        LineChange(p.line, p.quantity)
        for p in answer.lines
        if p.quantity is not None and p.quantity != draft.lines[p.line - 1].quantity
    ]
    changed = draft
    if quantities:
        try:
            changed = edited_draft(draft, quantities)
        except EditRefused as error:
            if error.code is EditProblem.NOTHING_LEFT:
                raise AnswerRefused(
                    AnswerProblem.NOTHING_PROPOSED,
                    "Every line at 0 is no order at all: decline it instead.",
                ) from error
            raise
    prices = {
        draft.lines[p.line - 1].sku: p.unit_price_paisa
        for p in answer.lines
        if p.unit_price_paisa is not None
    }
    lines = tuple(
        replace(line, unit_price_paisa=prices[line.sku]) if line.sku in prices else line
        for line in changed.lines
    )
    flags = [f for f in changed.flags if not (f.code == FlagCode.PRICE_CHANGED and f.sku in prices)]
    for line in draft.lines:
        if line.sku not in prices or line.sku not in {kept.sku for kept in lines}:
            continue
        earlier = next(
            (f for f in draft.flags if f.code == FlagCode.PRICE_CHANGED and f.sku == line.sku),
            None,
        )
        if earlier is not None:
            flags.append(replace(earlier, amounts=(earlier.amounts[0], prices[line.sku])))
        elif prices[line.sku] != line.unit_price_paisa:
            ref = f"{draft.po_number} v{answer.draft_version}"
            flags.append(
                Flag(
                    FlagCode.PRICE_CHANGED, line.sku, (line.unit_price_paisa, prices[line.sku]), ref
                )
            )
    later = answer.delivery_date if answer.delivery_date is not None else changed.delivery_date
    return replace(changed, lines=lines, flags=ordered(flags), delivery_date=later)


async def propose_in(
    tx: Tx, job: Job, answer: Answer, draft: Draft, stamp: Stamp, rules: Rules
) -> Job:
    """Put the supplier's `answer` (a proposal, just recorded) to the approvers as a new draft
    version of `job` (SENT, at the version `draft` the supplier answered), in `tx`."""
    proposed = proposed_draft(draft, answer)
    evidence: dict[str, Any] = {
        "author": stamp.actor,
        "answered_version": answer.draft_version,
        "changes": diff(draft, proposed),
    }
    if answer.note:
        evidence["note"] = answer.note
    revision = Revision(proposed, evidence)
    moved = await revise_in(tx, job, revision, stamp, rules, Action.SUPPLIER_PROPOSE)
    await tx.decide_supplier_answer(
        answer, Outcome.STANDS, stamp.at, proposal_version=moved.draft_version
    )
    return moved


def diff(old: Draft, new: Draft) -> list[dict[str, Any]]:
    """Line by line, what `new` changes of `old`, as the audit trail keeps it: each line's
    quantity and unit price from and to (a dropped line's quantity goes to 0), and the
    delivery date."""
    after = {line.sku: line for line in new.lines}
    changes: list[dict[str, Any]] = []
    for number, line in enumerate(old.lines, start=1):
        now = after.get(line.sku)
        change: dict[str, Any] = {"line": number, "sku": line.sku}
        quantity = now.quantity if now is not None else 0
        if quantity != line.quantity:
            change["quantity"] = [line.quantity, quantity]
        if now is not None and now.unit_price_paisa != line.unit_price_paisa:
            change["unit_price_paisa"] = [line.unit_price_paisa, now.unit_price_paisa]
        if len(change) > 2:
            changes.append(change)
    if new.delivery_date != old.delivery_date:
        changes.append(
            {
                "delivery_date": [
                    old.delivery_date.isoformat() if old.delivery_date else None,
                    new.delivery_date.isoformat() if new.delivery_date else None,
                ]
            }
        )
    return changes
