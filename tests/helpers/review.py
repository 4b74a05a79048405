"""A PO in the manual-review queue (core.outbox.review), set up through core's use cases and
core.outbox.dispatch as the bot and the runner would leave it, and what is stored about it."""

from __future__ import annotations

from datetime import timedelta

from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import ApprovalPolicy, Rules, Verdict
from core.errors import AmbiguousSendError, PermanentSendError
from core.jobs.states import State
from core.outbox import dispatch
from core.outbox.dispatch import Attempted
from tests.helpers.documents import with_document
from tests.helpers.factories import APPROVER_A, FAST_RETRY, T0, make_draft, new_job

RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24)), retry=FAST_RETRY)
LEASE = timedelta(seconds=60)
PO = "PO-2026-001"
# How the one attempt of `in_queue` ends, for each queue state.
SEND_ERRORS = {
    State.UNKNOWN_OUTCOME: AmbiguousSendError("connection lost after DATA"),
    State.FAILED_FINAL: PermanentSendError("550 5.1.1 No such user", code=550),
}


async def in_queue(store, state: State, po: str = PO):
    """A PO approved and tried once: the attempt ends ambiguous (UNKNOWN_OUTCOME) or refused
    for good (FAILED_FINAL)."""
    job = await opening.open_job(store, new_job(), make_draft(po), T0, RULES)
    await decisions.decide(
        store, Review(po, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash), T0, RULES
    )
    [claimed] = await dispatch.claim(store, T0, "runner-a", LEASE, 10)
    await with_document(store, claimed, T0)
    order = await dispatch.start_attempt(store, claimed.key, "runner-a", T0, LEASE, RULES)
    assert order is not None
    got = await dispatch.finish_attempt(
        store, order, Attempted("runner-a", error=SEND_ERRORS[state]), T0, RULES, 0.5
    )
    assert got is state
    return await snapshot(store, po)


async def snapshot(store, po: str = PO):
    """The job, its sends and its audit trail, as stored now."""
    async with store.begin() as tx:
        job = await tx.job_by_po(po)
        return job, await tx.effects_for(job.id), await tx.audit(job.id)
