"""Use cases of the Telegram outbox (core.jobs.notices): what a due piece of news should say now,
and what becomes of a notice once the shell has tried to send it. The shell only renders and
sends; the cards' own facts and edits are core.messaging.cards.

A notice is read when it is delivered, not when it was owed, so a late or repeated delivery
shows what is true then: news that a PO needs a person is dropped once somebody acted, an
alert about a stage that can be completed again is cancelled."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from core.approval.approval_policy import unreachable_groups
from core.approval.policies import DEFAULT_GROUP, Policy, Role, Verdict
from core.approval.shortfalls import Shortfall
from core.approval.standing import standing
from core.drafting.drafts import Draft, LineDiff, line_diff
from core.jobs import proposals
from core.jobs.answers import Answer, SupplierStatus, awaiting_answer
from core.jobs.jobs import Effect, Job
from core.jobs.notices import (
    CALL_OFF_DONE,
    CALLED_OFF,
    EDITED,
    EVERYONE,
    NOBODY_TO_ASK,
    NOTE_FAILED,
    SHORT_STAGE,
    SILENT,
    SUPPLIER,
    SUPPLIER_MAIL,
    TURNED_DOWN,
    UNDELIVERED,
    UNREACHABLE,
    UNSTAFFED_POLICY,
    Notice,
    NoticeKind,
    NoticeStatus,
    alert_for,
    fanned_out,
    is_moot,
    policy_of,
    settle,
)
from core.jobs.retries import ErrorClass, RetryPolicy, decide
from core.jobs.states import Action, State
from core.people.users import name_of
from core.ports import ReadTx, Store

if TYPE_CHECKING:  # the store reads it; only its type is named here, below its layer
    from core.suppliers.replies import FiledMail


class Failure(StrEnum):
    """Why Telegram did not take a message, as the shell's boundary classified it."""

    BLOCKED = "blocked"  # the user blocked the bot: write no more until they return
    NEVER_STARTED = "never_started"  # the user never pressed Start: the bot may not write
    REFUSED = "refused"  # any other refusal of the request: sending it again cannot help
    NOT_MODIFIED = "not_modified"  # an edit to what the message already says: nothing to do
    TOO_OLD = "too_old"  # a tap answered too late, or a message too old to edit
    FLOOD = "flood"  # 429: wait `retry_after`, then try again
    TRANSIENT = "transient"  # a network error, a 5xx, or the unforeseen: back off and retry


# Failures that end a notice for good; an approver's card that ends so is news for the admins.
_FINAL = frozenset({Failure.BLOCKED, Failure.NEVER_STARTED, Failure.REFUSED, Failure.TOO_OLD})


@dataclass(frozen=True)
class Undelivered:
    """A failed delivery: its classified cause, Telegram's words (for the row), and for a flood
    how long to wait."""

    failure: Failure
    detail: str
    retry_after: timedelta | None = None


@dataclass(frozen=True)
class News:
    """A plain message to send: a requester's (state, reason; or EDITED: who changed which
    lines, and the new total; or CALLED_OFF / CALL_OFF_DONE, also an approver's: the reason,
    and who called the sent PO off) or an admin's (event, approver; a stage that cannot be
    completed; or, about no job, a policy's groups nobody can approve for)."""

    job: Job | None  # None: a policy's news (core.jobs.notices.policy_alert)
    state: State | None = None  # a requester's: where their PO is now
    reason: str | None = None  # a rejection's reason
    event: str = ""  # an admin's: the state the PO entered, or UNREACHABLE / UNDELIVERED
    approver: str | None = None  # whose card did not go out, by name and id
    group: str | None = None  # the group with nobody to ask (NOBODY_TO_ASK)
    policy_version: str = ""  # UNSTAFFED_POLICY: the policy in force, and
    unstaffed: tuple[tuple[str, str], ...] = ()  # its groups nobody can approve for (name, title)
    editor: str = ""  # EDITED: the approver who changed the PO, by name
    changes: tuple[LineDiff, ...] = ()  # EDITED: the lines they changed
    total_paisa: int = 0  # EDITED: the changed PO's total
    short: Shortfall | None = None  # SHORT_STAGE: the stage that cannot be completed, and why
    stages: int = 0  # SHORT_STAGE: how many stages the PO's route has
    called_off_by: str = ""  # CALLED_OFF: the admin who called the sent PO off (and `reason`)
    answer: Answer | None = None  # SUPPLIER: what the supplier answered from the e-mail's link,
    draft: Draft | None = None  # to the draft version it answered; SILENT: the version sent
    sent: Effect | None = None  # SILENT: the e-mail the supplier has not answered
    phone: str = ""  # SILENT: the supplier's phone from the terms, international digits
    mail: FiledMail | None = None  # SUPPLIER_MAIL: the e-mail reply that came in, and
    addressed: str = ""  # the address the PO went to (a reply from another is marked)


