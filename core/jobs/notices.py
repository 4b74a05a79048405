"""Telegram messages the system owes people, as outbox rows: a restart resumes delivery.

Six kinds, each owed in the same transaction as the change it reports (the use cases, and
core.jobs.transitions.move):
- CARD: an approval card, owed to every approver (except the requester) when a draft version
  starts waiting for approval;
- STATUS: a requester's news, when their PO moves (TOLD_TO_REQUESTER); and, when a sent PO
  is called off, the requester's and its approvers' (call_off_news_for);
- CARD_EDITS: the job's delivered cards are to be edited to what is true now (a decision, an
  approval counted, expiry, a new draft version); one row per job version, whoever holds cards;
- NUDGE: a reminder, a last warning before expiry, an escalation to the admins, or the daily
  digest (core.messaging.nudges), owed by the ladder's sweep; the event says which;
- ALERT: a message for the admins (a PO entered the manual-review queue, an approver cannot
  be reached, a PO was opened with no approver to ask, a stage of a PO's route can no longer
  be completed, or, about no job, a policy was put in force with a group nobody can approve
  for). It is owed to nobody in particular
  (EVERYONE) and fanned out, on delivery, to one row per admin, since who is an admin is
  configuration as well as data;
- QUEUE_EDITS: the job left the manual-review queue (an admin's choice, the supplier's link,
  the relay's copy of the e-mail): every review-queue message /queue showed of it (QUEUE_ITEM,
  a record of a message sent, never owed) is to be edited to say what settled it.

Delivery is at-least-once, unlike the supplier e-mail: a card sent twice after a crash is a
nuisance, not a second order, and a tap on either card names the same draft version and hash. This
module holds the values and the rules; core.messaging.delivery has the use cases that deliver them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from core.jobs.answers import Answer
from core.jobs.jobs import Job
from core.jobs.states import NEEDS_REVIEW, Action, State

if TYPE_CHECKING:
    from core.ports import Tx


class NoticeKind(StrEnum):
    """What a notice is; the values are what the store keeps."""

    CARD = "card"  # one approver's approval card
    CARD_EDITS = "cards"  # edit every delivered card of the job to what is true now
    STATUS = "status"  # a requester's news
    ALERT = "alert"  # the admins' news
    NUDGE = "nudge"  # a rung of the reminder ladder, or the daily digest (core.messaging.nudges)
    QUEUE_ITEM = "queue_item"  # a review-queue message /queue sent an admin: a record, never owed
    QUEUE_EDITS = "queue_edits"  # edit the job's queue messages: it left the queue


class NoticeStatus(StrEnum):
    """Where a notice is in its delivery."""

    PENDING = "pending"
    CLAIMED = "claimed"
    SENT = "sent"
    FAILED = "failed"  # Telegram refused for good: the approver never started the bot, say
    CANCELLED = "cancelled"  # superseded before it went out, or moot by then


@dataclass(frozen=True)
class Notice:
    """One message owed to one Telegram user about one job's draft version."""

    key: str
    kind: NoticeKind
    user_id: int
    job_id: str | None  # None: an alert about no job (policy_alert)
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
    event: str = ""  # a requester's notice: the state their PO reached; an alert: what happened


# A CARD_EDITS or fanned-out ALERT notice is owed to no one user.
EVERYONE = 0
# The events of an alert that an approver's card could not be delivered (followed by ":" and
# their id): Telegram refused it (they never pressed Start, or blocked the bot), or kept failing
# until the retries ran out.
UNREACHABLE = "unreachable"
UNDELIVERED = "undelivered"
# The event of an alert that a PO was opened while no approver (other than its requester)
# was registered: nobody holds its card until an admin makes someone an approver.
NOBODY_TO_ASK = "nobody_to_ask"
# The event of an alert that a stage of a PO's route can no longer be completed as things
# stand (core.approval.shortfalls), followed by ":" and the stage's index: the approvals it still
# needs exceed the distinct people left who may give them.
SHORT_STAGE = "short_stage"
# The event of a job-less alert (followed by ":" and the policy version) that a policy was put
# in force with a group a rule needs and nobody the bot can write to is in.
UNSTAFFED_POLICY = "unstaffed_policy"

