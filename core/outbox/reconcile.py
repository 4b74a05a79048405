"""Ambiguous sends settled from the mail relay's own record, never by a blind retry.

A PO (or a cancellation) whose SMTP session broke after DATA waits in the manual-review queue
(UNKNOWN_OUTCOME, CANCEL_UNKNOWN). Most relays file a copy of every message they accept in the
sender's Sent folder (or Bcc it to a journal mailbox), so the shell looks its Message-ID and
Idempotency-Key up there (bot.mailbox) and hands what it found to `settle_by_copies`:

    a copy found (one or more)           the relay took it: settled as sent, with the
                                         copies (folder, UID, INTERNALDATE) as evidence
    none, within the grace period        the relay may not have filed it yet: look again
    none, once the grace period is over  it most likely never left: recorded once, the admins
                                         told; it stays in the queue for a person's Send again

Nothing here ever sends: a person resends, from the queue or `manzoori jobs reconcile`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from core.jobs import notices
from core.jobs.closing import settle_unknown
from core.jobs.effects import EffectKind, EffectStatus
from core.jobs.jobs import AuditEvent, Effect, Job, Stamp
from core.jobs.states import Action, State
from core.jobs.transitions import retry_on_stale
from core.outbox.calling_off import settle_call_off
from core.outbox.evidence import SentCopy
from core.ports import ReadTx, Store

# Who the audit trail says settled a send from the relay's copy.
ACTOR = "mailbox:sent-folder"
# The `by` of a settling move's detail (the review queue's message says how it left).
BY_RELAY = "sent_folder"
# The unmoved audit event that the grace period passed with no copy in the folder.
COPY_MISSING = "relay_copy_missing"

# The states whose e-mail may or may not have left, each with the finding that it did.
_SETTLES = {
    State.UNKNOWN_OUTCOME: (EffectKind.SEND_PO, Action.RECONCILE_SENT),
    State.CANCEL_UNKNOWN: (EffectKind.CANCEL_PO, Action.RECONCILE_CANCEL_SENT),
}
AMBIGUOUS = frozenset(_SETTLES)


class Finding(StrEnum):
    """What one look in the folder settled."""

    SENT = "sent"  # a copy is there: settled as sent
    WAITING = "waiting"  # none yet, within the grace period
    MISSING = "missing"  # none, and the grace period is over: a person decides
    MOVED = "moved"  # the PO left the queue meanwhile (a person, the supplier's link)


@dataclass(frozen=True)
class Ambiguous:
    """A send whose outcome is unknown: the PO, the e-mail, and whether the grace period has
    already passed with no copy found (then it is not reported again)."""

    job: Job
    effect: Effect
    missing_since: datetime | None  # when no copy was found after the grace period


async def ambiguous_sends(store: Store) -> list[Ambiguous]:
    """Every e-mail in the queue whose outcome is unknown, oldest PO first."""
    async with store.reading() as tx:
        return [
            found for job in await tx.jobs_in_states(AMBIGUOUS) if (found := await _of(tx, job))
        ]


async def _of(tx: ReadTx, job: Job) -> Ambiguous | None:
    effect = _unknown(job, await tx.effects_for(job.id))
    if effect is None:
        return None
    missing = [
        event.at
        for event in await tx.audit(job.id)
        if event.action == COPY_MISSING and event.detail.get("key") == effect.key
    ]
    return Ambiguous(job, effect, missing[-1] if missing else None)


def _unknown(job: Job, effects: Sequence[Effect]) -> Effect | None:
    """The job's e-mail of unknown outcome, of the kind its state is about."""
    kind = _SETTLES[job.state][0] if job.state in _SETTLES else None
    unknown = [e for e in effects if e.status is EffectStatus.UNKNOWN and e.kind == kind]
    return unknown[-1] if unknown else None


@retry_on_stale
async def settle_by_copies(
    store: Store,
    send: Ambiguous,
    folder: str,
    copies: Sequence[SentCopy],
    now: datetime,
    grace: timedelta,
) -> Finding:
    """Settle `send` on the copies of it found in `folder` at `now`: sent if there is one,
    else, once `grace` has passed since it became ambiguous, recorded as missing (once)."""
    async with store.begin() as tx:
        job = await tx.job(send.job.id)
        effect = _unknown(job, await tx.effects_for(job.id))  # None outside AMBIGUOUS
        if effect is None or effect.key != send.effect.key:
            return Finding.MOVED
        stamp = Stamp(ACTOR, now)
        if copies:
            detail = _evidence(effect, folder, copies)
            if job.state is State.UNKNOWN_OUTCOME:
                moved = await settle_unknown(tx, job, Action.RECONCILE_SENT, stamp, detail)
            else:
                moved = await settle_call_off(tx, job, Action.RECONCILE_CANCEL_SENT, stamp, detail)
            await tx.insert_notice(notices.alert_for(moved, now, notices.SETTLED_BY_RELAY))
            return Finding.SENT
        if now - job.updated_at < grace:
            return Finding.WAITING
        if send.missing_since is None:
            detail = {"key": effect.key, "folder": folder, "checked_at": now.isoformat()}
            await tx.append_audit(AuditEvent.unmoved(job, stamp, COPY_MISSING, detail))
            await tx.insert_notice(notices.alert_for(job, now, notices.COPY_MISSING))
        return Finding.MISSING


def _evidence(effect: Effect, folder: str, copies: Sequence[SentCopy]) -> dict[str, Any]:
    """The detail of a move settled by the relay's copies: what was found, where and when it
    was filed; the note the send's row keeps."""
    found = [
        {"folder": c.folder, "uid": c.uid, "internaldate": c.internaldate.isoformat()}
        for c in sorted(copies, key=lambda c: (c.internaldate, c.uid))
    ]
    times = "once" if len(found) == 1 else f"{len(found)} times"
    note = f"the mail relay filed it in {folder} {times} (first UID {found[0]['uid']})"
    return {"key": effect.key, "by": BY_RELAY, "copies": found, "note": note}
