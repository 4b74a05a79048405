"""The manual-review queue in Telegram, for admins: /queue lists each PO whose send failed for
good or whose outcome is unknown, with what happened and signed buttons for the choices
(core.review). A tap is checked like a card's: the signed data first, then the admin and the
PO's state inside the one transaction that acts; it is answered at once, then the message is
edited to the outcome.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import tzinfo

from telegram import CallbackQuery, InlineKeyboardMarkup, Update, User
from telegram.constants import ParseMode
from telegram.error import TelegramError
from telegram.ext import ContextTypes

from bot.clock import utcnow
from bot.telegram.cards import escaped, signed_markup
from bot.telegram.context import Deps, answer_tap, deps_of
from bot.telegram.decisions import NOT_VALID, checked_tap, deliver_now
from bot.telegram.errors import classify
from bot.texts import local_time
from core import review
from core.delivery import Failure
from core.effects import message_id
from core.errors import AlreadyResolved, IllegalTransition, NotAnAdmin
from core.jobs import Effect, Job
from core.money import format_pkr
from core.people import is_admin
from core.ports import ShellReadTx
from core.review import Choice, Resolution
from core.signing import ButtonAction
from core.states import NEEDS_REVIEW, State

log = logging.getLogger(__name__)

# Messages one /queue sends: a phone screen's scrolling, and well within Telegram's pace.
QUEUE_LIMIT = 20
# A provider's error can be long; the whole of it is in /history and `manzoori jobs show`.
_WHAT_CUT = 300
EMPTY = "The manual-review queue is empty."
NOT_AN_ADMIN = "Only admins can see the review queue."
ONLY_ADMINS = "Only admins can do this."
BUTTONS = {
    Choice.MARK_SENT: ("✅ Mark sent", ButtonAction.MARK_SENT),
    Choice.SEND_AGAIN: ("🔁 Send again", ButtonAction.SEND_AGAIN),
    Choice.CANCEL: ("🚫 Cancel", ButtonAction.CANCEL),
}
_CHOICE_OF = {action: choice for choice, (_text, action) in BUTTONS.items()}
# What the state means for the admin, and what to check before choosing.
_ADVICE = {
    State.UNKNOWN_OUTCOME: "The supplier may or may not have the e-mail: ask them, or search "
    "the mail relay's log, for the Message-ID below.",
    State.FAILED_FINAL: "The e-mail was not delivered. Send again puts the same PO up for a "
    "fresh approval as a new version.",
}


@dataclass(frozen=True)
class QueueItem:
    """One PO in the queue, with what an admin needs to choose."""

    job: Job
    supplier: str
    requester: str
    send: Effect | None  # the last send of the current draft version, if it got that far
    what: str  # what happened, from the audit event that put it in the queue


async def queue_items(tx: ShellReadTx, limit: int) -> tuple[list[QueueItem], int]:
    """The oldest `limit` POs in the queue, and how many more there are."""
    jobs = await tx.jobs_in_states(NEEDS_REVIEW)
    return [await _item(tx, job) for job in jobs[:limit]], max(len(jobs) - limit, 0)


async def _item(tx: ShellReadTx, job: Job) -> QueueItem:
    draft = await tx.draft(job.id, job.draft_version) if job.draft_version else None
    known = await tx.telegram_user(job.requester_id)
    sends = [e for e in await tx.effects_for(job.id) if e.draft_version == job.draft_version]
    entered = [a for a in await tx.audit(job.id) if a.to_state is job.state]
    detail = entered[-1].detail if entered else {}
    why = detail.get("error") or detail.get("reason") or detail.get("note")
    what = ": ".join(str(part) for part in (detail.get("decision"), why) if part)
    return QueueItem(
        job=job,
        supplier=draft.supplier_name if draft else job.supplier_id or "-",
        requester=known.first_name if known else f"user {job.requester_id}",
        send=sends[-1] if sends else None,
        what=what or (sends[-1].last_error if sends else None) or "no reason recorded",
    )


def item_html(item: QueueItem, tz: tzinfo, mail_domain: str) -> str:
    """One queue message: the PO, what happened, when, and what to check."""
    job, send = item.job, item.send
    what = item.what if len(item.what) <= _WHAT_CUT else item.what[: _WHAT_CUT - 1] + "…"
    attempts = f" ({send.attempts} attempt{'' if send.attempts == 1 else 's'})" if send else ""
    lines = [
        f"⚠️ <b>{escaped(job.po_number)}</b> · {escaped(job.state.value)}",
        f"{escaped(item.supplier)} · {escaped(format_pkr(job.total_paisa or 0))} · "
        f"draft v{job.draft_version or '-'}",
        f"What happened: {escaped(what)}{attempts}",
        f"Since {escaped(local_time(job.updated_at, tz))} · requested by {escaped(item.requester)}",
    ]
    if send is not None:
        lines += [
            f"Key: <code>{escaped(send.key)}</code>",
            f"Message-ID: <code>{escaped(message_id(send.key, mail_domain))}</code>",
        ]
    return "\n".join([*lines, escaped(_ADVICE.get(job.state, ""))]).rstrip()


def item_markup(secret: bytes, job: Job) -> InlineKeyboardMarkup | None:
    """The signed buttons of the choices that apply to `job`, on one row."""
    offered = review.choices(job)
    if not offered or job.draft_version is None or job.draft_hash is None:
        return None
    return signed_markup(secret, job, [[BUTTONS[choice] for choice in offered]])


async def queue_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/queue: the POs that need a person, oldest first, each with its buttons; admins only."""
    deps, user, message = deps_of(context), update.effective_user, update.effective_message
    assert user is not None and message is not None
    settings = deps.settings
    async with deps.store.reading() as tx:
        admin = is_admin(user.id, await tx.roles(user.id), settings.manzoori_admin_ids)
        items, more = await queue_items(tx, QUEUE_LIMIT) if admin else ([], 0)
    if not admin or not items:
        await message.reply_text(EMPTY if admin else NOT_AN_ADMIN)
        return
    total = len(items) + more
    await message.reply_text(
        f"Manual-review queue: {total} purchase order{'' if total == 1 else 's'}, oldest first."
    )
    for item in items:
        await message.reply_text(
            item_html(item, settings.tz, settings.mail_domain),
            parse_mode=ParseMode.HTML,
            reply_markup=item_markup(settings.secret, item.job),
        )
    if more:
        await message.reply_text(f"… and {more} more. Handle these, then send /queue again.")


