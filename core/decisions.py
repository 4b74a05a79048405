"""A reviewer's decision as it is asked for (Review) and what it did (DecisionResult), and the
answer to a replay of one a client kept under its own id (core.replays). The use cases that
record decisions are core.service.decide and core.edits.approve_with_changes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.jobs import Job
from core.policies import Decision, Outcome, Route, Rules, Tally, Verdict
from core.ports import ReadTx
from core.replays import (
    ClientAction,
    ClientDecision,
    check_client_id,
    fingerprint,
    same_request,
)
from core.workflow import standing


@dataclass(frozen=True)
class Review:
    """An authenticated reviewer's decision on one exact draft version and hash."""

    po_number: str
    reviewer_id: int  # from the update Telegram signed, never from text
    verdict: Verdict
    draft_version: int
    draft_hash: str
    reason: str | None = None  # a rejection's, for the requester; an over-budget approval's
    # A client's id for the decision (core.replays), its idempotency key: a replay is answered
    # with what the first one did; and when it was made on the device (kept in the audit).
    client_id: str | None = None
    device_time: datetime | None = None

    def __post_init__(self) -> None:
        check_client_id(self.client_id)

    @property
    def request_sha256(self) -> str:
        """What a replay of this review under its client id must repeat (core.replays)."""
        return fingerprint(
            {"po": self.po_number, "reviewer": self.reviewer_id, "verdict": self.verdict.value,
             "draft_version": self.draft_version, "draft_hash": self.draft_hash,
             "reason": self.reason}
        )  # fmt: skip


@dataclass(frozen=True)
class DecisionResult:
    """What a decision did: the job after it, whether its route is now complete, and where
    the route stands (a stage this decision completed: tally.stage > decision.stage).
    `replay`: a client's id named a decision recorded before, which this is; nothing new
    was written."""

    job: Job
    decision: Decision
    outcome: Outcome
    route: Route
    tally: Tally
    replay: bool = False


async def replay_of(
    tx: ReadTx, job: Job, review: Review, now: datetime, rules: Rules
) -> DecisionResult | None:
    """The answer to `review` if its client id names a decision kept already (a replay);
    ClientIdReused if that was another request; None if none is kept."""
    found = None if review.client_id is None else await tx.client_decision(review.client_id)
    if found is None:
        return None
    action = ClientAction(review.verdict.value)
    same_request(found, job, review.reviewer_id, action, review.request_sha256)
    return await replayed(tx, job, found, now, rules)


def client_row(client_id: str, job: Job, review: Review, now: datetime) -> ClientDecision:
    """The row that keeps a client's first decision under its id (core.replays)."""
    action = ClientAction(review.verdict.value)
    version = job.draft_version or 0
    return ClientDecision(
        client_id, job.id, review.reviewer_id, action, review.request_sha256, version, now
    )


async def replayed(
    tx: ReadTx, job: Job, found: ClientDecision, now: datetime, rules: Rules
) -> DecisionResult:
    """The answer to a replay of the decision a client kept under its id: that decision, and
    where its draft stands (judged at its own time, so that approvals expired since still
    show; once the draft has changed, the current draft's standing now)."""
    decision = next(
        d
        for d in await tx.decisions(job.id)
        if (d.reviewer_id, d.draft_version) == (found.reviewer_id, found.draft_version)
    )
    at = decision.at if decision.draft_version == job.draft_version else now
    where = await standing(tx, job, at, rules.approval.default_policy)
    outcome = where.tally.outcome
    return DecisionResult(job, decision, outcome, where.route, where.tally, replay=True)