async def claim(
    store: Store, now: datetime, owner: str, lease: timedelta, limit: int, job_id: str | None
) -> list[Notice]:
    """Lease due notices (of one job, if given) to `owner`."""
    async with store.begin() as tx:
        return await tx.claim_notices(now, owner, now + lease, limit, job_id)


async def keep_lease(store: Store, notice: Notice, now: datetime, lease: timedelta) -> Notice:
    """Renew a lease half gone (a batch can wait out several floods), so that no other process
    sends the same card meanwhile; LeaseLost if another has it already."""
    if notice.lease_until is None or notice.lease_until - now > lease / 2:
        return notice
    async with store.begin() as tx:
        return await tx.update_notice(notice, lease_until=now + lease, updated_at=now)


async def sent(store: Store, notice: Notice, message_id: int | None, now: datetime) -> None:
    """A notice delivered (an edit pass has no one message id)."""
    async with store.begin() as tx:
        attempts = notice.attempts + 1
        await settle(tx, notice, NoticeStatus.SENT, now, message_id=message_id, attempts=attempts)


async def news_to_send(store: Store, notice: Notice, now: datetime, default: Policy) -> News | None:
    """What a STATUS or an admin's ALERT notice says; None, and the notice cancelled, if the
    news is moot by now (a PO needing a person left that state; a stage that could not be
    completed can be, or the PO is decided; a policy's group nobody could approve for has
    someone now, or another policy is in force). Read-only unless it cancels: a delivery
    takes no write turn (SQLite's one writer) that the next tap's decision needs. `default`:
    the configuration's policy."""
    async with store.reading() as tx:
        news = await _news(tx, notice, now, default)
    if news is not None:
        return news
    async with store.begin() as tx:
        news = await _news(tx, notice, now, default)  # read again where it is cancelled
        if news is None:
            await settle(tx, notice, NoticeStatus.CANCELLED, now)
        return news


def job_id_of(notice: Notice) -> str:
    """The job of a notice that has one: every kind but a policy's alert."""
    assert notice.job_id is not None, f"notice {notice.key} is about no job"
    return notice.job_id


