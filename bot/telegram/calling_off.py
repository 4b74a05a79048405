"""/cancel PO-… REASON: an admin calls a purchase order off, after a confirm card.

The command only reads (core.outbox.calling_off.may_call_off): a PO that cannot be cancelled is
refused at once with why; otherwise the bot answers with a card, "Cancel PO-… (supplier,
total)?", saying whether the supplier will be e-mailed a cancellation (the PO was sent) or
nothing goes to them, with the reason quoted, and the signed buttons Confirm and Keep it. The
reason travels in the card itself, the one quotation (blockquote) of the bot's own message that
Telegram hands back with the tap, so that a tap acts on exactly what its card showed.

Confirm is checked like every tap (the signed data first, then the admin and the PO inside the
transaction that acts, core.outbox.calling_off.call_off), answered at once, and the card is
edited to what happened; the news the cancellation owes is delivered right after. A second tap
of Confirm finds the same cancellation made and changes nothing; Keep it changes nothing at all.
"""

from __future__ import annotations

import logging
from html import escape

from telegram import CallbackQuery, Message, MessageEntity, Update
from telegram.constants import ParseMode
from telegram.error import TelegramError
from telegram.ext import ContextTypes

from bot.clock import utcnow
from bot.telegram.cards import escaped, signed_markup
from bot.telegram.context import answer_tap, deps_of, reply
from bot.telegram.decisions import NOT_VALID, Tap, checked_tap, deliver_now
from bot.telegram.errors import classify
from bot.telegram.language import speaking
from bot.words.arguments import parse_po_number
from bot.words.cancelling import cancel_refusal
from bot.words.i18n import N_, Translator
from bot.words.texts import local_time
from core.approval.signing import ButtonAction
from core.drafting.money import format_pkr
from core.errors import (
    CancelRefused,
    DraftPurged,
    IllegalTransition,
    NotAnAdmin,
    UnknownJob,
)
from core.jobs.jobs import Job, Stamp
from core.messaging.delivery import Failure
from core.outbox.calling_off import REASON_LIMIT, CalledOff, CallOff, call_off, may_call_off
from core.texts import flatten

log = logging.getLogger(__name__)

USAGE = N_("Usage: {command}")
COMMAND = "/cancel PO-2026-0001 REASON"
ONLY_ADMINS = N_("Only admins can cancel a purchase order.")
NO_SUCH_PO = N_("No purchase order {po}.")
CONFIRM_TEXT = N_("Confirm")
KEEP_TEXT = N_("Keep it")
# The card's question, by whether the supplier is e-mailed (the PO was sent).
ASK = {
    True: N_("Cancel {po} ({supplier}, {total})? The supplier will be e-mailed a cancellation."),
    False: N_("Cancel {po} ({supplier}, {total})? It was not sent: nothing goes to the supplier."),
}
REASON_LABEL = N_("Reason:")
# A Confirm tap whose card Telegram no longer hands back (too old), so its reason is not known.
CARD_TOO_OLD = N_("This card is too old; send /cancel again.")
NOT_CANCELLABLE = N_("{po} cannot be cancelled: it is {state}.")
PURGED = N_("{po} cannot be cancelled: its details were removed by the retention purge.")


async def cancel_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/cancel PO-… [REASON]: the confirm card, or why the PO cannot be cancelled."""
    deps, user, message = deps_of(context), update.effective_user, update.effective_message
    assert user is not None and message is not None
    tr = await speaking(deps, user.id)
    words = (message.text or "").split(maxsplit=2)
    po = parse_po_number(words[1]) if len(words) > 1 else None
    if po is None:
        await reply(update, tr(USAGE, command=COMMAND))
        return
    reason = flatten(words[2] if len(words) > 2 else "")[:REASON_LIMIT]
    request = CallOff(po, reason, user.id)
    try:
        async with deps.store.reading() as tx:
            found = await may_call_off(tx, request, deps.settings.manzoori_admin_ids)
            job = found.job
            assert job.draft_version is not None
            supplier = (await tx.draft(job.id, job.draft_version)).supplier_name
    except _REFUSALS as refused:
        await reply(update, _refused(refused, po, tr))
        return
    if found.repeat:
        await reply(update, _repeat(found.job, tr))
        return
    await message.reply_text(
        card_html(found, supplier, reason, tr),
        parse_mode=ParseMode.HTML,
        reply_markup=signed_markup(deps.settings.secret, job, [_buttons(tr)]),
    )


def _buttons(tr: Translator) -> list[tuple[str, ButtonAction]]:
    """The card's one row: Confirm, Keep it."""
    return [(tr(CONFIRM_TEXT), ButtonAction.CONFIRM_CANCEL), (tr(KEEP_TEXT), ButtonAction.KEEP)]


