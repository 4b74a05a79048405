"""A request typed in a message (issue 28): a requester's lines such as "CBL-USBC-1M 40" are
read (core.purchasing.typed), priced as a sheet is (submissions.preview_sheet), and shown as a
summary with Submit and Cancel; only Submit submits, through the same intake as a sheet.

Text never decides and never submits by itself. Only a requester's message that is no reply,
and that has at least one line reading as an order line, is taken as a request; everything
else is answered as before (bot.telegram.pending.on_text: an approver's comment, the help).
A message with any line that cannot be read, or any problem the intake finds, keeps nothing:
the answer names each problem by its line in the message.

The summary's request is kept (sealed) with the id made with it, so Submit after a restart
works, and two Submits (a double tap, a redelivery, two at once) make one submission: the
intake's digest over that id returns the earlier POs. The buttons are signed as a card's are,
and bound to the requester by the kept row (core.purchasing.summaries.standing)."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from functools import partial

from telegram import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Message, Update
from telegram.error import TelegramError
from telegram.ext import ContextTypes

from bot.clock import numbering, utcnow
from bot.telegram.context import Deps, answer_tap, chunks, deps_of, held_roles, reply
from bot.telegram.decisions import NOT_VALID, signed_button
from bot.telegram.errors import classify
from bot.telegram.language import speaking
from bot.telegram.pending import on_text as today
from bot.words import texts, typed_texts
from bot.words.i18n import Translator, language_of, translator
from bot.words.texts import local_time
from core.approval.policies import Role
from core.approval.signing import Button, ButtonAction, sign_button
from core.drafting.drafts import HASH_PREFIX
from core.errors import NotARequester
from core.messaging.delivery import Failure
from core.problems import Problem
from core.purchasing import submissions
from core.purchasing.summaries import Standing, SummaryState, TypedRequest, standing
from core.purchasing.typed import Known, Typed, at_message_lines, read_message

log = logging.getLogger(__name__)

# The summary's buttons' callback data starts with one of these (core.approval.signing).
PATTERN = r"^[yn]\."


async def on_text(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Free text: a requester's order lines are a request; anything else is answered as
    before (bot.telegram.pending.on_text)."""
    deps, user, message = deps_of(context), update.effective_user, update.effective_message
    assert user is not None and message is not None
    if message.reply_to_message is None and message.text:
        requester, known = await _reading(deps, user.id)
        if requester:
            typed = await deps.offload(partial(read_message, message.text, known))
            if typed.looks_like_request:
                await _summarise(update, deps, typed, known)
                return
    await today(update, context)


async def _reading(deps: Deps, user_id: int) -> tuple[bool, Known]:
    """Whether the user is a requester, and the SKUs and branches a message is read by."""
    async with deps.store.reading() as tx:
        roles = held_roles(deps, user_id, await tx.roles(user_id))
        if Role.REQUESTER not in roles:
            return False, Known()
        terms, company = await tx.current_terms(), await tx.current_company()
    skus = sorted({offer.sku for offer in terms.offers}) if terms else []
    branches = {b.branch_id: b.name for b in company.branches} if company else {}
    return True, Known(skus, branches)