async def on_queue_tap(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A queue button: Mark sent, Send again or Cancel; the data is checked before anything."""
    tap = await checked_tap(update, context)
    if tap is None:
        return
    query, user, deps, button, job = tap.query, tap.user, tap.deps, tap.button, tap.job
    choice = _CHOICE_OF.get(button.action)
    if choice is None:
        await answer_tap(query, NOT_VALID)
        return
    answer, headline = await _resolve(deps, user, job, choice, button.draft_version)
    await answer_tap(query, answer)  # at once: the phone shows a spinner until then
    if headline is not None:
        await _edit(query, await _outcome_html(deps, job.id, headline))
        deliver_now(context, deps, job.id)  # the requester's news, any new cards


async def _resolve(
    deps: Deps, user: User, job: Job, choice: Choice, version: int
) -> tuple[str, str | None]:
    """The answer for the tapper, and the message's new headline (None: leave it alone)."""
    settings, now = deps.settings, utcnow()
    try:
        chosen = review.AdminChoice(job.po_number, version, choice, user.id)
        admins = settings.manzoori_admin_ids
        done = await review.resolve(deps.store, chosen, admins, now, settings.rules())
    except NotAnAdmin:
        return ONLY_ADMINS, None
    except AlreadyResolved as moved:
        if moved.state in NEEDS_REVIEW:  # back in the queue, as another draft version
            where = f"now v{moved.draft_version}, {moved.state}"
            return f"Already handled: {job.po_number} is {where}; send /queue again.", (
                f"ℹ️ <b>Already handled</b>: {escaped(where)}"
            )
        return f"Already handled: {job.po_number} is {moved.state}.", (
            f"ℹ️ <b>Already handled</b>: now {escaped(moved.state)}"
        )
    except IllegalTransition as refused:  # the state changed to one without this choice
        return f"That no longer applies: {job.po_number} is {refused.state}.", (
            f"ℹ️ Now {escaped(refused.state)}: send /queue again"
        )
    answer, headline = _told(done)
    return (
        answer,
        f"{headline} by {escaped(user.first_name)} at {escaped(local_time(now, settings.tz))}",
    )


def _told(done: Resolution) -> tuple[str, str]:
    """What a resolution is called in the tap's answer and on the message."""
    version = done.job.draft_version
    match done.choice:
        case Choice.MARK_SENT:
            return "Marked sent.", "✅ <b>Marked sent</b>"
        case Choice.SEND_AGAIN if done.was is State.UNKNOWN_OUTCOME:
            return "Sending again with the same key.", "🔁 <b>Sending again</b> with the same key"
        case Choice.SEND_AGAIN:
            return (
                f"Re-issued as v{version}; it needs a fresh approval.",
                f"🔁 <b>Re-issued as v{version}</b> for a fresh approval",
            )
        case Choice.CANCEL:
            return "Cancelled.", "🚫 <b>Cancelled</b>"
    raise AssertionError(done.choice)


async def _outcome_html(deps: Deps, job_id: str, headline: str) -> str:
    """The queue message once it can no longer be tapped: what happened, then the PO."""
    async with deps.store.reading() as tx:
        job = await tx.job(job_id)
        draft = await tx.draft(job.id, job.draft_version) if job.draft_version else None
    supplier = draft.supplier_name if draft else job.supplier_id or "-"
    return (
        f"{headline}\n🧾 <b>{escaped(job.po_number)}</b> v{job.draft_version} · "
        f"{escaped(supplier)} · "
        f"{escaped(format_pkr(job.total_paisa or 0))} · {escaped(job.state.value)}"
    )


async def _edit(query: CallbackQuery, text: str) -> None:
    """Show the outcome in place of the buttons; an edit that changes nothing is fine."""
    try:
        await query.edit_message_text(text, parse_mode=ParseMode.HTML)
    except TelegramError as error:
        why = classify(error)
        if why.failure is not Failure.NOT_MODIFIED:
            log.warning("queue message not edited: %s", why.detail)
