"""What a restore from a backup must do before the bot starts again, so that it never sends twice.

A snapshot is a moment; the e-mails it shows as owed or under way (a PO approved, sending, or
waiting to retry; a cancellation owed) may have left after that moment, before the database was
lost. Sending them again would be a blind retry. So each one is held for reconciliation: its row
is UNKNOWN, its PO moves to UNKNOWN_OUTCOME (or CANCEL_UNKNOWN) saying "restored from a backup
of <time>", and it waits in the review queue for a person, or for the relay's Sent copy
(core.outbox.reconcile). A note to a supplier (a reminder, a proposal turned down) that was owed
is never sent again either: the admins are told, as for any note that may have gone.

Telegram news owed in the snapshot may have been delivered since: only what is harmless twice is
kept (card and queue-message edits, which show what is true when they run, and cards, which a
tap checks against the draft). Every other owed message is dropped, and approvers are sent their
cards again, since the messages they hold may be newer than the snapshot knows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.jobs import notices
from core.jobs.effects import NOTES, OPEN_STATUSES, EffectKind, EffectStatus
from core.jobs.jobs import Job, Stamp
from core.jobs.notices import Notice, NoticeKind, NoticeStatus, settle
from core.jobs.sends import release
from core.jobs.states import Action, State
from core.jobs.transitions import move
from core.ports import Store, Tx

ACTOR = "restore"
# What the held PO's own e-mail is, by the state it was held in.
_HELD = {
    State.APPROVED: EffectKind.SEND_PO,
    State.SENDING: EffectKind.SEND_PO,
    State.FAILED_RETRYABLE: EffectKind.SEND_PO,
    State.CANCELLING: EffectKind.CANCEL_PO,
}
# Owed messages a duplicate of is harmless: edits show what is true now; a card is checked.
_HARMLESS = frozenset({NoticeKind.CARD, NoticeKind.CARD_EDITS, NoticeKind.QUEUE_EDITS})
_OWED = frozenset({NoticeStatus.PENDING, NoticeStatus.CLAIMED})


@dataclass(frozen=True)
class Held:
    """What a restore held back: the POs, the notes, the messages dropped, the cards re-sent."""

    pos: tuple[str, ...]
    notes: int
    dropped: int
    cards: int


def reason_of(taken_at: datetime) -> str:
    """What the trail and the review queue say of a send held by a restore."""
    return f"restored from a backup of {taken_at.isoformat(timespec='seconds')}"


async def hold_unsettled(store: Store, taken_at: datetime, now: datetime) -> Held:
    """Hold every e-mail the restored snapshot (taken at `taken_at`) shows unsettled, drop the
    Telegram news that a duplicate of would mislead, and owe the approvers their cards again."""
    pos: list[str] = []
    held_notes = dropped = cards = 0
    async with store.reading() as tx:
        jobs = await tx.jobs_in_states(frozenset(State))
    for job in jobs:
        async with store.begin() as tx:
            current = await tx.job(job.id)
            stamp, why = Stamp(ACTOR, now), reason_of(taken_at)
            # What the snapshot owed, read before the hold owes its own news (kept).
            snapshot_notices = await tx.notices_for(job.id)
            for notice in snapshot_notices:
                if notice.status in _OWED and notice.kind not in _HARMLESS:
                    await settle(tx, notice, NoticeStatus.CANCELLED, now)
                    dropped += 1
            open_rows = [e for e in await tx.effects_for(job.id) if e.status in OPEN_STATUSES]
            kind = _HELD.get(current.state)
            own = [e for e in open_rows if kind is not None and e.kind == kind]
            for effect in own:
                await release(tx, effect, now, status=EffectStatus.UNKNOWN, last_error=why)
            if own:
                detail = {"key": own[-1].key, "reason": why}
                current = await move(tx, current, Action.HOLD_RESTORED, stamp, detail)
                pos.append(current.po_number)
            for effect in open_rows:
                if effect.kind in NOTES:
                    await release(tx, effect, now, status=EffectStatus.UNKNOWN, last_error=why)
                    event = f"{notices.NOTE_FAILED}:{effect.kind}"
                    await tx.insert_notice(notices.alert_for(current, now, event))
                    held_notes += 1
            cards += await _cards_again(tx, current, snapshot_notices, taken_at, now)
    return Held(tuple(pos), held_notes, dropped, cards)


async def _cards_again(
    tx: Tx, job: Job, shown: list[Notice], taken_at: datetime, now: datetime
) -> int:
    """A fresh card for each approver who was sent one (`shown`) of the waiting version."""
    if job.state is not State.AWAITING_APPROVAL:
        return 0
    sent = {
        n.user_id
        for n in shown
        if n.kind is NoticeKind.CARD
        and n.draft_version == job.draft_version
        and n.status is NoticeStatus.SENT
    }
    again = f"restored{taken_at:%Y%m%d%H%M%S}"
    for user in sorted(sent):
        await tx.insert_notice(notices.card_for(job, user, now, again=again))
    return len(sent)
