"""What waits for whom: the requests waiting for one person's decision (/pending, the answer
to free text), every waiting request and who it waits for (/pending all), and free text kept
as a comment on a request's audit trail, never read as a decision.

Read-only but for the comment: a list is read in one transaction, and a comment is one audit
event written after the answer went out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from core.approval.policies import Policy
from core.approval.standing import standing
from core.jobs.jobs import AuditEvent, Job, Stamp
from core.jobs.notices import Notice, NoticeKind, card_for
from core.jobs.states import State
from core.ports import ReadTx, Store
from core.texts import flatten

# The audit action of a person's free text kept on a request, and its detail's text key
# (core.records.retention.FREE_TEXT_KEYS: the purge removes it with the other free text).
COMMENT = "comment"
COMMENT_TEXT = "text"
# A comment is one line of at most this many characters: enough for "ok, but check the
# price of the cables first", short enough for a /history line.
COMMENT_LIMIT = 300


@dataclass(frozen=True)
class Waiting:
    """One request waiting for a decision, where it stands on its route now."""

    job: Job
    stage: int  # the waiting stage, from 0
    stages: int  # stages on the route
    group: str  # the waiting stage's group
    approvals: int  # standing approvals in the waiting stage so far
    required: int  # approvals the waiting stage needs
    waiting_for: frozenset[int]  # whose approval it waits for (core.approval.standing.Standing)
    cards_to: dict[int, int | None]  # who holds its card now, and for whom (None: themselves)

    def held_for(self, person: int) -> int | None:
        """Whom `person` holds its card for while they are away (None: for themselves)."""
        return self.cards_to.get(person)


async def waiting_requests(tx: ReadTx, now: datetime, default: Policy) -> list[Waiting]:
    """Every request waiting for a decision, oldest first, with who it waits for now."""
    found = []
    jobs = await tx.jobs_in_states([State.AWAITING_APPROVAL])
    for job in sorted(jobs, key=lambda j: (j.created_at, j.po_number)):
        where = await standing(tx, job, now, default)
        stage = min(where.tally.stage, len(where.route.stages) - 1)
        counted = where.tally.counted
        found.append(
            Waiting(
                job=job,
                stage=stage,
                stages=len(where.route.stages),
                group=where.route.stages[stage].group,
                approvals=len(counted[stage]) if stage < len(counted) else 0,
                required=where.route.stages[stage].approvals,
                waiting_for=where.waiting_for,
                cards_to=where.cards_to,
            )
        )
    return found


async def waiting_for_person(
    tx: ReadTx, person: int, now: datetime, default: Policy
) -> list[Waiting]:
    """The requests waiting for `person`'s decision now, oldest first: each one whose card
    they hold, their own or one they hold for someone away (Standing.cards_to)."""
    return [w for w in await waiting_requests(tx, now, default) if person in w.cards_to]


@dataclass(frozen=True)
class Referred:
    """The request a person's free text refers to, whether they may decide it now, whether
    the text replied to its card (else it is the oldest waiting for them), and the others
    waiting for them (oldest first)."""

    job: Job
    decidable: bool
    others: tuple[Waiting, ...]
    replied: bool = False


def refers_to(
    waiting: Sequence[Waiting], replied: Job | None, *, replied_open: bool = False
) -> Referred | None:
    """What free text refers to: the request of the card it replies to (`replied`; whether
    they may still decide it: `replied_open`), else the oldest of those `waiting` for them;
    None if neither."""
    if replied is not None:
        others = tuple(w for w in waiting if w.job.id != replied.id)
        return Referred(replied, replied_open, others, replied=True)
    if not waiting:
        return None
    oldest = min(waiting, key=lambda w: (w.job.created_at, w.job.po_number))
    return Referred(oldest.job, True, tuple(w for w in waiting if w is not oldest))


async def referred_by_text(
    tx: ReadTx, person: int, replied_message: int | None, now: datetime, default: Policy
) -> Referred | None:
    """The request `person`'s free text refers to (`replied_message`: the id of the bot's
    message it replies to, if any): a card of theirs by its message, else their oldest
    waiting request; None if neither (they get the help)."""
    waiting = await waiting_for_person(tx, person, now, default)
    card = None
    if replied_message is not None:
        notice = await tx.notice_of_message(person, replied_message)
        if notice is not None and notice.kind is NoticeKind.CARD and notice.job_id:
            card = await tx.job(notice.job_id)
    if card is None:
        return refers_to(waiting, None)
    open_ = card.state is State.AWAITING_APPROVAL and (
        person in (await standing(tx, card, now, default)).may_approve
    )
    return refers_to(waiting, card, replied_open=open_)


async def card_again(store: Store, job: Job, holder: int, because: str, now: datetime) -> Notice:
    """Owe `holder` the request's card once more, as they hold it now (their own, or for
    someone away); `because` names this sending, so that a second tap of one button sends no
    second card. Their older card keeps working: both name the same draft version and hash.
    The caller checked that they may still decide it (core.approval.decisions.may_decide)."""
    card = card_for(job, holder, now, again=because)
    async with store.begin() as tx:
        await tx.insert_notice(card)
    return card


def comment_text(text: str) -> str:
    """Free text as a comment keeps it: one line (core.texts.flatten), at most COMMENT_LIMIT
    characters, a cut one ending in "…"; "" if nothing visible is left."""
    line = flatten(text)
    return line if len(line) <= COMMENT_LIMIT else line[: COMMENT_LIMIT - 1] + "…"


async def comment(store: Store, job: Job, author: int, text: str, now: datetime) -> None:
    """Keep `author`'s free text on the request's audit trail as a comment (COMMENT): it
    decides nothing, and the other approvers read it in /history."""
    line = comment_text(text)
    if not line:
        return
    detail = {COMMENT_TEXT: line, "draft_version": job.draft_version}
    event = AuditEvent.stamped(Stamp(f"user:{author}", now), COMMENT, detail, job_id=job.id)
    async with store.begin() as tx:
        await tx.append_audit(event)


async def may_read_trail(tx: ReadTx, job: Job, person: int, now: datetime, default: Policy) -> bool:
    """Whether an approver may read the request's trail (/history): they may decide it now,
    decided it (or their delegate did, for them), or were sent its card."""
    if any(person in (d.reviewer_id, d.on_behalf_of) for d in await tx.decisions(job.id)):
        return True
    notices = await tx.notices_for(job.id)
    if any(n.kind is NoticeKind.CARD and n.user_id == person for n in notices):
        return True
    if job.state is not State.AWAITING_APPROVAL:
        return False
    return person in (await standing(tx, job, now, default)).may_approve