# The event of a requester's news that an approver changed their PO before approving it
# (edited_for; followed by ":" and the approver's id).
EDITED = "edited"

# The event of a daily digest (digest_for).
DIGEST = "digest"

# The events of the news to a called-off PO's requester and approvers (call_off_news_for): an
# admin called the sent PO off and the supplier is being e-mailed a cancellation; then the
# supplier has it (the e-mail went, or a person found it did, or told them another way).
CALLED_OFF = "called_off"
CALL_OFF_DONE = "call_off_done"

# The event of news to a sent PO's requester and approvers that its supplier answered from the
# link in the e-mail (supplier_news_for): followed by ":" and the supplier's status
# (core.jobs.answers.SupplierStatus: accepted, declined or changes_proposed).
SUPPLIER = "supplier"
# The event of the news to a PO's requester and approvers that an e-mail reply about it came
# into the buyer's inbox (core.suppliers.replies), followed by ":" and the reply's id.
SUPPLIER_MAIL = "supplier_mail"
# The event of the news to a sent PO's requester and the admins that its supplier has not
# answered the e-mail in the time the policy's [suppliers] allows (core.suppliers.chasing).
SILENT = "supplier_silent"
# The event of a requester's news that the approvers turned down (or let expire) the changes
# the supplier of their sent PO proposed: the version the supplier has stands.
TURNED_DOWN = "proposal_turned_down"
# The event of the admins' news that a send of unknown outcome was settled as sent because
# the supplier used the link in that e-mail: it left the review queue on its own.
SETTLED_BY_LINK = "settled_by_link"
# The same, settled because the mail relay's Sent folder holds a copy (core.outbox.reconcile).
SETTLED_BY_RELAY = "settled_by_relay"
# The event of the admins' news that a send of unknown outcome has no copy in the mail relay's
# Sent folder once the grace period is over (core.outbox.reconcile): it most likely never left,
# and waits in the review queue for a person's Send again.
COPY_MISSING = "relay_copy_missing"
# The event of the admins' news that a note to a supplier (core.outbox.notes) failed for good or
# may not have gone, and will not be sent again; followed by ":" and its kind (reject-proposal,
# remind-po): a person tells the supplier another way.
NOTE_FAILED = "note_failed"

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
        Action.HOLD_RESTORED,
        Action.FAIL_FINAL,
        Action.RECONCILE_FAILED,
    }
)


def refreshes_cards(source: State, action: Action) -> bool:
    """Whether a move changes what the job's delivered cards should say: any move from
    AWAITING_APPROVAL, a new draft version, or the end of an approved PO's window."""
    return source is State.AWAITING_APPROVAL or action in {
        Action.REVISE,
        Action.EXPIRE,
        Action.CANCEL,
    }


def alerts_admins(target: State) -> bool:
    """Whether a move puts the PO in front of a person: the manual-review queue."""
    return target in NEEDS_REVIEW


def is_moot(notice: Notice, job: Job) -> bool:
    """Whether news that a PO needs a person is moot, since it left that state (a person acted
    already, say, or cancelled it in the same transaction)."""
    if notice.event == COPY_MISSING:  # a person or the relay settled it since
        return job.state not in NEEDS_REVIEW
    return notice.event in NEEDS_REVIEW and job.state.value != notice.event


async def settle(tx: Tx, notice: Notice, status: NoticeStatus, now: datetime, **more: Any) -> None:
    """Record where the notice ended up and give up its lease."""
    await tx.update_notice(
        notice, status=status, lease_owner=None, lease_until=None, updated_at=now, **more
    )


