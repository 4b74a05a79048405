"""The manual-review queue in Telegram, for admins: /queue lists each PO whose send failed for
good or whose outcome is unknown (its own e-mail, or the cancellation of a sent PO), with what
happened and signed buttons for the choices (core.outbox.review). A tap is checked like a
card's: the signed data first, then the admin and the PO's state inside the one transaction
that acts; it is answered at once, then the message is edited to the outcome.
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
from bot.telegram.review_texts import headed, left_html, told
from bot.words.i18n import ENGLISH, N_, Translator, language_of, translator
from bot.words.texts import local_time
from core.approval.signing import ButtonAction
from core.drafting.money import format_pkr
from core.errors import AlreadyResolved, IllegalTransition, NotAnAdmin
from core.jobs.effects import EffectKind, message_id
from core.jobs.jobs import AuditEvent, Effect, Job
from core.jobs.states import CALLING_OFF, NEEDS_REVIEW, State
from core.messaging.delivery import Failure
from core.outbox import review
from core.outbox.reconcile import COPY_MISSING
from core.outbox.review import Choice
from core.people.users import called, is_admin
from core.ports import ShellReadTx

log = logging.getLogger(__name__)

# Messages one /queue sends: a phone screen's scrolling, and well within Telegram's pace.
QUEUE_LIMIT = 20
# A provider's error can be long; the whole of it is in /history and `manzoori jobs show`.
_WHAT_CUT = 300
EMPTY = N_("The manual-review queue is empty.")
NOT_AN_ADMIN = N_("Only admins can see the review queue.")
ONLY_ADMINS = N_("Only admins can do this.")
# Translated like a card's buttons: the words change with the language, the marks and data not.
BUTTONS = {
    Choice.MARK_SENT: (N_("✅ Mark sent"), ButtonAction.MARK_SENT),
    Choice.SEND_AGAIN: (N_("🔁 Send again"), ButtonAction.SEND_AGAIN),
    Choice.CANCEL: (N_("🚫 Cancel"), ButtonAction.CANCEL),
    Choice.SETTLED: (N_("☎️ Settled"), ButtonAction.SETTLED),
}
_CHOICE_OF = {action: choice for choice, (_text, action) in BUTTONS.items()}
# What the state means for the admin, and what to check before choosing.
_ADVICE = {
    State.UNKNOWN_OUTCOME: N_(
        "The supplier may or may not have the e-mail: ask them, or search "
        "the mail relay's log, for the Message-ID below."
    ),
    State.FAILED_FINAL: N_(
        "The e-mail was not delivered. Send again puts the same PO up for a "
        "fresh approval as a new version."
    ),
    State.CANCEL_UNKNOWN: N_(
        "The PO was cancelled after it was sent, and the supplier may or may not have the "
        "cancellation e-mail: ask them, or search the mail relay's log, for the Message-ID "
        "below."
    ),
    State.CANCEL_FAILED: N_(
        "The PO was cancelled after it was sent, but the cancellation e-mail was not "
        "delivered: phone the supplier to call the PO off, then tap Settled."
    ),
}


@dataclass(frozen=True)
class QueueItem:
    """One PO in the queue, with what an admin needs to choose."""

    job: Job
    supplier: str
    requester: str
    send: Effect | None  # the last send of the current draft version, if it got that far
    what: str  # what happened, from the audit event that put it in the queue
    missing: AuditEvent | None = None  # the relay's folder held no copy of `send` (reconcile)


async def queue_items(tx: ShellReadTx, limit: int) -> tuple[list[QueueItem], int]:
    """The oldest `limit` POs in the queue, and how many more there are."""
    jobs = await tx.jobs_in_states(NEEDS_REVIEW)
    return [await _item(tx, job) for job in jobs[:limit]], max(len(jobs) - limit, 0)


async def _item(tx: ShellReadTx, job: Job) -> QueueItem:
    draft = await tx.draft(job.id, job.draft_version) if job.draft_version else None
    known = await tx.telegram_user(job.requester_id)
    sends = [e for e in await tx.effects_for(job.id) if e.draft_version == job.draft_version]
    if job.state in CALLING_OFF:  # the cancellation's e-mail is the one to check
        sends = [e for e in sends if e.kind == EffectKind.CANCEL_PO]
    trail = await tx.audit(job.id)
    entered = [a for a in trail if a.to_state is job.state and a.from_state is not job.state]
    detail = entered[-1].detail if entered else {}
    why = detail.get("error") or detail.get("reason") or detail.get("note")
    what = ": ".join(str(part) for part in (detail.get("decision"), why) if part)
    key = sends[-1].key if sends else None
    missing = [a for a in trail if a.action == COPY_MISSING and a.detail.get("key") == key]
    return QueueItem(
        job=job,
        supplier=draft.supplier_name if draft else job.supplier_id or "-",
        requester=called(known, job.requester_id),
        send=sends[-1] if sends else None,
        what=what or (sends[-1].last_error if sends else None) or "no reason recorded",
        missing=missing[-1] if missing else None,
    )


def item_html(item: QueueItem, tz: tzinfo, mail_domain: str, *, tr: Translator = ENGLISH) -> str:
    """One queue message: the PO, what happened (core's and the mail relay's words), when,
    and what to check."""
    job, send = item.job, item.send
    what = item.what if len(item.what) <= _WHAT_CUT else item.what[: _WHAT_CUT - 1] + "…"
    happened = tr("What happened: {what}", what=escaped(what))
    if send is not None:
        happened += " " + tr.plural("({count} attempt)", "({count} attempts)", send.attempts)
    summary = (
        f"{escaped(item.supplier)} · {escaped(format_pkr(job.total_paisa or 0))} · "
        f"draft v{job.draft_version or '-'}"
    )
    lines = [
        f"⚠️ {tr.ltr(f'<b>{escaped(job.po_number)}</b> · {escaped(job.state.value)}')}",
        tr.ltr(summary),
        happened,
        tr(
            "Since {at} · requested by {name}",
            at=escaped(local_time(job.updated_at, tz)),
            name=escaped(item.requester),
        ),
    ]
    if send is not None:
        lines += [
            tr.ltr(f"Key: <code>{escaped(send.key)}</code>"),
            tr.ltr(f"Message-ID: <code>{escaped(message_id(send.key, mail_domain))}</code>"),
        ]
    if item.missing is not None:
        folder = escaped(str(item.missing.detail.get("folder", "?")))
        at = escaped(local_time(item.missing.at, tz))
        lines.append(
            tr(
                "📭 No copy in the mail relay's {folder} folder as of {at}: it most likely "
                "did not leave.",
                folder=folder,
                at=at,
            )
        )
    advice = _ADVICE.get(job.state)
    return "\n".join([*lines, escaped(tr(advice)) if advice else ""]).rstrip()


def item_markup(
    secret: bytes, job: Job, *, tr: Translator = ENGLISH
) -> InlineKeyboardMarkup | None:
    """The signed buttons of the choices that apply to `job`, on one row."""
    offered = review.choices(job)
    if not offered or job.draft_version is None or job.draft_hash is None:
        return None
    row = [(tr(BUTTONS[choice][0]), BUTTONS[choice][1]) for choice in offered]
    return signed_markup(secret, job, [row])


async def queue_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/queue: the POs that need a person, oldest first, each with its buttons; admins only."""
    deps, user, message = deps_of(context), update.effective_user, update.effective_message
    assert user is not None and message is not None
    settings = deps.settings
    async with deps.store.reading() as tx:
        admin = is_admin(user.id, await tx.roles(user.id), settings.manzoori_admin_ids)
        items, more = await queue_items(tx, QUEUE_LIMIT) if admin else ([], 0)
        tr = translator(language_of((await tx.languages([user.id])).get(user.id)))
    if not admin or not items:
        await message.reply_text(tr(EMPTY if admin else NOT_AN_ADMIN))
        return
    total = len(items) + more
    await message.reply_text(
        tr.plural(
            "Manual-review queue: {count} purchase order, oldest first.",
            "Manual-review queue: {count} purchase orders, oldest first.",
            total,
        )
    )
    for item in items:
        shown = await message.reply_text(
            item_html(item, settings.tz, settings.mail_domain, tr=tr),
            parse_mode=ParseMode.HTML,
            reply_markup=item_markup(settings.secret, item.job, tr=tr),
        )
        # edited once the PO leaves the queue, whoever or whatever settles it
        await review.shown(deps.store, item.job, shown.chat_id, shown.message_id, utcnow())
    if more:
        await message.reply_text(
            tr("… and {count} more. Handle these, then send /queue again.", count=more)
        )