async def _news(tx: ReadTx, notice: Notice, now: datetime, default: Policy) -> News | None:
    """What the notice says now, or None if it is moot."""
    version = policy_of(notice)
    if version is not None:
        return await _policy_news(tx, version)
    job = await tx.job(job_id_of(notice))
    if is_moot(notice, job):
        return None
    if notice.kind is NoticeKind.STATUS and notice.event.startswith(f"{EDITED}:"):
        return await _edit_news(tx, job, notice)
    if notice.kind is NoticeKind.STATUS and notice.event in (CALLED_OFF, CALL_OFF_DONE):
        return await _call_off_news(tx, job, notice.event)
    if notice.event == SILENT:  # the requester's, or an admin's once fanned out
        return await _silent_news(tx, job)
    if notice.kind is NoticeKind.STATUS and notice.event == TURNED_DOWN:
        return News(job, event=TURNED_DOWN, reason=await proposals.rejection_reason(tx, job))
    if notice.kind is NoticeKind.STATUS and notice.event.startswith(f"{SUPPLIER}:"):
        return await _supplier_news(tx, job, notice)
    if notice.kind is NoticeKind.STATUS and notice.event.startswith(f"{SUPPLIER_MAIL}:"):
        return await _mail_news(tx, job, int(notice.event.partition(":")[2]))
    if notice.kind is NoticeKind.STATUS:
        state = State(notice.event)
        reason = await _rejection_reason(tx, job) if state is State.REJECTED else None
        return News(job, state=state, reason=reason)
    event, _, whom = notice.event.partition(":")
    if event == NOTE_FAILED:  # a note to the supplier (`whom`: its kind) did not surely go
        return News(job, event=notice.event)
    if event == NOBODY_TO_ASK:  # nobody in the waiting stage's group (`whom`) to ask
        return News(job, event=event, group=whom or DEFAULT_GROUP)
    if event == SHORT_STAGE:  # stage `whom` (an index) cannot be completed: still so?
        return await _short_news(tx, job, notice.draft_version, int(whom), now, default)
    approver = None
    if whom:  # an approver's card did not go out
        known = await tx.telegram_user(int(whom))
        approver = f"{known.first_name if known else 'An approver'} (Telegram id {whom})"
    return News(job, event=event, approver=approver)


async def _short_news(
    tx: ReadTx, job: Job, version: int, stage: int, now: datetime, default: Policy
) -> News | None:
    """The admins' news that stage `stage` of draft `version` cannot be completed, with why
    as things stand now; None once it can be, or the draft no longer waits for approval."""
    if job.state is not State.AWAITING_APPROVAL or job.draft_version != version:
        return None
    where = await standing(tx, job, now, default)
    short = next((s for s in where.shortfalls if s.stage == stage), None)
    if short is None:
        return None
    return News(job, event=SHORT_STAGE, short=short, stages=len(where.route.stages))


async def _edit_news(tx: ReadTx, job: Job, notice: Notice) -> News:
    """The requester's news that an approver changed their PO (core.jobs.notices.edited_for): the
    lines that changed from the version before the notice's, read now from the drafts."""
    editor = int(notice.event.partition(":")[2])
    made = await tx.draft(job.id, notice.draft_version)
    shown = await tx.draft(job.id, notice.draft_version - 1)
    changes = tuple(line_diff(shown, made))
    name = await name_of(tx, editor)
    return News(job, event=EDITED, editor=name, changes=changes, total_paisa=made.total_paisa)


async def _call_off_news(tx: ReadTx, job: Job, event: str) -> News:
    """A called-off PO's news (core.jobs.notices.call_off_news_for): the reason and who called
    it off, read from the move that did (a person by name, the CLI's operator by login)."""
    called = [a for a in await tx.audit(job.id) if a.action == Action.CANCEL_SENT.value]
    if not called:  # never called off: the news names no one
        return News(job, event=event)
    kind, _, who = called[-1].actor.partition(":")
    by = await name_of(tx, int(who)) if kind == "user" and who.isdigit() else who or kind
    return News(job, event=event, reason=str(called[-1].detail.get("reason", "")), called_off_by=by)


async def _silent_news(tx: ReadTx, job: Job) -> News | None:
    """The news that `job`'s supplier has not answered the e-mail that went: which, when, and
    the supplier's phone if the terms give one; None once they answered, or the PO is called
    off or being replaced."""
    sent = await awaiting_answer(tx, job)
    if sent is None:
        return None
    draft = await tx.draft(job.id, sent.draft_version)
    terms = await tx.terms(draft.terms_version)
    supplier = terms.suppliers.get(draft.supplier_id) if terms is not None else None
    phone = supplier.phone if supplier is not None else ""
    return News(job, event=SILENT, draft=draft, sent=sent, phone=phone)