async def _summarise(update: Update, deps: Deps, typed: Typed, known: Known) -> None:
    """The summary with its buttons, or every problem by line (and nothing kept)."""
    user, message = update.effective_user, update.effective_message
    assert user is not None and message is not None
    tr, now = await speaking(deps, user.id), utcnow()
    if typed.problems:
        await reply(update, typed_texts.refused(typed.problems, tr=tr))
        return
    request = TypedRequest(str(uuid.uuid4()), user.id, typed.lines, typed.numbers, now)
    rules = deps.settings.rules()
    preview = await submissions.preview_sheet(
        deps.store, request.sheet(), rules, now=now, offload=deps.offload
    )
    if preview.problems:
        problems = at_message_lines(typed, preview.problems, known.skus)
        await reply(update, typed_texts.refused(problems, tr=tr))
        return
    async with deps.store.begin() as tx:
        await tx.insert_typed_request(request)
    drafts = [draft for _, draft in preview.orders]
    hours = max(1, deps.settings.manzoori_typed_request_seconds // 3600)
    await message.reply_text(
        typed_texts.summary(request, drafts, hours, tr=tr), reply_markup=_markup(deps, request, tr)
    )


def _markup(deps: Deps, request: TypedRequest, tr: Translator) -> InlineKeyboardMarkup:
    """Submit and Cancel, signed for this request and its lines."""
    prefix = request.sheet().sha256[:HASH_PREFIX]

    def button(text: str, action: ButtonAction) -> InlineKeyboardButton:
        signed = sign_button(deps.settings.secret, Button(action, request.request_id, 1, prefix))
        return InlineKeyboardButton(text, callback_data=signed)

    return InlineKeyboardMarkup(
        [
            [
                button(tr(typed_texts.SUBMIT_TEXT), ButtonAction.SUBMIT_REQUEST),
                button(tr(typed_texts.CANCEL_TEXT), ButtonAction.CANCEL_REQUEST),
            ]
        ]
    )


async def on_summary_tap(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Submit or Cancel on a typed request's summary; every tap answered once."""
    query, user, deps = update.callback_query, update.effective_user, deps_of(context)
    assert query is not None and user is not None
    button = await signed_button(query, deps)
    if button is None:
        return
    now = utcnow()
    async with deps.store.reading() as tx:
        request = await tx.typed_request(button.job_id)
        tr = translator(language_of((await tx.languages([user.id])).get(user.id)))
    signed_for = request.sheet().sha256 if request and request.lines else button.hash_prefix
    if not signed_for.startswith(button.hash_prefix):  # a cancelled request keeps no lines
        await answer_tap(query, tr(NOT_VALID))
        return
    found = standing(request, user.id, now, _valid_for(deps))
    if button.action is ButtonAction.SUBMIT_REQUEST and request is not None:
        await _submit(query, deps, request, found, tr)
    elif button.action is ButtonAction.CANCEL_REQUEST and request is not None:
        await _cancel(query, deps, request, found, tr)
    else:
        await answer_tap(query, tr(_REFUSED.get(found, NOT_VALID)))


# What a tap that cannot act is answered, by what it found.
_REFUSED = {
    Standing.GONE: typed_texts.GONE,
    Standing.NOT_YOURS: typed_texts.NOT_YOURS,
    Standing.CANCELLED: typed_texts.WAS_CANCELLED,
    Standing.EXPIRED: typed_texts.EXPIRED,
}


async def _submit(
    query: CallbackQuery, deps: Deps, request: TypedRequest, found: Standing, tr: Translator
) -> None:
    """Submit: the request through the sheet's intake, once, however many taps."""
    now = utcnow()
    moved = False
    if found is Standing.OPEN:
        async with deps.store.begin() as tx:
            moved = await tx.settle_typed_request(
                request.request_id, SummaryState.OPEN, SummaryState.SUBMITTED, now
            )
        if not moved:  # another tap settled it first: act on what it made of it
            async with deps.store.reading() as tx:
                again = await tx.typed_request(request.request_id)
            found = standing(again, request.requester_id, now, _valid_for(deps))
    if found is not Standing.SUBMITTED and not moved:
        await answer_tap(query, tr(_REFUSED.get(found, NOT_VALID)))
        return
    settings = deps.settings
    try:
        result = await submissions.submit_sheet(
            deps.store,
            request.requester_id,
            request.sheet(),
            now,
            settings.rules(),
            numbering(now, settings.tz),
            offload=deps.offload,
        )
    except NotARequester:
        await answer_tap(query, tr(typed_texts.NOT_A_REQUESTER))
        return
    if result.problems:
        await _not_submitted(query, deps, request, result.problems, tr)
        return
    if result.repeated:
        await answer_tap(query, tr(typed_texts.ALREADY_SUBMITTED))
    else:
        await answer_tap(query, tr(typed_texts.SUBMITTED))
        await _say(query, texts.submission(result, tr(typed_texts.TYPED_NAME), tr=tr))
    await _edit(query, tr(typed_texts.SUBMITTED_HEADLINE, at=_at(deps, now)))


async def _not_submitted(
    query: CallbackQuery,
    deps: Deps,
    request: TypedRequest,
    problems: tuple[Problem, ...],
    tr: Translator,
) -> None:
    """The intake refused it now (the terms changed, a budget filled up): open again, and
    the problems said by line."""
    async with deps.store.begin() as tx:
        await tx.settle_typed_request(
            request.request_id, SummaryState.SUBMITTED, SummaryState.OPEN, utcnow()
        )
    requester, known = await _reading(deps, request.requester_id)
    typed = Typed(request.lines, request.numbers, looks_like_request=requester)
    placed = at_message_lines(typed, problems, known.skus)
    await answer_tap(query, tr(typed_texts.NOT_SUBMITTED))
    await _say(query, typed_texts.refused(placed, tr=tr))


async def _cancel(
    query: CallbackQuery, deps: Deps, request: TypedRequest, found: Standing, tr: Translator
) -> None:
    """Cancel: the request is settled as cancelled; nothing comes of it."""
    now = utcnow()
    if found in (Standing.OPEN, Standing.EXPIRED):
        async with deps.store.begin() as tx:
            moved = await tx.settle_typed_request(
                request.request_id, SummaryState.OPEN, SummaryState.CANCELLED, now
            )
        if moved:
            await answer_tap(query, tr(typed_texts.CANCELLED))
            await _edit(query, tr(typed_texts.CANCELLED_HEADLINE, at=_at(deps, now)))
            return
        async with deps.store.reading() as tx:
            again = await tx.typed_request(request.request_id)
        found = standing(again, request.requester_id, now, _valid_for(deps))
    answers = {
        Standing.SUBMITTED: typed_texts.CANCEL_TOO_LATE,
        Standing.CANCELLED: typed_texts.ALREADY_CANCELLED,
    }
    await answer_tap(query, tr(answers.get(found) or _REFUSED.get(found, NOT_VALID)))


def _valid_for(deps: Deps) -> timedelta:
    """How long a summary's Submit works (MANZOORI_TYPED_REQUEST_SECONDS)."""
    return timedelta(seconds=deps.settings.manzoori_typed_request_seconds)


def _at(deps: Deps, now: datetime) -> str:
    return local_time(now, deps.settings.tz, texts.TIME_OF_DAY)


async def _say(query: CallbackQuery, text: str) -> None:
    """A message in the chat of the summary tapped."""
    message = query.message
    if isinstance(message, Message):
        for piece in chunks(text):
            await message.reply_text(piece)


async def _edit(query: CallbackQuery, headline: str) -> None:
    """The summary once it can no longer be tapped: what happened above what it showed, and
    no buttons; an edit that changes nothing is fine."""
    message = query.message
    shown = message.text if isinstance(message, Message) and message.text else ""
    if shown.startswith(headline):
        return
    try:
        await query.edit_message_text(f"{headline}\n{shown}".rstrip()[:4096])
    except TelegramError as error:
        why = classify(error)
        if why.failure is not Failure.NOT_MODIFIED:
            log.warning("typed request summary not edited: %s", why.detail)