async def on_queue_tap(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A queue button: Mark sent, Send again, Cancel or Settled; the data is checked before
    anything."""
    tap = await checked_tap(update, context)
    if tap is None:
        return
    query, user, deps, button, job = tap.query, tap.user, tap.deps, tap.button, tap.job
    choice = _CHOICE_OF.get(button.action)
    if choice is None:
        await answer_tap(query, tap.tr(NOT_VALID))
        return
    answer, headline = await _resolve(deps, user, job, (choice, button.draft_version), tap.tr)
    await answer_tap(query, answer)  # at once: the phone shows a spinner until then
    if headline is None:  # done: the message says how the PO left the queue
        left = await review.left_since(deps.store, job.id, job.version)
        if left is not None:
            await _edit(query, left_html(left, deps.settings.tz, tr=tap.tr))
        deliver_now(context, deps, job.id)  # the requester's news, any new cards, the queue
    elif headline:
        await _edit(query, await _outcome_html(deps, job.id, headline, tap.tr))


async def _resolve(
    deps: Deps, user: User, job: Job, chosen: tuple[Choice, int], tr: Translator
) -> tuple[str, str | None]:
    """The answer for the tapper, and the message's new headline for a choice that was not
    taken ("": leave the message alone; None: the choice was taken, see left_html)."""
    settings, now, po = deps.settings, utcnow(), job.po_number
    try:
        choice = review.AdminChoice(po, chosen[1], chosen[0], user.id)
        admins = settings.manzoori_admin_ids
        done = await review.resolve(deps.store, choice, admins, now, settings.rules())
    except NotAnAdmin:
        return tr(ONLY_ADMINS), ""
    except AlreadyResolved as moved:
        if moved.state in NEEDS_REVIEW:  # back in the queue, as another draft version
            where = f"v{moved.draft_version}, {moved.state}"
            return tr(
                "Already handled: {po} is now {where}; send /queue again.", po=po, where=where
            ), (tr("ℹ️ <b>Already handled</b>: now {where}", where=escaped(where)))
        return tr("Already handled: {po} is {state}.", po=po, state=str(moved.state)), (
            tr("ℹ️ <b>Already handled</b>: now {where}", where=escaped(moved.state))
        )
    except IllegalTransition as refused:  # the state changed to one without this choice
        return tr("That no longer applies: {po} is {state}.", po=po, state=str(refused.state)), (
            tr("ℹ️ Now {state}: send /queue again", state=escaped(refused.state))
        )
    return told(done.choice, done.was, done.job.draft_version, tr)[0], None


async def _outcome_html(deps: Deps, job_id: str, headline: str, tr: Translator) -> str:
    """The queue message once it can no longer be tapped: what happened, then the PO."""
    async with deps.store.reading() as tx:
        job = await tx.job(job_id)
        draft = await tx.draft(job.id, job.draft_version) if job.draft_version else None
    return headed(headline, job, draft.supplier_name if draft else job.supplier_id or "-", tr)


async def _edit(query: CallbackQuery, text: str) -> None:
    """Show the outcome in place of the buttons; an edit that changes nothing is fine."""
    try:
        await query.edit_message_text(text, parse_mode=ParseMode.HTML)
    except TelegramError as error:
        why = classify(error)
        if why.failure is not Failure.NOT_MODIFIED:
            log.warning("queue message not edited: %s", why.detail)