async def _supplier_news(tx: ReadTx, job: Job, notice: Notice) -> News | None:
    """The supplier's answer a notice (core.jobs.notices.supplier_news_for) is news of: the
    latest of its draft version with the status the notice names; None if there is none."""
    status = SupplierStatus(notice.event.partition(":")[2])
    given = [
        a
        for a in await tx.supplier_answers(job.id)
        if a.draft_version == notice.draft_version and a.status is status
    ]
    if not given:
        return None
    draft = await tx.draft(job.id, notice.draft_version)
    return News(job, event=SUPPLIER, answer=max(given, key=lambda a: a.round), draft=draft)


async def _mail_news(tx: ReadTx, job: Job, mail_id: int) -> News | None:
    """An e-mail reply filed on `job` (core.suppliers.replies), with the address the PO went
    to; None if it is gone."""
    filed = await tx.supplier_mail(mail_id)
    if filed is None:
        return None
    draft = await tx.draft(job.id, job.draft_version) if job.draft_version else None
    addressed = draft.recipient_email if draft is not None else ""
    return News(job, event=SUPPLIER_MAIL, mail=filed, draft=draft, addressed=addressed)


async def _policy_news(tx: ReadTx, version: str) -> News | None:
    """The groups of policy `version` nobody can approve for, while it is in force and any
    such group is left."""
    policy = await tx.current_policy()
    if policy is None or policy.version != version:
        return None  # a later import owes news of its own
    missing = await unreachable_groups(tx, policy)
    if not missing:
        return None
    named = tuple((group, policy.title(group)) for group in missing)
    return News(None, event=UNSTAFFED_POLICY, policy_version=version, unstaffed=named)


async def _rejection_reason(tx: ReadTx, job: Job) -> str | None:
    rejections = [d for d in await tx.decisions(job.id) if d.verdict is Verdict.REJECT]
    return rejections[-1].reason if rejections else None


async def fan_out(
    store: Store, alert: Notice, now: datetime, configured: frozenset[int], default: Policy
) -> int:
    """Turn an ALERT owed to EVERYONE into one notice per admin (configured or holding the
    role), unless it is moot; how many admins it went to."""
    assert alert.kind is NoticeKind.ALERT and alert.user_id == EVERYONE
    async with store.begin() as tx:
        if await _news(tx, alert, now, default) is None:
            await settle(tx, alert, NoticeStatus.CANCELLED, now)
            return 0
        admins = set(configured) | set(await tx.holders(Role.ADMIN))
        for admin in sorted(admins):
            await tx.insert_notice(fanned_out(alert, admin, now))
        await settle(tx, alert, NoticeStatus.SENT, now)
        return len(admins)


async def undelivered(
    store: Store,
    notice: Notice,
    why: Undelivered,
    now: datetime,
    policy: RetryPolicy,
    rand: float,
) -> NoticeStatus:
    """Record a failed delivery: wait out a flood, give up on a refusal (marking a user who
    blocked the bot), back off on anything else until `policy`'s caps (`rand`: this try's
    jitter). An approver's card given up on is news for the admins."""
    attempts = notice.attempts + 1
    if why.failure is Failure.FLOOD:
        status, retry_at = NoticeStatus.PENDING, now + (why.retry_after or timedelta())
    elif why.failure in _FINAL:
        status, retry_at = NoticeStatus.FAILED, now
    else:
        verdict = decide(policy, ErrorClass.TRANSIENT, attempts, notice.created_at, now, rand)
        status = NoticeStatus.FAILED if verdict.retry_at is None else NoticeStatus.PENDING
        retry_at = verdict.retry_at or now
    async with store.begin() as tx:
        tried = {"attempts": attempts, "next_attempt_at": retry_at, "last_error": why.detail[:300]}
        await settle(tx, notice, status, now, **tried)
        if status is not NoticeStatus.FAILED:
            return status
        if why.failure is Failure.BLOCKED:
            await tx.mark_blocked(notice.user_id, now)
        if notice.kind is NoticeKind.CARD:  # an approver the admins must chase
            event = UNREACHABLE if why.failure in _FINAL else UNDELIVERED
            job = await tx.job(job_id_of(notice))
            await tx.insert_notice(alert_for(job, now, f"{event}:{notice.user_id}"))
    return status
