"""A PO approved and e-mailed, as a runner e-mails it, step by step through the outbox (no SMTP):
what the supplier's link, its page, its answers and the chase of its silence start from."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Rules, Verdict
from core.drafting.drafts import Draft
from core.errors import SendError
from core.jobs.effects import message_id
from core.jobs.jobs import Effect, Job
from core.jobs.states import State
from core.outbox import dispatch
from core.outbox.dispatch import Attempted
from store.sql import SqlStore
from tests.helpers.documents import with_document
from tests.helpers.factories import APPROVER_A, APPROVER_B, new_job

LEASE = timedelta(seconds=60)
RECEIPT = {"message_id": message_id("send-po:k", "shop.example")}


async def approved(store: SqlStore, draft: Draft, at: datetime, rules: Rules) -> Job:
    """`draft` opened and approved by as many approvers as its route wants (one, or two)."""
    job = await opening.open_job(store, new_job(), draft, at, rules)
    for approver in (APPROVER_A, APPROVER_B):
        review = Review(draft.po_number, approver, Verdict.APPROVE, 1, job.draft_hash)
        job = (await decisions.decide(store, review, at, rules)).job
        if job.state is State.APPROVED:
            return job
    raise AssertionError(f"{draft.po_number} is {job.state} after two approvals")


async def attempted(
    store: SqlStore, at: datetime, rules: Rules, error: SendError | None = None
) -> Effect:
    """One attempt of the due send, made as a runner makes it: with `error`, that failure,
    else the relay's receipt. The outbox row as it was claimed (its e-mail's link)."""
    [claimed] = await dispatch.claim(store, at, "runner-a", LEASE, 10)
    await with_document(store, claimed, at)
    order = await dispatch.start_attempt(store, claimed.key, "runner-a", at, LEASE, rules)
    assert order is not None
    result = None if error is not None else RECEIPT
    await dispatch.finish_attempt(
        store, order, Attempted("runner-a", result, error), at, rules, 0.5
    )
    return claimed


async def sent(store: SqlStore, draft: Draft, at: datetime, rules: Rules) -> Effect:
    """`draft` approved and e-mailed at `at` (SENT): the outbox row of its e-mail."""
    await approved(store, draft, at, rules)
    return await attempted(store, at, rules)