def _fresh(now: datetime) -> dict[str, Any]:
    """The delivery fields of a notice that is owed from `now` and not yet tried."""
    return {
        "status": NoticeStatus.PENDING,
        "version": 0,
        "attempts": 0,
        "next_attempt_at": now,
        "lease_owner": None,
        "lease_until": None,
        "message_id": None,
        "last_error": None,
        "created_at": now,
        "updated_at": now,
    }


def owed(
    kind: NoticeKind, *, key: str, user_id: int, job: Job | None, now: datetime, event: str
) -> Notice:
    """A new notice, pending from `now`, about `job`'s current draft version (None: about no
    job, as a digest or a policy's alert)."""
    return Notice(
        key=key,
        kind=kind,
        user_id=user_id,
        job_id=None if job is None else job.id,
        draft_version=0 if job is None else job.draft_version or 0,
        event=event,
        **_fresh(now),
    )


def card_for(job: Job, approver: int, now: datetime, again: str = "") -> Notice:
    """One card per approver per draft version: the key makes a second one impossible, but
    for a card sent `again` on purpose (an approver back from leave: `again` names why)."""
    key = f"card:{job.po_number}:v{job.draft_version}:{approver}" + (again and f":{again}")
    return owed(NoticeKind.CARD, key=key, user_id=approver, job=job, now=now, event="")


def card_edits_for(
    job: Job, now: datetime, late_card: int | None = None, because: str = ""
) -> Notice:
    """An edit of the job's delivered cards to what is true at `job.version`; `late_card`: the
    approver whose card was delivered after that version's edit had already run; `because`:
    what else changed what the cards should say (a delegation's end, say)."""
    late = "" if late_card is None else f":late{late_card}"
    key = f"cards:{job.po_number}:j{job.version}{late}" + (because and f":{because}")
    kind = NoticeKind.CARD_EDITS
    return owed(kind, key=key, user_id=EVERYONE, job=job, now=now, event=job.state.value)


def queue_item_shown(job: Job, chat_id: int, message_id: int, now: datetime) -> Notice:
    """The record that /queue showed `job` (at its current version) in message `message_id` of
    `chat_id`: sent already, never delivered, but edited once the job leaves the queue
    (queue_edits_for), whoever or whatever settles it."""
    key = f"queue:{job.po_number}:j{job.version}:{chat_id}:{message_id}"
    shown = owed(NoticeKind.QUEUE_ITEM, key=key, user_id=chat_id, job=job, now=now, event="")
    return replace(shown, status=NoticeStatus.SENT, message_id=message_id, event=f"j{job.version}")


def queue_edits_for(job: Job, now: datetime) -> Notice:
    """An edit of the job's review-queue messages to what took it out of the queue (`job` is
    the job after that move)."""
    key = f"queue-edits:{job.po_number}:j{job.version}"
    return owed(NoticeKind.QUEUE_EDITS, key=key, user_id=EVERYONE, job=job, now=now, event="")


def status_for(job: Job, now: datetime) -> Notice:
    """The requester's news that their PO reached `job.state`."""
    key = f"status:{job.po_number}:{job.state.value}:{job.version}"
    kind, event = NoticeKind.STATUS, job.state.value
    return owed(kind, key=key, user_id=job.requester_id, job=job, now=now, event=event)


def edited_for(job: Job, editor: int, now: datetime) -> Notice:
    """The requester's news that `editor` changed their PO into its current draft version
    (core.purchasing.edits), what changed read from the drafts when it is delivered."""
    key = f"status:{job.po_number}:{EDITED}:v{job.draft_version}"
    kind, event = NoticeKind.STATUS, f"{EDITED}:{editor}"
    return owed(kind, key=key, user_id=job.requester_id, job=job, now=now, event=event)


def call_off_news_for(job: Job, user_id: int, now: datetime, event: str) -> Notice:
    """One person's news (the requester's, or an approver's) that the sent PO `job` is being
    called off (`event` CALLED_OFF), or is called off with the supplier told (CALL_OFF_DONE);
    the reason and who called it off are read from the audit trail when it is delivered."""
    key = f"status:{job.po_number}:{event}:j{job.version}:{user_id}"
    return owed(NoticeKind.STATUS, key=key, user_id=user_id, job=job, now=now, event=event)