def card_html(found: CalledOff, supplier: str, reason: str, tr: Translator) -> str:
    """The confirm card: the question, then the reason quoted (the one blockquote: a Confirm
    tap reads it back)."""
    job = found.job
    ask = tr(
        ASK[found.after_sending],
        po=f"<b>{escaped(job.po_number)}</b>",
        supplier=escaped(supplier),
        total=escaped(format_pkr(job.total_paisa or 0)),
    )
    if not reason:
        return ask
    label = escape(tr(REASON_LABEL), quote=False)
    return f"{ask}\n{label}\n<blockquote>{escaped(reason)}</blockquote>"


# What a cancellation (or its preview) may be refused with; anything else is on_error's.
_REFUSALS = (NotAnAdmin, UnknownJob, CancelRefused, IllegalTransition, DraftPurged)


def _refused(refused: Exception, po: str, tr: Translator) -> str:
    """What a refused cancellation (or its preview) is called."""
    match refused:
        case NotAnAdmin():
            return tr(ONLY_ADMINS)
        case UnknownJob():
            return tr(NO_SUCH_PO, po=po)
        case CancelRefused():
            return cancel_refusal(refused, tr=tr)
        case IllegalTransition():
            return tr(NOT_CANCELLABLE, po=po, state=str(refused.state))
    return tr(PURGED, po=po)


def _repeat(job: Job, tr: Translator) -> str:
    """The answer to the same cancellation asked for again: nothing changes."""
    return tr("Already done: {po} is {state}; nothing changed.", po=job.po_number, state=job.state)


async def on_call_off_tap(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Confirm or Keep it on a confirm card; the data is checked before anything."""
    tap = await checked_tap(update, context)
    if tap is None:
        return
    if tap.button.action is ButtonAction.KEEP:
        await answer_tap(tap.query, tap.tr("Kept: nothing was changed."))
        await _edit(tap, tap.tr("↩️ <b>Kept</b> by {name} at {at}", **_by(tap)))
        return
    if tap.button.action is not ButtonAction.CONFIRM_CANCEL:
        await answer_tap(tap.query, tap.tr(NOT_VALID))
        return
    reason = _reason_of(tap.query.message)
    if reason is None:
        await answer_tap(tap.query, tap.tr(CARD_TOO_OLD))
        return
    deps, po = tap.deps, tap.job.po_number
    request = CallOff(po, reason, tap.user.id, tap.button.draft_version)
    try:
        stamp, admins = Stamp(f"user:{tap.user.id}", utcnow()), deps.settings.manzoori_admin_ids
        done = await call_off(deps.store, request, admins, stamp)
    except _REFUSALS as refused:
        await answer_tap(tap.query, _refused(refused, po, tap.tr))
        return
    if done.repeat:
        await answer_tap(tap.query, _repeat(done.job, tap.tr))
        return
    if done.after_sending:
        answer = tap.tr("Cancelled. The supplier is being e-mailed the cancellation.")
        headline = tap.tr(
            "🚫 <b>Cancelled</b> by {name} at {at}: the supplier is being e-mailed", **_by(tap)
        )
    else:
        answer = tap.tr("Cancelled. Nothing was sent to the supplier.")
        headline = tap.tr("🚫 <b>Cancelled</b> by {name} at {at}: nothing was sent", **_by(tap))
    await answer_tap(tap.query, answer)  # at once: the phone shows a spinner until then
    await _edit(tap, headline)
    deliver_now(context, deps, done.job.id)  # the requester's and approvers' news


def _reason_of(message: object) -> str | None:
    """The reason a confirm card quotes ("" if it quotes none); None when Telegram did not hand
    the card back with the tap (too old to be read)."""
    if not isinstance(message, Message):
        return None
    quoted = message.parse_entities([MessageEntity.BLOCKQUOTE])
    return flatten(next(iter(quoted.values()), ""))[:REASON_LIMIT]


def _by(tap: Tap) -> dict[str, str]:
    """Who tapped, and when, for a card's headline."""
    at = local_time(utcnow(), tap.deps.settings.tz)
    return {"name": escaped(tap.user.first_name), "at": escaped(at)}


async def _edit(tap: Tap, headline: str) -> None:
    """The card once it can no longer be tapped: what happened above what it asked; an edit that
    changes nothing is fine."""
    query: CallbackQuery = tap.query
    message = query.message
    asked = message.text_html if isinstance(message, Message) and message.text else ""
    try:
        await query.edit_message_text(f"{headline}\n{asked}".rstrip(), parse_mode=ParseMode.HTML)
    except TelegramError as error:
        why = classify(error)
        if why.failure is not Failure.NOT_MODIFIED:
            log.warning("cancel card not edited: %s", why.detail)
