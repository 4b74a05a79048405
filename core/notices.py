"""Telegram messages the system owes people, as outbox rows: a restart resumes delivery.

An approval card is owed to every approver (except the requester) when a draft version starts
waiting for approval. Delivery is at-least-once, unlike the supplier e-mail: a card sent twice
after a crash is a nuisance, not a second order, and a tap on either card names the same
draft version and hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from core.jobs import Job
from core.policies import Role
from core.states import Action

if TYPE_CHECKING:
    from core.ports import Tx


class NoticeStatus(StrEnum):
    """Where a notice is in its delivery."""

    PENDING = "pending"
    CLAIMED = "claimed"
    SENT = "sent"
    FAILED = "failed"  # Telegram refused for good: the approver never started the bot, say
    CANCELLED = "cancelled"  # superseded before it went out


OPEN = frozenset({NoticeStatus.PENDING, NoticeStatus.CLAIMED})


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


async def queue_status(tx: Tx, job: Job, now: datetime) -> Notice:
    """Owe the requester a message that their PO reached `job.state`."""
    notice = Notice(
        f"status:{job.po_number}:{job.state.value}:{job.version}", "status", job.requester_id,
        job.id, job.draft_version or 0, NoticeStatus.PENDING, 0, 0, now, None, None, None, None,
        now, now, job.state.value,
    )  # fmt: skip
    await tx.insert_notice(notice)
    return notice


async def queue_cards(tx: Tx, job: Job, now: datetime) -> list[Notice]:
    """Owe an approval card for the job's current draft to every approver but the requester."""
    assert job.draft_version is not None
    owed = []
    for approver in await tx.holders(Role.APPROVER):
        if approver == job.requester_id:
            continue  # nobody approves their own request, so nobody is asked to
        notice = Notice(
            card_key(job.po_number, job.draft_version, approver), "card", approver, job.id,
            job.draft_version, NoticeStatus.PENDING, 0, 0, now, None, None, None, None, now, now,
        )  # fmt: skip
        await tx.insert_notice(notice)
        owed.append(notice)
    return owed
