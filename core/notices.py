"""Telegram messages the system owes people, as outbox rows: a restart resumes delivery.

Four kinds, each owed in the same transaction as the change it reports:
- "card": an approval card, owed to every approver (except the requester) when a draft version
  starts waiting for approval;
- "status": a requester's news, when their PO moves (TOLD_TO_REQUESTER);
- "cards": the job's delivered cards are to be edited to what is true now (a decision, an
  approval counted, expiry, a new draft version); one row per job version, whoever holds cards;
- "alert": a message for the admins (a PO entered the manual-review queue, an approver cannot
  be reached). It is owed to nobody in particular (user 0) and fanned out, on delivery, to
  one row per admin, since who is an admin is configuration as well as data.

Delivery is at-least-once, unlike the supplier e-mail: a card sent twice after a crash is a
nuisance, not a second order, and a tap on either card names the same draft version and hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from core.jobs import Job
from core.policies import Role
from core.states import NEEDS_REVIEW, Action, State

if TYPE_CHECKING:
    from core.ports import Tx


class NoticeStatus(StrEnum):
    """Where a notice is in its delivery."""

    PENDING = "pending"
    CLAIMED = "claimed"
    SENT = "sent"
    FAILED = "failed"  # Telegram refused for good: the approver never started the bot, say
    CANCELLED = "cancelled"  # superseded before it went out


@dataclass(frozen=True)
class Notice:
    """One message owed to one Telegram user about one job's draft version."""

    key: str
    kind: str
    user_id: int
    job_id: str
    draft_version: int
    status: NoticeStatus
    version: int
    attempts: int
    next_attempt_at: datetime
    lease_owner: str | None
    lease_until: datetime | None
    message_id: int | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime
    event: str = ""  # a requester's notice: the state their PO reached


def card_key(po_number: str, draft_version: int, user_id: int) -> str:
    """One card per approver per draft version: the key makes a second one impossible."""
    return f"card:{po_number}:v{draft_version}:{user_id}"


# A "cards" or fanned-out "alert" notice is owed to no one user.
EVERYONE = 0
# The events of an alert that an approver's card could not be delivered (followed by ":" and
# their id): Telegram refused it (they never pressed Start, or blocked the bot), or kept failing
# until the retries ran out.
UNREACHABLE = "unreachable"
UNDELIVERED = "undelivered"

# The moves a requester hears about, in Telegram, and nothing else (a retry is not news).
TOLD_TO_REQUESTER = frozenset(
    {
        Action.APPROVE,
        Action.MARK_SENT,
        Action.RECONCILE_SENT,
        Action.REJECT,
        Action.EXPIRE,
        Action.CANCEL,
        Action.MARK_UNKNOWN,
        Action.FAIL_FINAL,
        Action.RECONCILE_FAILED,
    }
)


def refreshes_cards(source: State, action: Action) -> bool:
    """Whether a move changes what the job's delivered cards should say: any move from
    AWAITING_APPROVAL, a new draft version, or the end of an approved PO's window."""
    return source is State.AWAITING_APPROVAL or action in {Action.REVISE, Action.EXPIRE,
                                                            Action.CANCEL}  # fmt: skip


def alerts_admins(target: State) -> bool:
    """Whether a move puts the PO in front of a person: the manual-review queue."""
    return target in NEEDS_REVIEW


def _owed(
    key: str, kind: str, user_id: int, job_id: str, draft_version: int, now: datetime, event: str
) -> Notice:
    return Notice(
        key, kind, user_id, job_id, draft_version, NoticeStatus.PENDING, 0, 0, now, None, None,
        None, None, now, now, event,
    )  # fmt: skip


async def queue_refresh(tx: Tx, job: Job, now: datetime, late_card: int | None = None) -> Notice:
    """Owe an edit of the job's delivered cards to what is true at `job.version`; `late_card`:
    the approver whose card was delivered after that version's edit had already run."""
    late = "" if late_card is None else f":late{late_card}"
    notice = _owed(f"cards:{job.po_number}:j{job.version}{late}", "cards", EVERYONE, job.id,
                   job.draft_version or 0, now, job.state.value)  # fmt: skip
    await tx.insert_notice(notice)
    return notice


async def queue_alert(tx: Tx, job: Job, now: datetime, event: str) -> Notice:
    """Owe the admins a message about `job`: `event` is the state it entered, or
    UNREACHABLE or UNDELIVERED, ":", the approver's id."""
    notice = _owed(f"alert:{job.po_number}:{event}:j{job.version}", "alert", EVERYONE, job.id,
                   job.draft_version or 0, now, event)  # fmt: skip
    await tx.insert_notice(notice)
    return notice


def fanned_out(alert: Notice, admin_id: int, now: datetime) -> Notice:
    """One admin's copy of an alert owed to EVERYONE."""
    return _owed(f"{alert.key}:{admin_id}", "alert", admin_id, alert.job_id,
                 alert.draft_version, now, alert.event)  # fmt: skip


async def queue_status(tx: Tx, job: Job, now: datetime) -> Notice:
    """Owe the requester a message that their PO reached `job.state`."""
    notice = _owed(f"status:{job.po_number}:{job.state.value}:{job.version}", "status",
                   job.requester_id, job.id, job.draft_version or 0, now,
                   job.state.value)  # fmt: skip
    await tx.insert_notice(notice)
    return notice


async def queue_cards(tx: Tx, job: Job, now: datetime) -> list[Notice]:
    """Owe an approval card for the job's current draft to every approver but the requester."""
    assert job.draft_version is not None
    owed = []
    for approver in await tx.holders(Role.APPROVER):
        if approver == job.requester_id:
            continue  # nobody approves their own request, so nobody is asked to
        notice = _owed(card_key(job.po_number, job.draft_version, approver), "card", approver,
                       job.id, job.draft_version, now, "")  # fmt: skip
        await tx.insert_notice(notice)
        owed.append(notice)
    return owed