def supplier_news_for(job: Job, user_id: int, answer: Answer, now: datetime, event: str) -> Notice:
    """One person's news (the requester's, or an approver's) that the supplier gave `answer`
    (`event`: SUPPLIER, ":", the status it leaves); what they said is read when delivered."""
    key = f"status:{job.po_number}:{SUPPLIER}:v{answer.draft_version}:r{answer.round}:{user_id}"
    notice = owed(NoticeKind.STATUS, key=key, user_id=user_id, job=job, now=now, event=event)
    return replace(notice, draft_version=answer.draft_version)


def supplier_mail_for(job: Job, user_id: int, mail_id: int, now: datetime) -> Notice:
    """One person's news (the requester's, or an approver's) that an e-mail reply about `job`
    came in (core.suppliers.replies); what it says is read when delivered."""
    key = f"status:{job.po_number}:{SUPPLIER_MAIL}:{mail_id}:{user_id}"
    event = f"{SUPPLIER_MAIL}:{mail_id}"
    return owed(NoticeKind.STATUS, key=key, user_id=user_id, job=job, now=now, event=event)


def turned_down_for(job: Job, now: datetime) -> Notice:
    """The requester's news that the supplier's proposal for their PO was turned down (the job
    is SENT again); the reason is read from the move that did, when it is delivered."""
    key = f"status:{job.po_number}:{TURNED_DOWN}:j{job.version}"
    kind, event = NoticeKind.STATUS, TURNED_DOWN
    return owed(kind, key=key, user_id=job.requester_id, job=job, now=now, event=event)


def alert_for(job: Job, now: datetime, event: str) -> Notice:
    """The admins' news about `job`: `event` is the state it entered, or UNREACHABLE or
    UNDELIVERED, ":", the approver's id."""
    key = f"alert:{job.po_number}:{event}:j{job.version}"
    return owed(NoticeKind.ALERT, key=key, user_id=EVERYONE, job=job, now=now, event=event)


def short_stage_alert(job: Job, stage: int, now: datetime) -> Notice:
    """The admins' news that stage `stage` (an index) of the route of `job`'s current draft
    can no longer be completed; one per draft version and stage, however often it is found."""
    key = f"alert:{job.po_number}:{SHORT_STAGE}:v{job.draft_version}:s{stage}"
    event = f"{SHORT_STAGE}:{stage}"
    return owed(NoticeKind.ALERT, key=key, user_id=EVERYONE, job=job, now=now, event=event)


def policy_alert(version: str, now: datetime) -> Notice:
    """The admins' news that policy `version` is in force with a group nobody can approve
    for; one per version, whoever imports it again."""
    key = f"alert:policy:{version}:{UNSTAFFED_POLICY}"
    event = f"{UNSTAFFED_POLICY}:{version}"
    return owed(NoticeKind.ALERT, key=key, user_id=EVERYONE, job=None, now=now, event=event)


def digest_for(person: int, day: date, now: datetime) -> Notice:
    """One person's daily digest of `day` (core.messaging.nudges): one per person and day."""
    key = f"digest:{day.isoformat()}:{person}"
    return owed(NoticeKind.NUDGE, key=key, user_id=person, job=None, now=now, event=DIGEST)


def policy_of(notice: Notice) -> str | None:
    """The policy version a job-less alert (policy_alert) is about; None for any other."""
    event, _, version = notice.event.partition(":")
    return version if notice.job_id is None and event == UNSTAFFED_POLICY else None


def fanned_out(alert: Notice, admin_id: int, now: datetime) -> Notice:
    """One admin's copy of an alert owed to EVERYONE."""
    return replace(alert, key=f"{alert.key}:{admin_id}", user_id=admin_id, **_fresh(now))
